package argocdnotify

import (
	"strings"
	"testing"
)

// driftCommit is a later stage branch commit: the Degraded notification is told once per synced revision.
const driftCommit = "89abcdef0123456789abcdef0123456789abcdef"

// driftHealth is what stack-health.lua says of a drift check whose preview found changes (test/health
// drift_test.go runs it): it starts "drift: ".
const driftHealth = "drift: drift check infra-qa-bucket-drift of stage qa-bucket found Pulumi stack o/p/qa no longer as program commit c1 left it; last error: " + hostile

// driftDegraded is an update stage's Application whose drift check (lib/pipeline/drift.ts) is Degraded.
func driftDegraded(stack string) map[string]any {
	s := degraded(stack)
	s["sync"] = map[string]any{"status": "Synced", "revision": driftCommit}
	s["operationState"].(map[string]any)["syncResult"].(map[string]any)["revision"] = driftCommit
	s["resources"] = append(s["resources"].([]any), map[string]any{
		"group": "pulumi.com", "version": "v1", "kind": "Stack", "name": stack + "-drift", "status": "Synced",
		"health": map[string]any{"status": "Degraded", "message": driftHealth},
	})
	s["resources"].([]any)[0].(map[string]any)["health"] = map[string]any{"status": "Healthy"}
	return s
}

// checkDriftTold: the Degraded notification of a drift check says drift, with the command that brings the
// environment back through the preview stop, and the webhook says so in its own field.
func checkDriftTold(t *testing.T, got *sink, set func(map[string]any), stack string, want map[string]string) {
	t.Helper()
	set(driftDegraded(stack))
	slack, webhook, _ := got.take()
	if len(slack) != 1 || len(webhook) != 1 {
		t.Fatalf("%s drift: sent %d Slack messages and %d webhook calls, want one each", stack, len(slack), len(webhook))
	}
	if webhook[0]["event"] != "stage-degraded" || webhook[0]["drift"] != true {
		t.Errorf("%s drift: the webhook got event %v, drift %v; want stage-degraded, true", stack, webhook[0]["event"], webhook[0]["drift"])
	}
	if reason, _ := webhook[0]["reason"].(string); !strings.HasPrefix(reason, "drift: drift check") {
		t.Errorf("%s drift: the webhook's reason %q is not the drift check's", stack, reason)
	}
	text := slack[0].Get("text")
	for _, part := range []string{"drift", want["stage"], want["environment"], driftCommit,
		"npm run rollback -- " + want["environment"] + " --reconcile"} {
		if !strings.Contains(text, part) {
			t.Errorf("%s drift: Slack text lacks %q:\n%s", stack, part, text)
		}
	}
	if strings.Contains(text, "stopped retrying") {
		t.Errorf("%s drift: Slack text reads as a failed run:\n%s", stack, text)
	}
}
