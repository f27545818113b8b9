package promotion

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// notice is what a program stage's verification tells the notifications under key (lib/pipeline/notify.ts
// verificationNotice).
func notice(t *testing.T, stage, key string) string {
	t.Helper()
	for _, s := range kargoPlan(t).OfKind("Stage") {
		if s.GetName() != stage {
			continue
		}
		a, _, _ := unstructured.NestedStringMap(s.Object, "spec", "verification", "analysisRunMetadata", "annotations")
		return a["notifications.pipeline/"+key]
	}
	t.Fatalf("the plan has no Stage %s", stage)
	return ""
}

// TestStopApprovalInTheRecord promotes Freight through a gate, a stopping preview and its update stage with
// the project namespace holding the ConfigMap Argo Events' Sensor records a `kargo approve` in (hostile
// values in it), and without: the update's record holds that approval exactly, as a JSON object, or an
// empty one; the preview's record holds null. `npm run history` prints the approver.
func TestStopApprovalInTheRecord(t *testing.T) {
	t.Parallel()
	defaultSensorRecords(t)
	// A preview that stops: its environment protected, as the plan says to the notifications (a fork may put
	// an environment that never stops, `stopOn: []` or `protected: false`, behind the first gate).
	gate, preview, update := previewAfterGate(t, func(preview string) bool { return notice(t, preview, "protected") == "true" })
	if gate == "" {
		t.Skip("NOT RUN: no preview after a gate stops in this pipeline (every environment behind a gate has stopOn: [])")
	}
	// The update stage the preview's stop is approved for, as its verification names it to the notifications.
	if got := notice(t, preview, "approve-stage"); got != update {
		t.Fatalf("preview %s's stop is approved for %q, want %s (the stage after it)", preview, got, update)
	}
	for _, approved := range []bool{true, false} {
		r := newRemote(t)
		for _, s := range []string{preview, update} {
			kargoCreatedBranch(t, r, appOf(t, s).Branch)
		}
		f := freightAt(t, r, r.A)
		e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(f))
		want := map[string]any{}
		if approved {
			data := map[string]string{"by": hostileActor, "at": "2026-11-27T14:24:07Z", "stage": update, "freight": f.Name}
			e.ConfigMaps = map[string]map[string]string{"approval-" + f.Name + "-" + update: data}
			for k, v := range data {
				want[k] = v
			}
		}
		for _, s := range []string{gate, preview, update} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			_, err := e.Promote(ctx, Promotion{Name: s + ".1", Stage: s, Freight: f, Actor: "controller:kargo-controller", WorkDir: t.TempDir(), UIBaseURL: "https://kargo.example.com"})
			cancel()
			if err != nil {
				t.Fatalf("promoting into %s: %v", s, err)
			}
		}
		got, _ := json.Marshal(recordOf(t, r, r.Ref(t, appOf(t, update).Branch))["stopApproval"])
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) {
			t.Errorf("approved %v: the record of %s holds stopApproval %s, want %s", approved, update, got, wantJSON)
		}
		if v, ok := recordOf(t, r, r.Ref(t, appOf(t, preview).Branch))["stopApproval"]; !ok || v != nil {
			t.Errorf("the record of preview %s holds stopApproval %v (present %v), want null", preview, v, ok)
		}
		if !approved {
			continue
		}
		environment := environmentOf(t, update)
		cmd := exec.Command(plan.Node(), "--import", "tsx", "lib/cli/history.ts", environment, "--repository", r.Dir, "--ref-prefix", "refs/heads/")
		cmd.Dir = plan.RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("npm run history -- %s: %v\n%s", environment, err, out)
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(hostileActor)
		if line := "stopped preview approved by " + strings.TrimSpace(buf.String()) + ` at "2026-11-27T14:24:07Z"`; !strings.Contains(string(out), line) {
			t.Errorf("history of %s lacks %q:\n%s", environment, line, out)
		}
	}
}

// defaultSensorRecords: the plan these tests read is the default configuration's (no notification
// destination), and its Argo Events Sensor still creates the ConfigMap a record reads, in the project's
// namespace (test/argoevents runs that trigger over Kargo's FreightApproved Event).
func defaultSensorRecords(t *testing.T) {
	t.Helper()
	project := kargoPlan(t).OfKind("Stage")[0].GetNamespace()
	for _, s := range kargoPlan(t).OfKind("Sensor") {
		triggers, _, _ := unstructured.NestedSlice(s.Object, "spec", "triggers")
		for _, tr := range triggers {
			k8s, ok, _ := unstructured.NestedMap(tr.(map[string]any), "template", "k8s")
			kind, _, _ := unstructured.NestedString(k8s, "source", "resource", "kind")
			ns, _, _ := unstructured.NestedString(k8s, "source", "resource", "metadata", "namespace")
			if ok && k8s["operation"] == "create" && kind == "ConfigMap" && ns == project {
				return
			}
		}
	}
	t.Fatal("the default plan has no Sensor that records a stop's approval: without a destination nothing would")
}
