package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"infra-change-platform/test/internal/plan"
)

var analysisRuns = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "analysisruns"}

// measuredRun is an AnalysisRun as Argo Rollouts leaves it while its Job runs: the template's metric, one
// Running measurement naming its Job (argo-rollouts v1.9.0 job.go: `<run uid>.<metric>.<n>`), that Job
// (annotated with the run and metric, as newMetricJob does) and the Job's pod under the template's
// ServiceAccount, with a token the API server bound to that pod.
type measuredRun struct {
	run     *unstructured.Unstructured
	job     string
	as      dynamic.Interface
	token   string
	measure string // the status path of the measurement's message, for the errors
}

func newMeasuredRun(t *testing.T, in *installation, tpl v1alpha1.AnalysisTemplate, name string, jobs int) *measuredRun {
	t.Helper()
	ctx := context.Background()
	ns, metric := tpl.Namespace, tpl.Spec.Metrics[0]
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.AnalysisRunSpec{Metrics: tpl.Spec.Metrics, Args: tpl.Spec.Args})
	if err != nil {
		t.Fatal(err)
	}
	run := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"kargo.akuity.io/stage": "test"}},
		"spec":     spec,
	}}
	runs := in.server.Dynamic.Resource(analysisRuns).Namespace(ns)
	created, err := runs.Create(ctx, run, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobName := func(n int) string { return fmt.Sprintf("%s.%s.%d", created.GetUID(), metric.Name, n) }
	var measurements []any
	for n := 1; n <= jobs; n++ {
		measurements = append(measurements, map[string]any{
			"phase": "Running", "startedAt": "2026-11-27T10:00:00Z", "metadata": map[string]any{"job-name": jobName(n)},
		})
	}
	created.Object["status"] = map[string]any{
		"phase": "Running", "startedAt": "2026-11-27T10:00:00Z",
		"metricResults": []any{map[string]any{"name": metric.Name, "phase": "Running", "measurements": measurements}},
	}
	// As the controller does: the whole run (no status subresource).
	if created, err = runs.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: jobName(jobs), Namespace: ns, Annotations: map[string]string{
			"analysisrun.argoproj.io/name": name, "analysisrun.argoproj.io/metric-name": metric.Name,
		}},
		Spec: *metric.Provider.Job.Spec.DeepCopy(),
	}
	if _, err := in.server.Clientset.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Named as the Job controller names a Job's pods: the Job's name, "-", a generated suffix
	// (kubernetes v1.34.3 pkg/controller/controller_utils.go, getPodsPrefix).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x7k2p", Namespace: ns},
		Spec:       *metric.Provider.Job.Spec.Template.Spec.DeepCopy(),
	}
	if pod, err = in.server.Clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := tokenFor(t, in, ns, pod.Spec.ServiceAccountName, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
	return &measuredRun{run: created, job: job.Name, as: as(t, in, token), token: token, measure: fmt.Sprintf("status.metricResults[0].measurements[%d].message", jobs-1)}
}

func tokenFor(t *testing.T, in *installation, ns, account string, bound *authenticationv1.BoundObjectReference) string {
	t.Helper()
	hour := int64(3600)
	tr, err := in.server.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour, BoundObjectRef: bound},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func as(t *testing.T, in *installation, token string) dynamic.Interface {
	t.Helper()
	cfg := rest.CopyConfig(in.server.Config)
	cfg.BearerToken = token
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// writeWithTheJobsScript runs the verification Job's own writer (kargo/verification/run-message.mjs) with
// node, as the pod runs it: its ServiceAccount's files, the API server's address, its Job's name.
func writeWithTheJobsScript(t *testing.T, in *installation, r *measuredRun, message string) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := os.ReadFile(in.server.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string]string{"token": r.token, "ca.crt": string(ca), "namespace": r.run.GetNamespace()} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(in.server.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(plan.RepoRoot(), "kargo", "verification", "run-message.mjs")
	args, _ := json.Marshal(map[string]any{
		"jobName": r.job, "message": message, "dir": dir, "host": u.Hostname(), "port": u.Port(),
		"tries": 3, "intervalMs": 50, "settleMs": 0,
	})
	script := fmt.Sprintf("import { writeRunMessage } from %q; process.stdout.write(await writeRunMessage(%s));", "file://"+module, args)
	out, err := exec.Command("node", "--input-type=module", "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	return string(out)
}

func messageOf(t *testing.T, in *installation, r *measuredRun, index int) string {
	t.Helper()
	got, err := in.server.Dynamic.Resource(analysisRuns).Namespace(r.run.GetNamespace()).Get(context.Background(), r.run.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	results, _, _ := unstructured.NestedSlice(got.Object, "status", "metricResults")
	ms, _, _ := unstructured.NestedSlice(results[0].(map[string]any), "measurements")
	msg, _, _ := unstructured.NestedString(ms[index].(map[string]any), "message")
	return msg
}

// A verification Job's token writes the reason into its own measurement, with the Job's own script, and
// nothing else: not another run, not another Job's measurement, not the run's verdict, spec or metadata, and
// not with a token bound to no pod. The ServiceAccount, its Role and the admission policy are the plan's, as
// applied; the token is the one the API server binds to the Job's pod; RBAC and the policy decide.
func TestVerificationJobWritesOnlyItsOwnMessage(t *testing.T) {
	in := install(t)
	for _, r := range in.rejected {
		if strings.Contains(r, "verification") {
			t.Errorf("refused at install: %s", r)
		}
	}
	ctx := context.Background()
	tpl := firstTemplate(t, in)
	account := tpl.Spec.Metrics[0].Provider.Job.Spec.Template.Spec.ServiceAccountName
	if account == "" || account == "default" {
		t.Fatalf("the verification Job runs as %q: it needs a ServiceAccount of its own", account)
	}
	mine := newMeasuredRun(t, in, tpl, "message-mine", 2)
	other := newMeasuredRun(t, in, tpl, "message-other", 1)
	runs := func(d dynamic.Interface) dynamic.ResourceInterface {
		return d.Resource(analysisRuns).Namespace(mine.run.GetNamespace())
	}
	patch := func(d dynamic.Interface, name string, ops ...map[string]any) error {
		body, _ := json.Marshal(ops)
		_, err := runs(d).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		return err
	}
	set := func(path string, value any) map[string]any {
		return map[string]any{"op": "add", "path": path, "value": value}
	}
	ownMessage := "/status/metricResults/0/measurements/1/message"

	// The policy is in force once a forbidden change is refused by it (before then anything is admitted).
	policyRefuses := func(err error) bool { return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") }
	for deadline := time.Now().Add(enforcedWithin); ; time.Sleep(200 * time.Millisecond) {
		err := patch(mine.as, mine.run.GetName(), set("/status/message", fmt.Sprint(time.Now().UnixNano())))
		if policyRefuses(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the verification policy does not refuse a Job setting its run's message after %s: %v", enforcedWithin, err)
		}
	}

	reason := "the preview of 0123456789ab on org/app/dev stops on privilege: 1 resource(s)\n- aws:iam/role:Role admin (privilege): create\npreview: https://app.pulumi.com/org/app/dev/previews/p-1\n\"quoted\" <b>markup</b>"
	if said := writeWithTheJobsScript(t, in, mine, reason); !strings.HasPrefix(said, "written into message-mine") {
		t.Fatalf("the Job's own script could not write its message: %s", said)
	}
	if got := messageOf(t, in, mine, 1); got != reason {
		t.Errorf("%s is %q, want the reason %q", mine.measure, got, reason)
	}

	// The same script, whose Job names another run that lists a measurement of that Job (as a forged Job
	// and run would): the token cannot write there.
	if _, err := in.server.Clientset.BatchV1().Jobs(mine.run.GetNamespace()).Patch(ctx, mine.job, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"analysisrun.argoproj.io/name":"`+other.run.GetName()+`"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := patch(in.server.Dynamic, other.run.GetName(), map[string]any{"op": "add", "path": "/status/metricResults/0/measurements/-",
		"value": map[string]any{"phase": "Running", "metadata": map[string]any{"job-name": mine.job}}}); err != nil {
		t.Fatal(err)
	}
	if said := writeWithTheJobsScript(t, in, mine, "forged"); !strings.Contains(said, "HTTP 403") || !strings.Contains(said, "only change the AnalysisRun whose Job runs it") {
		t.Errorf("a Job writing into another run: %s", said)
	}
	if got := messageOf(t, in, other, 1); got != "" {
		t.Errorf("the other run's measurement holds %q", got)
	}

	// Another ServiceAccount of the namespace (no controller-manager runs here to make `default`).
	someone := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "not-the-verification", Namespace: mine.run.GetNamespace()}}
	if _, err := in.server.Clientset.CoreV1().ServiceAccounts(someone.Namespace).Create(ctx, someone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		what string
		by   dynamic.Interface
		name string
		ops  []map[string]any
		want string
	}{
		{"the run's verdict", mine.as, mine.run.GetName(), []map[string]any{set("/status/phase", "Successful")}, "only a measurement's message"},
		{"the run's message", mine.as, mine.run.GetName(), []map[string]any{set("/status/message", "all good")}, "only a measurement's message"},
		{"its measurement's phase", mine.as, mine.run.GetName(), []map[string]any{set("/status/metricResults/0/measurements/1/phase", "Successful")}, "only a measurement's message"},
		{"another Job's measurement of its run", mine.as, mine.run.GetName(), []map[string]any{set("/status/metricResults/0/measurements/0/message", "x")}, "its own Job's measurement"},
		{"the run's spec (the Job it runs)", mine.as, mine.run.GetName(), []map[string]any{set("/spec/metrics/0/provider/job/spec/template/spec/serviceAccountName", "default")}, "spec, labels"},
		{"a label", mine.as, mine.run.GetName(), []map[string]any{set("/metadata/labels/x", "y")}, "spec, labels"},
		{"another run's measurement", mine.as, other.run.GetName(), []map[string]any{set("/status/metricResults/0/measurements/0/message", "x")}, "whose Job runs it"},
		{"its own message, with a token bound to no pod", as(t, in, tokenFor(t, in, mine.run.GetNamespace(), account, nil)), mine.run.GetName(), []map[string]any{set(ownMessage, "x")}, "whose Job runs it"},
		{"its own message, as another ServiceAccount", as(t, in, tokenFor(t, in, someone.Namespace, someone.Name, nil)), mine.run.GetName(), []map[string]any{set(ownMessage, "x")}, "forbidden"},
	}
	for _, c := range refused {
		err := patch(c.by, c.name, c.ops...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want refused (%q)", c.what, err, c.want)
		}
	}
	if err := runs(mine.as).Delete(ctx, other.run.GetName(), metav1.DeleteOptions{}); err == nil {
		t.Error("the verification Job deleted a run")
	}
	// Argo Rollouts' controller (here the administrator) is not held by it.
	if err := patch(in.server.Dynamic, mine.run.GetName(), set("/status/message", "controller")); err != nil {
		t.Errorf("the controller's write: %v", err)
	}
}

// The policy compares every field Argo Rollouts v1.9.0 keeps in a run's status (its Go types, by their JSON
// names) but a measurement's message: a field it did not name could be changed by the Job unseen.
func TestVerificationPolicyComparesEveryStatusField(t *testing.T) {
	var statusCheck string
	for _, o := range plan.Load(t, "kargo").OfKind("ValidatingAdmissionPolicy") {
		validations, _, _ := unstructured.NestedSlice(o.Object, "spec", "validations")
		for _, v := range validations {
			if e, _ := v.(map[string]any)["expression"].(string); strings.HasPrefix(e, "[") && strings.Contains(e, "?metricResults") && strings.Contains(e, "] == [") {
				statusCheck = e
			}
		}
	}
	if statusCheck == "" {
		t.Fatal("no admission policy of the plan compares an AnalysisRun's status")
	}
	for _, c := range []struct {
		of     any
		prefix string
		skip   string
	}{
		{v1alpha1.AnalysisRunStatus{}, "object.?status.?", "metricResults"},
		{v1alpha1.MetricResult{}, "r.?", "measurements"},
		{v1alpha1.Measurement{}, "m.?", "message"},
	} {
		typ := reflect.TypeOf(c.of)
		for i := 0; i < typ.NumField(); i++ {
			name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			if name == "" || name == "-" || name == c.skip {
				continue
			}
			if !strings.Contains(statusCheck, c.prefix+name+",") && !strings.Contains(statusCheck, c.prefix+name+"]") {
				t.Errorf("%s.%s (%s) is not compared by the verification policy", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
}
