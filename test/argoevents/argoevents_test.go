package argoevents

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/argo-events/pkg/apis/events/v1alpha1"
	resourcesource "github.com/argoproj/argo-events/pkg/eventsources/sources/resource"
	busvalidate "github.com/argoproj/argo-events/pkg/reconciler/eventbus"
	sensorvalidate "github.com/argoproj/argo-events/pkg/reconciler/sensor"
	"github.com/argoproj/argo-events/pkg/sensors/triggers"
	httptrigger "github.com/argoproj/argo-events/pkg/sensors/triggers/http"
	sharedutil "github.com/argoproj/argo-events/pkg/shared/util"
	notifications "github.com/argoproj/notifications-engine/pkg/services"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

const (
	channel = "#infra-changes"
	token   = "xoxb-plan-token"
	webhook = "https://hooks.example.com/pipeline?key=k"
	// A commit message, an actor and a reason out to break a message, its JSON or the record.
	hostile = "\"quoted\" <@here> <!channel> & <https://evil.example|click> {{ .Input }} {{ $b }}\nsecond: line\r\n}"
)

// router is the planned Argo Events objects, decoded strictly and validated by Argo Events' own validators.
type router struct {
	p      *plan
	sensor *v1alpha1.Sensor
	kargo  string // Kargo's UI address for the project, as the plan gives it to the stages
}

func plannedRouter(t *testing.T) router {
	t.Helper()
	return routerOf(t, planWith(t, channel, token, webhook), true)
}

// routerOf decodes and validates the router of a plan; withMessages: the plan has a destination, so the
// Applications carry Kargo's address for the messages' links.
func routerOf(t *testing.T, p *plan, withMessages bool) router {
	t.Helper()
	var bus v1alpha1.EventBus
	strict(t, object(p.Setup, "EventBus", ""), &bus)
	if err := validateBus(&bus); err != nil {
		t.Fatal(err)
	}
	var source v1alpha1.EventSource
	strict(t, object(p.Kargo, "EventSource", ""), &source)
	// The resource event source's own validation (pkg/eventsources/sources/resource/validate.go); the
	// reconciler's would build every other kind of event source (Azure's, Google's SDKs) for nothing.
	for name, r := range source.Spec.Resource {
		l := &resourcesource.EventListener{EventSourceName: source.Name, EventName: name, ResourceEventSource: r}
		if err := l.ValidateEventSource(context.Background()); err != nil {
			t.Fatalf("Argo Events refuses the planned EventSource's %s: %v", name, err)
		}
	}
	var sensor v1alpha1.Sensor
	strict(t, object(p.Kargo, "Sensor", ""), &sensor)
	if err := sensorvalidate.ValidateSensor(&sensor, &bus); err != nil {
		t.Fatalf("Argo Events refuses the planned Sensor: %v", err)
	}
	if source.Namespace != sensor.Namespace || bus.Namespace != sensor.Namespace || bus.Name != sensor.Spec.EventBusName || source.Spec.EventBusName != bus.Name {
		t.Fatalf("EventSource %s/%s, Sensor %s/%s and EventBus %s/%s must share a namespace and bus", source.Namespace, source.Name, sensor.Namespace, sensor.Name, bus.Namespace, bus.Name)
	}
	watched, ok := source.Spec.Resource["kargo"]
	if !ok || len(source.Spec.Resource) != 1+min(len(p.DriftChecks), 1) || watched.Namespace != p.Project || watched.Resource != "events" || watched.Version != "v1" || watched.Group != "" || !slices.Equal(watched.EventTypes, []v1alpha1.ResourceEventType{v1alpha1.ADD}) || watched.Filter == nil || !watched.Filter.AfterStart {
		t.Fatalf("the EventSource must watch Events added in project namespace %s since it started, once (and the drift checks' apart): %+v", p.Project, source.Spec.Resource)
	}
	checkDriftWatch(t, p, source.Spec.Resource)
	kargo := ""
	for _, o := range p.Kargo {
		if o["kind"] == "Application" {
			md := o["metadata"].(map[string]any)
			kargo, _ = md["annotations"].(map[string]any)["notifications.pipeline/kargo-project-url"].(string)
		}
	}
	if withMessages && !strings.HasPrefix(kargo, "https://") {
		t.Fatalf("no Kargo address in the plan's Applications: %q", kargo)
	}
	return router{p: p, sensor: &sensor, kargo: kargo}
}

func validateBus(b *v1alpha1.EventBus) error {
	if err := busvalidate.ValidateEventBus(b); err != nil {
		return fmt.Errorf("Argo Events refuses the planned EventBus: %w", err)
	}
	if b.Spec.JetStream == nil || b.Spec.JetStream.GetReplicas() != 1 {
		return errorf("the EventBus must be JetStream with one server (Argo Events clusters it only above two): %+v", b.Spec)
	}
	return nil
}

func errorf(f string, a ...any) error { return fmt.Errorf(f, a...) }

// trigger resolves one of the Sensor's triggers for the event as the Sensor does before executing it
// (argo-events v1.9.10 pkg/sensors/listener.go triggerOne: the trigger-level parameters first).
func (r router) trigger(t *testing.T, name string, dep string, e *v1alpha1.Event) (*v1alpha1.Trigger, map[string]*v1alpha1.Event) {
	t.Helper()
	for _, tr := range r.sensor.Spec.Triggers {
		if tr.Template.Name != name {
			continue
		}
		if tr.Template.Conditions != dep {
			t.Fatalf("trigger %s fires on %q, want %q", name, tr.Template.Conditions, dep)
		}
		copied := tr.DeepCopy()
		evs := map[string]*v1alpha1.Event{dep: e}
		if err := triggers.ApplyTemplateParameters(evs, copied); err != nil {
			t.Fatalf("trigger %s: %v", name, err)
		}
		return copied, evs
	}
	t.Fatalf("the Sensor has no trigger %s", name)
	return nil, nil
}

// sink stands in for Slack's Web API and the webhook.
type sink struct {
	mu      sync.Mutex
	slack   []url.Values
	webhook []map[string]any
}

func (s *sink) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		if strings.HasSuffix(req.URL.Path, "/chat.postMessage") {
			form, err := url.ParseQuery(string(body))
			if err != nil {
				t.Errorf("Slack got a body that is not a form: %v", err)
			}
			s.slack = append(s.slack, form)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true,"channel":"C1","ts":"1.1"}`))
			return
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(string(body)))
		if err := d.Decode(&m); err != nil || d.More() {
			t.Errorf("the webhook got a body that is not one JSON object: %v\n%s", err, body)
		}
		s.webhook = append(s.webhook, m)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// send runs the Slack and http triggers of the dependency for the event, as Argo Events executes them,
// against the sink: Slack through notifications-engine's Slack service (what the Slack trigger calls, with
// the message the trigger-level parameters set), the webhook through Argo Events' HTTP trigger.
func (r router) send(t *testing.T, dep string, e *v1alpha1.Event) (string, map[string]any) {
	t.Helper()
	s := &sink{}
	srv := s.serve(t)
	tr, evs := r.trigger(t, dep+"-slack", dep, e)
	if tr.Template.Slack.Channel != channel || tr.Template.Slack.SlackToken == nil || tr.Template.Slack.SlackToken.Name == "" {
		t.Fatalf("Slack trigger %s: channel %q, token %+v", tr.Template.Name, tr.Template.Slack.Channel, tr.Template.Slack.SlackToken)
	}
	svc := notifications.NewSlackService(notifications.SlackOptions{Token: token, ApiURL: srv.URL + "/"})
	if err := svc.Send(notifications.Notification{Message: tr.Template.Slack.Message, Slack: &notifications.SlackNotification{}},
		notifications.Destination{Service: "slack", Recipient: strings.TrimPrefix(tr.Template.Slack.Channel, "#")}); err != nil {
		t.Fatal(err)
	}
	tr, evs = r.trigger(t, dep+"-webhook", dep, e)
	if tr.Template.HTTP.URL != webhook {
		t.Fatalf("the http trigger posts to %q, want the configured %q", tr.Template.HTTP.URL, webhook)
	}
	tr.Template.HTTP.URL = srv.URL + "/hook"
	h, err := httptrigger.NewHTTPTrigger(sharedutil.NewStringKeyedMap[*http.Client](), &v1alpha1.Sensor{ObjectMeta: r.sensor.ObjectMeta}, tr, zap.NewNop().Sugar())
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.FetchResource(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err = h.ApplyResourceParameters(evs, res)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Execute(context.Background(), evs, res); err != nil {
		t.Fatal(err)
	}
	if len(s.slack) != 1 || len(s.webhook) != 1 {
		t.Fatalf("want one Slack message and one webhook call, got %d and %d", len(s.slack), len(s.webhook))
	}
	return s.slack[0].Get("text"), s.webhook[0]
}

// TestWithoutADestinationTheRouterOnlyRecords: the default configuration (no destination) still installs
// Argo Events, and its Sensor, valid for Argo Events, has the approval record and no message trigger.
func TestWithoutADestinationTheRouterOnlyRecords(t *testing.T) {
	p := planWith(t, "", "", "")
	r := routerOf(t, p, false)
	var names []string
	for _, tr := range r.sensor.Spec.Triggers {
		names = append(names, tr.Template.Name)
		if tr.Template.K8s == nil || tr.Template.Slack != nil || tr.Template.HTTP != nil {
			t.Errorf("trigger %s sends something without a destination: %+v", tr.Template.Name, tr.Template)
		}
	}
	want := []string{}
	if len(p.StopApprovalStages) > 0 {
		want = []string{"record-stop-approval"}
	}
	if len(p.DriftChecks) > 0 {
		want = append(want, "record-drift")
	}
	if !slices.Equal(append([]string{}, names...), want) {
		t.Errorf("the Sensor's triggers are %v, want %v", names, want)
	}
	if object(p.Setup, "Secret", "kargo-events-destinations") != nil {
		t.Error("cluster-setup plans the Slack token's Secret without a destination")
	}
}

func TestEachKargoEventMatchesItsDependencyOnly(t *testing.T) {
	r := plannedRouter(t)
	p := r.p
	commits := []gitCommit{{RepoURL: "https://github.com/o/r.git", ID: "0123456789abcdef0123456789abcdef01234567", Branch: "main", Message: "change"}}
	check := func(what string, e corev1.Event, want ...string) {
		t.Helper()
		got := matching(t, r.sensor, asArgoEvent(t, e))
		if !slices.Equal(got, want) {
			t.Errorf("%s: matches %v, want %v", what, got, want)
		}
	}
	freight := "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678"
	wantFreight := []string{}
	if len(p.FirstGates) > 0 {
		wantFreight = []string{"freight-created"}
	}
	check("FreightCreated", kargoEvent(p.Project, "FreightCreated", "Freight", freight, "Freight created", freightAnnotations(freight, "", commits)), wantFreight...)
	check("FreightCreated in another namespace", kargoEvent("other", "FreightCreated", "Freight", freight, "Freight created", freightAnnotations(freight, "", commits)))
	stages := append([]string{}, p.Gates...)
	for _, s := range p.ProgramStages {
		stages = append(stages, s.Name)
	}
	for _, stage := range stages {
		for _, reason := range []string{"PromotionFailed", "PromotionErrored"} {
			check(reason+" of "+stage, kargoEvent(p.Project, reason, "Promotion", stage+".01abc", "step failed", promotionAnnotations(stage, freight, commits)), "promotion-failed")
		}
		for _, reason := range []string{"PromotionSucceeded", "PromotionCreated", "PromotionAborted", "PromotionFailedToo", "XPromotionFailed"} {
			check(reason+" of "+stage, kargoEvent(p.Project, reason, "Promotion", stage+".01abc", "m", promotionAnnotations(stage, freight, commits)))
		}
		wantApproval := []string{}
		if slices.Contains(p.StopApprovalStages, stage) {
			wantApproval = []string{"stop-approved"}
		}
		check("FreightApproved for "+stage, kargoEvent(p.Project, "FreightApproved", "Freight", freight, "approved", withActor(freightAnnotations(freight, stage, commits), "email:alice@example.com")), wantApproval...)
		check("FreightApproved for a stage named like "+stage, kargoEvent(p.Project, "FreightApproved", "Freight", freight, "approved", withActor(freightAnnotations(freight, stage+"x", commits), "email:alice@example.com")))
	}
	if len(p.StopApprovalStages) == 0 {
		t.Fatal("the pipeline has no update stage a stopped preview is approved for: nothing proves the record")
	}
	for _, reason := range []string{"FreightVerificationFailed", "FreightVerificationSucceeded", "FreightVerificationErrored", "FreightVerificationInconclusive", "FreightVerificationAborted", "FreightVerificationUnknown"} {
		check(reason, kargoEvent(p.Project, reason, "Freight", freight, "m", freightAnnotations(freight, p.StopApprovalStages[0], commits)))
	}
}

func TestNewFreightIsAnnouncedWithItsGates(t *testing.T) {
	r := plannedRouter(t)
	p := r.p
	if len(p.FirstGates) == 0 {
		t.Skip("the pipeline has no gate the Warehouse feeds: new Freight is promoted at once, nothing waits")
	}
	freight := "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678"
	id := "0123456789abcdef0123456789abcdef01234567"
	e := kargoEvent(p.Project, "FreightCreated", "Freight", freight, "Freight created",
		freightAnnotations(freight, "", []gitCommit{{RepoURL: "https://github.com/o/r.git", ID: id, Message: hostile}}))
	text, body := r.send(t, "freight-created", asArgoEvent(t, e))
	freightURL := r.kargo + "/freight/" + freight
	for _, want := range []string{freight, id, freightURL, escapeSlack(strings.SplitN(hostile, "\n", 2)[0])} {
		if !strings.Contains(text, want) {
			t.Errorf("Slack message lacks %q:\n%s", want, text)
		}
	}
	for _, g := range p.FirstGates {
		if !strings.Contains(text, g.Gate+" ("+strings.Join(g.Approvers, ", ")+")") {
			t.Errorf("Slack message does not name gate %s with its approvers %v:\n%s", g.Gate, g.Approvers, text)
		}
	}
	noMarkup(t, text)
	want := map[string]any{"event": "freight-created", "freight": freight, "commit": id, "freightUrl": freightURL, "gates": body["gates"]}
	for _, g := range p.FirstGates {
		if !strings.Contains(body["gates"].(string), g.Gate+" ("+strings.Join(g.Approvers, ", ")+")") {
			t.Errorf("webhook gates %q lack %s", body["gates"], g.Gate)
		}
	}
	equalJSON(t, body, want)
}

func TestAPromotionFailingBeforeAnySyncIsAnnounced(t *testing.T) {
	r := plannedRouter(t)
	p := r.p
	freight := "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678"
	id := "89abcdef0123456789abcdef0123456789abcdef"
	type stage struct{ name, program, environment string }
	var stages []stage
	for _, s := range p.ProgramStages {
		stages = append(stages, stage{s.Name, s.Program, s.Environment})
	}
	for _, g := range p.Gates {
		stages = append(stages, stage{g, "", ""})
	}
	for _, s := range stages {
		promotion := s.name + ".01kq0abc"
		a := promotionAnnotations(s.name, freight, []gitCommit{{ID: id, Message: hostile}})
		a["promotion-name"] = promotion
		e := kargoEvent(p.Project, "PromotionFailed", "Promotion", promotion, hostile, a)
		text, body := r.send(t, "promotion-failed", asArgoEvent(t, e))
		promotionURL := r.kargo + "/promotion/" + promotion
		wants := []string{s.name, id, promotionURL, r.kargo + "/freight/" + freight, escapeSlack(hostile)}
		if s.program != "" {
			wants = append(wants, s.program+" in "+s.environment)
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("stage %s: Slack message lacks %q:\n%s", s.name, oneLine(want), oneLine(text))
			}
		}
		noMarkup(t, text)
		equalJSON(t, body, map[string]any{
			"event": "promotion-failed", "stage": s.name, "program": s.program, "environment": s.environment,
			"commit": id, "reason": hostile, "promotion": promotion, "promotionUrl": promotionURL,
			"freight": freight, "freightUrl": r.kargo + "/freight/" + freight,
		})
	}
}

// TestAStoppedPreviewsApprovalIsRecordedByTheSensor runs the Sensor's k8s trigger with the default
// configuration (no destination) and with every destination: the record is the same.
func TestAStoppedPreviewsApprovalIsRecordedByTheSensor(t *testing.T) {
	for _, r := range []router{routerOf(t, planWith(t, "", "", ""), false), plannedRouter(t)} {
		recordsEachApproval(t, r)
	}
}

func recordsEachApproval(t *testing.T, r router) {
	t.Helper()
	p := r.p
	freight := "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678"
	if len(p.StopApprovalStages) == 0 {
		t.Fatal("the pipeline has no update stage a stopped preview is approved for: nothing proves the record")
	}
	for _, stage := range p.StopApprovalStages {
		actor := "email:" + hostile
		e := kargoEvent(p.Project, "FreightApproved", "Freight", freight, "Freight approved for Stage "+stage,
			withActor(freightAnnotations(freight, stage, nil), actor))
		tr, evs := r.trigger(t, "record-stop-approval", "stop-approved", asArgoEvent(t, e))
		scheme := runtime.NewScheme()
		_ = corev1.AddToScheme(scheme)
		dyn := dynamicfake.NewSimpleDynamicClient(scheme)
		list := r.runK8sTrigger(t, tr, evs, dyn, p.Project)
		if len(list.Items) != 1 {
			t.Fatalf("stage %s: the Sensor created %d objects in %s, want one ConfigMap", stage, len(list.Items), p.Project)
		}
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[0].Object, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Name != "approval-"+freight+"-"+stage || cm.Immutable == nil || !*cm.Immutable {
			t.Errorf("stage %s: record %s (immutable %v), want immutable approval-%s-%s", stage, cm.Name, cm.Immutable, freight, stage)
		}
		equalJSON(t, toAny(cm.Data), map[string]any{"by": actor, "at": "2026-11-27T14:24:07Z", "stage": stage, "freight": freight})
	}
}
