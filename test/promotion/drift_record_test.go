package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
)

// A reconcile's promotion of an update stage with a drift check records the drift that check last found, as
// Argo Events' Sensor wrote it into drift-<stage> (lib/pipeline/drift-record.ts), beside the reconcile request;
// any other promotion records none. `npm run history` prints both, from the branch alone.
func TestAReconcilesRecordCarriesTheDriftItBringsHome(t *testing.T) {
	t.Parallel()
	previews, updates := guardedUpdates(t)
	update := ""
	for _, u := range updates {
		if appOf(t, u).Drift != "" {
			update = u
		}
	}
	if update == "" {
		t.Fatal("no update stage behind a preview has a drift check: nothing proves the drift record")
	}
	preview, environment := previews[update], environmentOf(t, update)
	r := newRemote(t)
	for _, s := range []string{preview, update} {
		kargoCreatedBranch(t, r, appOf(t, s).Branch)
	}
	a := freightAt(t, r, r.A)
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(a))
	n := 0
	run := func(stage string, configMaps map[string]map[string]string) map[string]any {
		t.Helper()
		n++
		e.ConfigMaps = configMaps
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := e.Promote(ctx, Promotion{Name: fmt.Sprintf("%s.%d", stage, n), Stage: stage, Freight: a, Actor: "email:carol@example.com", WorkDir: t.TempDir()}); err != nil {
			t.Fatalf("promoting into %s: %v", stage, err)
		}
		return recordOf(t, r, r.Ref(t, appOf(t, stage).Branch))
	}
	stack := strings.TrimSuffix(path.Base(appOf(t, update).Drift), ".yaml")
	found := map[string]string{
		"at": "2026-11-28T10:30:00Z", "stack": stack, "stage": update,
		"message": "Failed to update stack: preview failed\nstdout:  ~ bucket </b>\"x\"\nstderr: error: no changes were expected for preview but changes were proposed",
	}
	requests := func(kind string, drift map[string]string) map[string]map[string]string {
		cms := map[string]map[string]string{
			"rollback-" + environment: rollbackRequest(t, kind, a.Name, map[string]string{update: a.Name}, []string{update}),
		}
		if drift != nil {
			cms["drift-"+update] = drift
		}
		return cms
	}
	asAny := func(m map[string]string) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		return out
	}

	run(preview, nil)
	if got := run(update, map[string]map[string]string{"drift-" + update: found})["drift"]; got != nil {
		t.Errorf("an ordinary promotion of %s records drift %v", update, got)
	}
	if got := run(update, requests("rollback", found))["drift"]; got != nil {
		t.Errorf("a rollback's promotion of %s records drift %v: only a reconcile brings drift home", update, got)
	}
	if got := run(update, requests("reconcile", nil))["drift"]; !reflect.DeepEqual(got, map[string]any{}) {
		t.Errorf("a reconcile with no drift on record records drift %#v, want {}", got)
	}
	if got := run(update, requests("reconcile", found))["drift"]; !reflect.DeepEqual(got, asAny(found)) {
		t.Errorf("the reconcile's record of %s carries drift %#v, want %#v", update, got, found)
	}
	if got := run(preview, requests("reconcile", found))["drift"]; got != nil {
		t.Errorf("the reconcile's preview %s records drift %v: the update it lets through does", preview, got)
	}

	cmd := exec.Command(plan.Node(), "--import", "tsx", "lib/cli/history.ts", environment, "--repository", r.Dir, "--ref-prefix", "refs/heads/")
	cmd.Dir = plan.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm run history -- %s: %v\n%s", environment, err, out)
	}
	quote := func(s string) string {
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		return strings.TrimSpace(buf.String())
	}
	var drift, reconciles []string
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "  drift"):
			drift = append(drift, l)
		case strings.HasPrefix(l, "  reconcile of "):
			reconciles = append(reconciles, l)
		}
	}
	want := []string{
		fmt.Sprintf("  drift found by %s's check at %s: %s", quote(stack), quote(found["at"]), quote(found["message"])),
		"  drift: none on record for this stage (no drift check's failure was recorded)",
	}
	if !reflect.DeepEqual(drift, want) || len(reconciles) != 2 {
		t.Errorf("history of %s prints drift %q beside %d reconciles, want %q beside 2:\n%s", environment, drift, len(reconciles), want, out)
	}
}
