package notifications

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	argofake "github.com/argoproj/argo-rollouts/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-rollouts/pkg/client/informers/externalversions"
	analysisutil "github.com/argoproj/argo-rollouts/utils/analysis"
	"github.com/argoproj/argo-rollouts/utils/record"
	notificationapi "github.com/argoproj/notifications-engine/pkg/api"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// rolloutsNamespace is where the argo-rollouts release runs and its controller reads its notification
// configuration (argo-rollouts v1.9.0 utils/defaults: the controller's own namespace).
const rolloutsNamespace = "argo-rollouts"

// hostile is a value that tries to break a message: Slack markup that would ping a channel or forge a link,
// quotes and a newline that would end a JSON string or start a line of its own.
const hostile = "boom\" <!channel> <https://evil.example|click> & \n{\"event\":\"forged\"}"

// destinationPlan is the cluster-setup plan with both destinations configured, its secret values given
// the shapes a real stack would hold (lib/cli/plan/projects.ts, PLAN_SECRET_VALUES).
// mentions is a Slack user group mention for each group that decides a stop (the approvers the kargo plan's
// runs name), as cluster-setup:notifySlackMentions takes them.
func mentions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range plan.Load(t, "kargo").OfKind("Stage") {
		a, _, _ := unstructured.NestedStringMap(s.Object, "spec", "verification", "analysisRunMetadata", "annotations")
		for _, g := range strings.Split(a["notifications.pipeline/approvers"], ", ") {
			if _, ok := out[g]; g != "" && !ok {
				out[g] = fmt.Sprintf("<!subteam^SMENTION%d>", len(out))
			}
		}
	}
	return out
}

func destinationPlan(t *testing.T) *plan.Project {
	t.Helper()
	example, err := os.ReadFile(filepath.Join(plan.RepoRoot(), "cluster-setup", "Pulumi.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stackFile := filepath.Join(dir, "Pulumi.notify.yaml")
	extra := "  cluster-setup:notifySlackChannel: \"#infra-changes\"\n" +
		"  cluster-setup:notifySlackToken:\n    secure: v1:slack\n" +
		"  cluster-setup:notifyWebhookUrl:\n    secure: v1:webhook\n" +
		"  cluster-setup:notifySlackMentions:\n"
	for group, mention := range mentions(t) {
		extra += fmt.Sprintf("    %q: %q\n", group, mention)
	}
	if err := os.WriteFile(stackFile, append(example, []byte(extra)...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plan")
	cmd := exec.Command(plan.Node(), "--import", "tsx", "lib/cli/plan.ts", "--project", "cluster-setup", "--config", stackFile, "--out", out)
	cmd.Dir = plan.RepoRoot()
	cmd.Env = append(os.Environ(), `PLAN_SECRET_VALUES={"cluster-setup:notifySlackToken":"xoxb-plan","cluster-setup:notifyWebhookUrl":"https://hooks.example.com/plan"}`)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("plan of cluster-setup with destinations: %v\n%s", err, stderr.String())
	}
	return loadFrom(t, out)
}

// loadFrom reads the cluster-setup project of a plan written to dir.
func loadFrom(t *testing.T, dir string) *plan.Project {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "cluster-setup", "resources.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Resources []plan.Resource `json:"resources"`
		Outputs   map[string]any  `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return &plan.Project{Name: "cluster-setup", Resources: r.Resources, Outputs: r.Outputs}
}

// rolloutsValues is the argo-rollouts release's chart values in a cluster-setup plan.
func rolloutsValues(t *testing.T, p *plan.Project) map[string]any {
	t.Helper()
	for _, r := range p.ResourcesOfType("kubernetes:helm.sh/v3:Release") {
		if r.Inputs["chart"] == "argo-rollouts" {
			values, _ := r.Inputs["values"].(map[string]any)
			return values
		}
	}
	t.Fatal("the cluster-setup plan has no argo-rollouts release")
	return nil
}

// rendered is the ConfigMap and Secret the argo-rollouts chart renders from its notifications values
// (argo-helm argo-rollouts-2.41.0 templates/controller/notifications-configmap.yaml and
// notifications-secret.yaml): notifiers, templates and triggers as data keys, subscriptions as YAML. The
// Secret's values are the plan's "[secret]"; the test puts in its own.
func rendered(t *testing.T, values map[string]any, secrets map[string]string) (*corev1.ConfigMap, *corev1.Secret) {
	t.Helper()
	n, _ := values["notifications"].(map[string]any)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.NotificationConfigMap, Namespace: rolloutsNamespace}, Data: map[string]string{}}
	for _, key := range []string{"notifiers", "templates", "triggers"} {
		m, _ := n[key].(map[string]any)
		for k, v := range m {
			cm.Data[k] = v.(string)
		}
	}
	if subs, ok := n["subscriptions"]; ok {
		raw, err := yaml.Marshal(subs)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["subscriptions"] = string(raw)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: record.NotificationSecret, Namespace: rolloutsNamespace}, Data: map[string][]byte{}}
	s, _ := n["secret"].(map[string]any)
	items, _ := s["items"].(map[string]any)
	for k, v := range items {
		if v != "[secret]" {
			t.Errorf("secret item %s is in the plan in the clear: it must be a Pulumi secret", k)
		}
		value, ok := secrets[k]
		if !ok {
			t.Fatalf("the test has no value for secret item %s", k)
		}
		secret.Data[k] = []byte(value)
	}
	return cm, secret
}

// sink is an httptest server standing in for Slack's Web API and for the webhook; it keeps what it got.
type sink struct {
	mu      sync.Mutex
	slack   []url.Values
	webhook []map[string]any
	raw     []string
}

func (s *sink) serve(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
			form, err := url.ParseQuery(string(body))
			if err != nil {
				t.Errorf("Slack got a body that is not a form: %v", err)
			}
			s.slack = append(s.slack, form)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true,"channel":"C0123","ts":"1.2"}`))
		case r.URL.Path == "/hook":
			s.raw = append(s.raw, string(body))
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("the webhook got a body that is not JSON: %v\n%s", err, body)
			}
			s.webhook = append(s.webhook, m)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
}

func (s *sink) take() ([]url.Values, []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slack, webhook := s.slack, s.webhook
	s.slack, s.webhook = nil, nil
	return slack, webhook
}

// recorder is Argo Rollouts' event recorder with its notifications API factory, set up as its controller
// sets them up (argo-rollouts v1.9.0 controller/controller.go NewManager), over the rendered ConfigMap and
// Secret.
func recorder(t *testing.T, cm *corev1.ConfigMap, secret *corev1.Secret) record.EventRecorder {
	t.Helper()
	kube := k8sfake.NewSimpleClientset(cm, secret)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	inNamespace := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(rolloutsNamespace))
	secrets, configMaps := inNamespace.Core().V1().Secrets().Informer(), inNamespace.Core().V1().ConfigMaps().Informer()
	argo := argoinformers.NewSharedInformerFactory(argofake.NewSimpleClientset(), 0)
	runs := argo.Argoproj().V1alpha1().AnalysisRuns()
	_ = runs.Informer()
	inNamespace.Start(ctx.Done())
	argo.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), secrets.HasSynced, configMaps.HasSynced, runs.Informer().HasSynced) {
		t.Fatal("informers did not sync")
	}
	factory := notificationapi.NewFactory(record.NewAPIFactorySettings(runs), rolloutsNamespace, secrets, configMaps)
	counter := func(name string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name}, []string{"name", "namespace", "type", "reason"})
	}
	return record.NewEventRecorder(kube, counter("rollout_events_total"), counter("notification_send_error"), counter("notification_send_success"),
		prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "notification_send_performance"}, []string{"namespace", "name"}), factory)
}

// stageRun is the AnalysisRun Kargo builds to verify `stage` with Freight `freight` at `commit`: the
// Stage's templates and arguments (the commit argument given, as Kargo evaluates it from the Freight), its
// analysisRunMetadata, the stage label, and the Freight as owner (akuity/kargo v1.11.2
// pkg/rollouts/analysis_run_builder.go; pkg/controller/stages/regular_stages.go, WithExtraLabels, WithOwner).
func stageRun(t *testing.T, kargo *plan.Project, stage, freight, commit string) *v1alpha1.AnalysisRun {
	t.Helper()
	s := kargo.Object(t, "Stage", stage)
	var v struct {
		AnalysisTemplates []struct{ Kind, Name string }  `json:"analysisTemplates"`
		Args              []struct{ Name, Value string } `json:"args"`
		Metadata          struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"analysisRunMetadata"`
	}
	raw, _, _ := unstructured.NestedMap(s.Object, "spec", "verification")
	plan.Into(t, raw, &v)
	var templates []*v1alpha1.AnalysisTemplate
	for _, ref := range v.AnalysisTemplates {
		var tpl v1alpha1.AnalysisTemplate
		plan.Into(t, kargo.Object(t, "AnalysisTemplate", ref.Name).Object, &tpl)
		templates = append(templates, &tpl)
	}
	var args []v1alpha1.Argument
	for _, a := range v.Args {
		value := a.Value
		if a.Name == "commit" {
			value = commit
		}
		args = append(args, v1alpha1.Argument{Name: a.Name, Value: &value})
	}
	labels := map[string]string{"kargo.akuity.io/stage": stage}
	for k, val := range v.Metadata.Labels {
		labels[k] = val
	}
	run, err := analysisutil.NewAnalysisRunFromTemplates(templates, nil, args, nil, nil, labels, v.Metadata.Annotations,
		stage+"."+freight[:7], "", s.GetNamespace())
	if err != nil {
		t.Fatalf("building the AnalysisRun of %s: %v", stage, err)
	}
	run.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kargo.akuity.io/v1alpha1", Kind: "Freight", Name: freight}}
	return run
}

// finish ends the run in `phase` as the analysis controller does, recording its event through the
// recorder (argo-rollouts v1.9.0 analysis/analysis.go: "AnalysisRun" + phase, "Analysis Completed").
func finish(rec record.EventRecorder, run *v1alpha1.AnalysisRun, phase v1alpha1.AnalysisPhase, message string) {
	run.Status.Phase = phase
	run.Status.Message = message
	for _, m := range run.Spec.Metrics {
		res := v1alpha1.MetricResult{Name: m.Name, Phase: v1alpha1.AnalysisPhaseSuccessful}
		if phase != v1alpha1.AnalysisPhaseSuccessful {
			res.Phase, res.Message = phase, fmt.Sprintf("Metric %q assessed %s due to failed (1) > failureLimit (0)", m.Name, phase)
		}
		run.Status.MetricResults = append(run.Status.MetricResults, res)
	}
	eventType := corev1.EventTypeNormal
	if phase != v1alpha1.AnalysisPhaseSuccessful {
		eventType = corev1.EventTypeWarning
	}
	rec.Eventf(run, record.EventOptions{EventType: eventType, EventReason: "AnalysisRun" + string(phase)}, "Analysis Completed. Result: %s", run.Status.Phase)
}
