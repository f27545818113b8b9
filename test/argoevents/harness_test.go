package argoevents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-events/pkg/apis/events/v1alpha1"
	"github.com/argoproj/argo-events/pkg/eventsources/events"
	"github.com/argoproj/argo-events/pkg/sensors/dependencies"
	standardk8s "github.com/argoproj/argo-events/pkg/sensors/triggers/standard-k8s"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// plan is what test/argoevents/plan.ts prints: both projects' Kubernetes objects, cluster-setup planned with
// the given destinations, and the pipeline facts the messages must name (derived from the definition).
type plan struct {
	Setup      []map[string]any `json:"setup"`
	Kargo      []map[string]any `json:"kargo"`
	Project    string           `json:"project"`
	FirstGates []struct {
		Gate      string   `json:"gate"`
		Approvers []string `json:"approvers"`
	} `json:"firstGates"`
	StopApprovalStages []string `json:"stopApprovalStages"`
	ProgramStages      []struct {
		Name        string `json:"name"`
		Program     string `json:"program"`
		Environment string `json:"environment"`
	} `json:"programStages"`
	Gates       []string `json:"gates"`
	DriftChecks []struct {
		Stage     string `json:"stage"`
		Stack     string `json:"stack"`
		Namespace string `json:"namespace"`
		Own       string `json:"own"`
	} `json:"driftChecks"`
}

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			return d
		}
	}
	t.Fatal("no package.json above " + wd)
	return ""
}

func node() string {
	if n := os.Getenv("NODE"); n != "" {
		return n
	}
	return "node"
}

var plans = map[string]*plan{}

// planWith plans cluster-setup with these destinations (empty: none) and kargo over it.
func planWith(t *testing.T, channel, token, webhook string) *plan {
	t.Helper()
	key := channel + "\x00" + token + "\x00" + webhook
	if p, ok := plans[key]; ok {
		return p
	}
	cmd := exec.Command(node(), "--import", "tsx", "test/argoevents/plan.ts", channel, token, webhook)
	cmd.Dir = repoRoot(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/argoevents/plan.ts: %v\n%s", err, stderr.String())
	}
	var p plan
	if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	plans[key] = &p
	return &p
}

// object is the one object of this kind (and name, when given) in a project's objects; nil when none.
func object(objects []map[string]any, kind, name string) map[string]any {
	for _, o := range objects {
		if o["kind"] != kind {
			continue
		}
		if md, _ := o["metadata"].(map[string]any); name == "" || md["name"] == name {
			return o
		}
	}
	return nil
}

// strict decodes a planned object into an Argo Events type, refusing any field the type does not have.
func strict(t *testing.T, o map[string]any, into any) {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		t.Fatalf("the planned %v is not an Argo Events v1.9.10 object: %v", o["kind"], err)
	}
}

// gitCommit is a Freight commit as Kargo v1.11.2 marshals it into the freight-commits annotation
// (akuity/kargo v1.11.2 api/v1alpha1/freight_types.go GitCommit; its api module is not served, so the json
// tags are copied).
type gitCommit struct {
	RepoURL   string `json:"repoURL,omitempty"`
	ID        string `json:"id,omitempty"`
	Branch    string `json:"branch,omitempty"`
	Tag       string `json:"tag,omitempty"`
	Message   string `json:"message,omitempty"`
	Author    string `json:"author,omitempty"`
	Committer string `json:"committer,omitempty"`
}

const annotationPrefix = "event.kargo.akuity.io/"

// kargoEvent is a Kubernetes Event as Kargo v1.11.2 records one: pkg/event/kubernetes/sender.go hands the
// annotations of pkg/event/freight.go, pkg/event/promotion.go and pkg/event/event.go (MarshalAnnotationsTo,
// keys in api/v1alpha1/event.go) with reason = the event type to client-go's AnnotatedEventf, which names the Event <object>.<hex time> in the object's namespace
// (client-go tools/record/event.go makeEvent).
func kargoEvent(project, reason, kind, name, message string, annotations map[string]string) corev1.Event {
	now := metav1.NewTime(time.Date(2026, 11, 27, 14, 24, 7, 0, time.UTC))
	all := map[string]string{annotationPrefix + "project": project}
	for k, v := range annotations {
		all[annotationPrefix+k] = v
	}
	return corev1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              fmt.Sprintf("%s.%x", name, now.UnixNano()),
			Namespace:         project,
			Annotations:       all,
			CreationTimestamp: now,
		},
		InvolvedObject: corev1.ObjectReference{
			Kind: kind, Namespace: project, Name: name, APIVersion: "kargo.akuity.io/v1alpha1",
		},
		Reason:              reason,
		Message:             message,
		Source:              corev1.EventSource{Component: "kargo-api"},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                corev1.EventTypeNormal,
		ReportingController: "kargo-api",
	}
}

// freightAnnotations are a Freight's annotations on its events (pkg/event/freight.go MarshalAnnotationsTo).
func freightAnnotations(freight, stage string, commits []gitCommit) map[string]string {
	raw, _ := json.Marshal(commits)
	return map[string]string{
		"freight-name":           freight,
		"freight-create-time":    "2026-11-27T14:20:00Z",
		"stage-name":             stage,
		"freight-warehouse-name": "infra",
		"freight-alias":          "wonky-wombat",
		"freight-commits":        string(raw),
	}
}

// asArgoEvent is the Event as the resource EventSource dispatches it on an ADD (argo-events v1.9.10
// pkg/eventsources/sources/resource/start.go: ResourceEventData with the object as `body`), as the Sensor
// receives it: a JSON cloudevent's data.
func asArgoEvent(t *testing.T, e corev1.Event) *v1alpha1.Event {
	t.Helper()
	body, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	// A watch hands the informer the object as the API server serialises it, as unstructured JSON.
	var generic map[string]any
	_ = json.Unmarshal(body, &generic)
	body, _ = json.Marshal(generic)
	// No old object on an ADD: a nil body, which marshals as null (start.go)
	var empty []byte
	data, err := json.Marshal(&events.ResourceEventData{
		EventType: "ADD",
		Body:      (*json.RawMessage)(&body),
		OldBody:   (*json.RawMessage)(&empty),
		Group:     "",
		Version:   "v1",
		Resource:  "events",
	})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.Event{
		Context: &v1alpha1.EventContext{
			ID: "1", Source: "kargo-events", SpecVersion: "1.0", Type: "resource", Subject: "kargo",
			DataContentType: "application/json", Time: metav1.Now(),
		},
		Data: data,
	}
}

// matching are the names of the Sensor's dependencies the event passes, by Argo Events' own filter.
func matching(t *testing.T, s *v1alpha1.Sensor, e *v1alpha1.Event) []string {
	t.Helper()
	var names []string
	for _, d := range s.Spec.Dependencies {
		ok, err := dependencies.Filter(e, d.Filters, d.FiltersLogicalOperator)
		// A filter whose path the event lacks errors: the Sensor drops the event for that dependency.
		if err == nil && ok {
			names = append(names, d.Name)
		}
	}
	return names
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "\\n") }

func promotionAnnotations(stage, freight string, commits []gitCommit) map[string]string {
	a := freightAnnotations(freight, stage, commits)
	a["promotion-name"] = stage + ".01abc"
	a["promotion-create-time"] = "2026-11-27T14:23:00Z"
	a["actor"] = "controller:kargo-controller"
	return a
}

func withActor(a map[string]string, actor string) map[string]string {
	a["actor"] = actor
	return a
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func escapeSlack(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// noMarkup: no mention, link or entity of the hostile value survives into the Slack text.
func noMarkup(t *testing.T, text string) {
	t.Helper()
	for _, bad := range []string{"<@here>", "<!channel>", "<https://", "& <"} {
		if strings.Contains(text, bad) {
			t.Errorf("Slack text holds markup %q:\n%s", bad, oneLine(text))
		}
	}
}

func equalJSON(t *testing.T, got, want map[string]any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("got  %s\nwant %s", g, w)
	}
}

// runK8sTrigger runs Argo Events' own `k8s` trigger for the events, as the Sensor does (fetch the resource,
// apply the parameters, execute), against dyn, and lists the ConfigMaps it leaves in the namespace.
func (r router) runK8sTrigger(t *testing.T, tr *v1alpha1.Trigger, evs map[string]*v1alpha1.Event, dyn dynamic.Interface, namespace string) *unstructured.UnstructuredList {
	t.Helper()
	k := standardk8s.NewStandardK8sTrigger(kubefake.NewSimpleClientset(), dyn, r.sensor, tr, zap.NewNop().Sugar())
	res, err := k.FetchResource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res, err = k.ApplyResourceParameters(evs, res); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Execute(context.Background(), evs, res); err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}
