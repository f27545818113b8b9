package notifications

import (
	"maps"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// annotation is one of the stage's notification facts, as the kargo plan gives its runs.
func annotation(run *v1alpha1.AnalysisRun, key string) string {
	return run.Annotations["notifications.pipeline/"+key]
}

// stageWhere is the first program stage of the kargo plan whose runs' facts satisfy `match`.
func stageWhere(t *testing.T, kargo *plan.Project, what string, match func(map[string]string) bool) string {
	t.Helper()
	for _, s := range kargo.OfKind("Stage") {
		a, _, _ := unstructured.NestedStringMap(s.Object, "spec", "verification", "analysisRunMetadata", "annotations")
		if a != nil && match(a) {
			return s.GetName()
		}
	}
	t.Fatalf("no stage of the plan is %s", what)
	return ""
}

func TestEachEventSendsItsMessage(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	values := rolloutsValues(t, destinationPlan(t))
	var got sink
	server := got.serve(t)
	defer server.Close()
	cm, secret := rendered(t, values, map[string]string{"notify-slack-token": "xoxb-test", "notify-webhook-url": server.URL + "/hook"})
	// Only the address changes: Slack's API is the test's server (notifications-engine pkg/services/slack.go apiURL).
	cm.Data["service.slack"] += "apiURL: " + server.URL + "/api/\n"
	rec := recorder(t, cm, secret)
	p := func(k string) string { return "notifications.pipeline/" + k }
	preview := stageWhere(t, kargo, "a protected preview", func(a map[string]string) bool {
		return a[p("kind")] == "preview" && a[p("protected")] == "true" && a[p("approvers")] != ""
	})
	update := stageWhere(t, kargo, "a protected update", func(a map[string]string) bool {
		return a[p("kind")] == "update" && a[p("protected")] == "true"
	})
	beforeGate := stageWhere(t, kargo, "an update before a gate", func(a map[string]string) bool { return a[p("next-gates")] != "" })
	const freight, commit = "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"

	// The run's message as Argo Rollouts ends it with the Job's reason (argo-rollouts v1.9.0 analysis/analysis.go),
	// for a stop (its opening as kargo/verification/run-message.mjs decision writes it) and a failed preview.
	runMessage := func(reason string) string {
		return `Metric "pulumi-preview" assessed Failed due to failed (1) > failureLimit (0): "Error Message: ` + reason + `"`
	}
	stopMessage := func(run *v1alpha1.AnalysisRun) string {
		return runMessage("Freight " + freight + " waits for a decision of " + annotation(run, "approvers") + ", not a failure:\n" + hostile)
	}
	failedPreview := func(*v1alpha1.AnalysisRun) string {
		return runMessage("the preview of 4f1c2b9e8d7a on org/app/qa failed\n" + hostile)
	}
	command := func(run *v1alpha1.AnalysisRun) string {
		return "kargo approve --project " + run.Namespace + " --freight " + freight + " --stage " + annotation(run, "approve-stage")
	}
	cases := []struct {
		name, stage string
		phase       v1alpha1.AnalysisPhase
		events      []string
		// fields are what the webhook says besides the stage's facts, for one event of the case.
		fields func(run *v1alpha1.AnalysisRun, event string) map[string]string
		// message is the run's (a hostile one when nil and the run does not succeed).
		message func(run *v1alpha1.AnalysisRun) string
	}{
		{"a preview stopped for a decision", preview, v1alpha1.AnalysisPhaseFailed, []string{"preview-stopped"}, func(run *v1alpha1.AnalysisRun, _ string) map[string]string {
			return map[string]string{"approvers": annotation(run, "approvers"), "approveStage": annotation(run, "approve-stage"), "project": run.Namespace, "command": command(run)}
		}, stopMessage},
		{"a protected preview that failed", preview, v1alpha1.AnalysisPhaseFailed, []string{"verification-failed"}, nil, failedPreview},
		{"a failed verification", update, v1alpha1.AnalysisPhaseFailed, []string{"verification-failed"}, nil, nil},
		{"a verification that errored", preview, v1alpha1.AnalysisPhaseError, []string{"verification-failed"}, nil, nil},
		{"a protected update that succeeded", update, v1alpha1.AnalysisPhaseSuccessful, nil, nil, nil},
		{"Freight reaching a gate", beforeGate, v1alpha1.AnalysisPhaseSuccessful, nil, func(run *v1alpha1.AnalysisRun, event string) map[string]string {
			if event != "freight-at-gate" {
				return nil
			}
			return map[string]string{"gates": annotation(run, "next-gates")}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := stageRun(t, kargo, c.stage, freight, commit)
			events := c.events
			if c.phase == v1alpha1.AnalysisPhaseSuccessful {
				// What a successful run announces follows from its facts: a protected update, a gate after it.
				if annotation(run, "kind") == "update" && annotation(run, "protected") == "true" {
					events = append(events, "update-succeeded")
				}
				if annotation(run, "next-gates") != "" {
					events = append(events, "freight-at-gate")
				}
			}
			message := ""
			if c.message != nil {
				message = c.message(run)
			} else if c.phase != v1alpha1.AnalysisPhaseSuccessful {
				message = hostile
			}
			finish(rec, run, c.phase, message)
			slack, webhook := got.take()
			if len(slack) != len(events) || len(webhook) != len(events) {
				t.Fatalf("%s sent %d Slack messages and %d webhook calls, want %d each (%v)", c.stage, len(slack), len(webhook), len(events), events)
			}
			kargoURL := annotation(run, "kargo-project-url")
			want := map[string]string{
				"stage": c.stage, "program": annotation(run, "program"), "environment": annotation(run, "environment"),
				"commit": commit, "freight": freight, "freightUrl": kargoURL + "/freight/" + freight,
				"stageUrl": kargoURL + "/stage/" + c.stage, "stack": annotation(run, "stack-url"),
			}
			for i, event := range events {
				want := maps.Clone(want)
				if c.fields != nil {
					maps.Copy(want, c.fields(run, event))
				}
				body := webhook[i]
				if body["event"] != event {
					t.Errorf("webhook call %d is %v, want event %s", i, body["event"], event)
				}
				for k, v := range want {
					if body[k] != v {
						t.Errorf("%s: webhook %s = %q, want %q", event, k, body[k], v)
					}
				}
				text := slack[i].Get("text")
				if ch := slack[i].Get("channel"); ch != "#infra-changes" {
					t.Errorf("%s: Slack channel %q, want the configured one", event, ch)
				}
				for _, k := range []string{"stage", "program", "environment", "commit", "freightUrl"} {
					if !strings.Contains(text, want[k]) {
						t.Errorf("%s: Slack text lacks the %s %q:\n%s", event, k, want[k], text)
					}
				}
				// A stop reads as the Freight waiting for its deciders, with the command to paste; a failure, as one.
				if event == "preview-stopped" && (!strings.HasPrefix(text, ":octagonal_sign: Freight "+freight+" waits for a decision of "+want["approvers"]+", not a failure:") || !strings.Contains(text, "`"+want["command"]+"`")) {
					t.Errorf("preview-stopped: Slack text does not say who decides and the command %q:\n%s", want["command"], text)
				}
				if event == "verification-failed" && (!strings.HasPrefix(text, ":x: ") || strings.Contains(text, "waits for a decision")) {
					t.Errorf("verification-failed: Slack text does not read as a failure:\n%s", text)
				}
				// A stop ends mentioning its deciders as configured, as Slack reads a mention; nothing else mentions.
				if event == "preview-stopped" {
					var mentioned []string
					for _, g := range strings.Split(want["approvers"], ", ") {
						mentioned = append(mentioned, mentions(t)[g])
					}
					if last := text[strings.LastIndex(text, "\n")+1:]; last != strings.Join(mentioned, " ") {
						t.Errorf("preview-stopped: Slack text ends %q, want the deciders' mentions %q:\n%s", last, mentioned, text)
					}
				} else if strings.Contains(text, "<!subteam^") {
					t.Errorf("%s: Slack text mentions a decider group:\n%s", event, text)
				}
				if message != "" {
					reason, _ := body["reason"].(string)
					if !strings.Contains(reason, hostile) {
						t.Errorf("%s: the webhook's reason %q does not hold the run's message as it is", event, reason)
					}
					if strings.Contains(text, "<!channel>") || strings.Contains(text, "<https://evil") || !strings.Contains(text, "&lt;!channel&gt;") {
						t.Errorf("%s: Slack would read markup from the reason:\n%s", event, text)
					}
				}
			}
			for _, raw := range got.raw {
				if strings.Count(raw, `"event"`) != 1 {
					t.Errorf("a webhook body holds another event than its own: %s", raw)
				}
			}
			got.raw = nil
		})
	}
}

// Without a destination nothing is configured to send, and the plan says so.
func TestNoDestinationSendsNothing(t *testing.T) {
	p := plan.Load(t, "cluster-setup")
	values := rolloutsValues(t, p)
	if n, ok := values["notifications"]; ok {
		t.Errorf("the example plan configures notifications: %v", n)
	}
	if said, _ := p.Outputs["notifications"].(string); !strings.Contains(said, "nothing is sent") {
		t.Errorf("the plan's notifications output is %q, want it to say nothing is sent", said)
	}
	dest := rolloutsValues(t, destinationPlan(t))
	n, _ := dest["notifications"].(map[string]any)
	subs, _ := n["subscriptions"].([]any)
	if len(subs) != 1 {
		t.Errorf("with destinations the plan subscribes %v, want one subscription to both", subs)
	}
}
