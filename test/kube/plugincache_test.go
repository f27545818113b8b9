package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/ptr"

	"infra-change-platform/test/internal/plan"
)

// workspacePod is the pod PKO v2.9.0 runs for a Stack under the restricted profile, with the Stack's pod
// template merged in: the pod and container security settings of
// operator/internal/controller/auto/workspace_controller.go (newStatefulSet, then the SecurityProfileRestricted
// branch), PKO's own `share` volume, and the template's annotations, security context, tolerations, volumes
// and mounts (mergePodTemplateSpec merges the template's metadata, and volumes and mounts by name and path).
func workspacePod(t *testing.T, stack *unstructured.Unstructured, namespace string) *corev1.Pod {
	t.Helper()
	raw, found, _ := unstructured.NestedMap(stack.Object, "spec", "workspaceTemplate", "spec", "podTemplate")
	if !found {
		t.Fatalf("Stack %s has no workspace pod template", stack.GetName())
	}
	var tpl corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	image, _, _ := unstructured.NestedString(stack.Object, "spec", "workspaceTemplate", "spec", "image")
	restricted := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: stack.GetName() + "-workspace-0", Namespace: namespace, Annotations: tpl.Annotations}}
	pod.Spec = tpl.Spec
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	sc := pod.Spec.SecurityContext
	sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	sc.RunAsNonRoot, sc.RunAsUser, sc.RunAsGroup = ptr.To(true), ptr.To(int64(1000)), ptr.To(int64(1000))
	serviceAccount, _, _ := unstructured.NestedString(stack.Object, "spec", "serviceAccountName")
	pod.Spec.ServiceAccountName = serviceAccount
	pod.Spec.InitContainers = []corev1.Container{{Name: "bootstrap", Image: "pulumi/pulumi-kubernetes-operator:v2.9.0", SecurityContext: restricted(),
		VolumeMounts: []corev1.VolumeMount{{Name: "share", MountPath: "/share"}}}}
	pulumi := corev1.Container{Name: "pulumi", Image: image, SecurityContext: restricted(), VolumeMounts: []corev1.VolumeMount{{Name: "share", MountPath: "/share"}}}
	for _, c := range tpl.Spec.Containers {
		if c.Name == "pulumi" {
			pulumi.VolumeMounts = append(pulumi.VolumeMounts, c.VolumeMounts...)
		}
	}
	pod.Spec.Containers = []corev1.Container{pulumi}
	pod.Spec.Volumes = append([]corev1.Volume{{Name: "share", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, tpl.Spec.Volumes...)
	return pod
}

// The plugin cache, as the API server takes it: the seed Job's pod is admitted at Pod Security `restricted`;
// each Stack's workspace pod with its plugins volume (an ephemeral volume restored from the cache's
// snapshot) is admitted at `restricted` too, and so is the claim Kubernetes' ephemeral volume controller
// makes from it (named by k8s.io/component-helpers storage/ephemeral VolumeClaimName, its spec the
// template's), naming the VolumeSnapshot the kargo project takes of the seed. A claim of that name left by
// the previous run is not the new pod's (VolumeIsForPod), so the pod waits for it to go. The same pod with a hostPath in its place is refused: the check is live.
func TestPluginCacheRestricted(t *testing.T) {
	in := install(t)
	ctx := context.Background()
	kargo := plan.Load(t, "kargo")
	snapshots := kargo.OfKind("VolumeSnapshot")
	if len(snapshots) == 0 {
		t.Skip("the pipeline has no plugin cache (stacks.pluginCacheGiB is 0)")
	}
	if len(snapshots) != 1 {
		t.Fatalf("%d VolumeSnapshots planned; the pipeline keeps one plugin cache", len(snapshots))
	}
	snapshot := snapshots[0]
	source, _, _ := unstructured.NestedString(snapshot.Object, "spec", "source", "persistentVolumeClaimName")
	var seedClaim, seedJob *unstructured.Unstructured
	for _, c := range kargo.OfKind("PersistentVolumeClaim") {
		if c.GetName() == source {
			seedClaim = c
		}
	}
	for _, j := range kargo.OfKind("Job") {
		volumes, _, _ := unstructured.NestedSlice(j.Object, "spec", "template", "spec", "volumes")
		for _, v := range volumes {
			if claim, _, _ := unstructured.NestedString(v.(map[string]any), "persistentVolumeClaim", "claimName"); claim == source {
				seedJob = j
			}
		}
	}
	if seedClaim == nil || seedJob == nil {
		t.Fatalf("the snapshot's source claim %q and the Job that fills it are not both planned", source)
	}

	const ns = "plugin-cache-restricted"
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(seedJob.Object, &job); err != nil {
		t.Fatal(err)
	}
	restrictedNamespace(t, in, ns, job.Spec.Template.Spec.ServiceAccountName)
	job.Namespace, job.ResourceVersion = ns, ""
	if _, err := in.server.Clientset.BatchV1().Jobs(ns).Create(ctx, &job, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the seed Job: %v", err)
	}
	seedPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seed", Namespace: ns}, Spec: job.Spec.Template.Spec}
	if _, err := in.server.Clientset.CoreV1().Pods(ns).Create(ctx, seedPod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the seed Job's pod: %v", err)
	}

	files, _ := filepath.Glob(filepath.Join(plan.RepoRoot(), "stacks", "*.yaml"))
	checked := 0
	for _, f := range files {
		for _, stack := range readYAML(t, f) {
			if stack.GetKind() != "Stack" {
				continue
			}
			account, _, _ := unstructured.NestedString(stack.Object, "spec", "serviceAccountName")
			if _, err := in.server.Clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
				t.Fatal(err)
			}
			pod := workspacePod(t, stack, ns)
			var restored *corev1.Volume
			for i, v := range pod.Spec.Volumes {
				if v.Ephemeral != nil {
					restored = &pod.Spec.Volumes[i]
				}
			}
			if restored == nil {
				t.Errorf("%s: no ephemeral plugins volume in its workspace pod", filepath.Base(f))
				continue
			}
			from := restored.Ephemeral.VolumeClaimTemplate.Spec.DataSource
			if from == nil || from.Kind != "VolumeSnapshot" || from.Name != snapshot.GetName() || ptr.Deref(from.APIGroup, "") != "snapshot.storage.k8s.io" {
				t.Errorf("%s: its plugins volume is not restored from the cache's snapshot %s: %+v", filepath.Base(f), snapshot.GetName(), from)
			}
			if _, err := in.server.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: the workspace pod: %v", filepath.Base(f), err)
			}
			// Named and checked as Kubernetes' own ephemeral volume code names and checks it.
			claim := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: ephemeral.VolumeClaimName(pod, restored), Namespace: ns},
				Spec:       restored.Ephemeral.VolumeClaimTemplate.Spec,
			}
			if _, err := in.server.Clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: the claim restored from the snapshot: %v", filepath.Base(f), err)
			}
			previous := claim.DeepCopy()
			previous.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: "the-previous-run"}}
			pod.UID = "this-run"
			if err := ephemeral.VolumeIsForPod(pod, previous); err == nil || !strings.Contains(err.Error(), "not created for pod") {
				t.Errorf("%s: the previous run's claim of the same name would serve this run: %v", filepath.Base(f), err)
			}
			// The same pod, its plugins on the node's disk instead: Pod Security refuses it.
			host := pod.DeepCopy()
			for i := range host.Spec.Volumes {
				if host.Spec.Volumes[i].Name == restored.Name {
					host.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: os.TempDir()}}
				}
			}
			if _, err := in.server.Clientset.CoreV1().Pods(ns).Create(ctx, host, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), "restricted") {
				t.Errorf("%s: a hostPath plugins volume was not refused by Pod Security: %v", filepath.Base(f), err)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no Stack of stacks/ was checked")
	}
}
