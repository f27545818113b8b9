package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Each verification Job's pod, as the applied AnalysisTemplates hold it (after the API server pruned and
// defaulted them), is admitted by the API server's own Pod Security admission at its strictest level,
// `restricted`, so whatever level a cluster puts on the Kargo project's namespace admits it; and the
// server accepts it as a Pod (a dry run: nothing runs here).
func TestVerificationPodsAreRestricted(t *testing.T) {
	in := install(t)
	ctx := context.Background()
	const ns = "verification-restricted"
	restrictedNamespace(t, in, ns, firstTemplate(t, in).Spec.Metrics[0].Provider.Job.Spec.Template.Spec.ServiceAccountName)
	templates := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "analysistemplates"}
	checked := 0
	for _, o := range in.objects {
		if o.object.GetKind() != "AnalysisTemplate" {
			continue
		}
		applied, err := in.server.Dynamic.Resource(templates).Namespace(o.object.GetNamespace()).Get(ctx, o.object.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var tpl v1alpha1.AnalysisTemplate
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(applied.Object, &tpl); err != nil {
			t.Fatal(err)
		}
		for _, m := range tpl.Spec.Metrics {
			if m.Provider.Job == nil {
				t.Errorf("%s/%s is not a job metric", tpl.Name, m.Name)
				continue
			}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(tpl.Name + "-" + m.Name), Namespace: ns},
				Spec:       m.Provider.Job.Spec.Template.Spec,
			}
			_, err := in.server.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Errorf("%s/%s: %v", tpl.Name, m.Name, err)
			}
			// The Job Rollouts creates from it is admitted too, its pod failure policy with it (batch/v1
			// validation: the policy's rules, and restartPolicy Never, which it requires).
			if m.Provider.Job.Spec.PodFailurePolicy == nil {
				t.Errorf("%s/%s: the Job has no podFailurePolicy after the API server applied the template", tpl.Name, m.Name)
			}
			job := &batchv1.Job{ObjectMeta: pod.ObjectMeta, Spec: m.Provider.Job.Spec}
			created, err := in.server.Clientset.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Errorf("%s/%s: the Job: %v", tpl.Name, m.Name, err)
			} else if created.Spec.PodFailurePolicy == nil || len(created.Spec.PodFailurePolicy.Rules) != len(m.Provider.Job.Spec.PodFailurePolicy.Rules) {
				t.Errorf("%s/%s: the admitted Job's podFailurePolicy is %v", tpl.Name, m.Name, created.Spec.PodFailurePolicy)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no AnalysisTemplate metric was checked")
	}
	// The server does check the policy: the same Job restarting its pod on failure is refused.
	tpl := firstTemplate(t, in)
	spec := *tpl.Spec.Metrics[0].Provider.Job.Spec.DeepCopy()
	spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "on-failure", Namespace: ns}, Spec: spec}
	if _, err := in.server.Clientset.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), "podFailurePolicy") {
		t.Errorf("a Job with a pod failure policy restarting its pod on failure: %v", err)
	}
	// The namespace does refuse what `restricted` forbids: the same pod running as root is refused.
	podSpec := tpl.Spec.Metrics[0].Provider.Job.Spec.Template.Spec
	root := int64(0)
	podSpec.SecurityContext.RunAsUser = &root
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "as-root", Namespace: ns}, Spec: podSpec}
	if _, err := in.server.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a root pod in the restricted namespace: %v", err)
	}
}

// firstTemplate is the plan's first AnalysisTemplate, as the typed object Rollouts reads.
func firstTemplate(t *testing.T, in *installation) v1alpha1.AnalysisTemplate {
	t.Helper()
	for _, o := range in.objects {
		if o.object.GetKind() != "AnalysisTemplate" {
			continue
		}
		var tpl v1alpha1.AnalysisTemplate
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.object.Object, &tpl); err != nil {
			t.Fatal(err)
		}
		return tpl
	}
	t.Fatal("the plan has no AnalysisTemplate")
	return v1alpha1.AnalysisTemplate{}
}
