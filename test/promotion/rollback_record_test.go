package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// rollbackRequest is the ConfigMap `npm run rollback` writes in the project's namespace, rollback-<environment>:
// all strings, `from` and `stages` JSON.
func rollbackRequest(t *testing.T, kind, to string, from map[string]string, stages []string) map[string]string {
	t.Helper()
	f, _ := json.Marshal(from)
	s, _ := json.Marshal(stages)
	return map[string]string{
		"kind": kind, "to": to, "from": string(f), "stages": string(s),
		"by": "carol@example.com", "message": "the release broke \"uploads\"\nroll back", "at": "2026-11-28T11:00:00Z",
	}
}

// The record of a promotion into an update stage carries its environment's rollback request only when the
// request covers it: into one of its stages, of its Freight `to`; with the Freight that stage ran before.
func TestTheRecordCarriesTheRollbackRequestOnlyForItsFreightAndStages(t *testing.T) {
	t.Parallel()
	previews, updates := guardedUpdates(t)
	update, preview := updates[len(updates)-1], previews[updates[len(updates)-1]]
	name := "rollback-" + environmentOf(t, update)
	r := newRemote(t)
	for _, s := range []string{preview, update} {
		kargoCreatedBranch(t, r, appOf(t, s).Branch)
	}
	a, b := freightAt(t, r, r.A), freightAt(t, r, r.B)
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(a, b))
	n := 0
	run := func(stage string, f *Freight, request map[string]string, under ...string) map[string]any {
		t.Helper()
		n++
		e.ConfigMaps = map[string]map[string]string{}
		if request != nil {
			e.ConfigMaps[append(under, name)[0]] = request
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := e.Promote(ctx, Promotion{Name: fmt.Sprintf("%s.%d", stage, n), Stage: stage, Freight: f, Actor: "email:carol@example.com", WorkDir: t.TempDir()}); err != nil {
			t.Fatalf("promoting into %s: %v", stage, err)
		}
		return recordOf(t, r, r.Ref(t, appOf(t, stage).Branch))
	}
	covering := rollbackRequest(t, "rollback", a.Name, map[string]string{update: b.Name}, []string{update})

	// The request covers the update stage's promotion of `to`, not its preview's.
	if got := run(preview, a, covering)["rollback"]; got != nil {
		t.Errorf("the preview %s's record carries %v: the request lists update stages only", preview, got)
	}
	want := map[string]any{"kind": "rollback", "to": a.Name, "from": b.Name, "by": covering["by"], "message": covering["message"], "at": covering["at"]}
	if got := run(update, a, covering)["rollback"]; !reflect.DeepEqual(got, want) {
		t.Errorf("the record of %s into %s carries rollback %#v, want %#v", a.Name, update, got, want)
	}
	reconcile := rollbackRequest(t, "reconcile", a.Name, map[string]string{update: a.Name}, []string{update})
	if got, _ := run(update, a, reconcile)["rollback"].(map[string]any); got["kind"] != "reconcile" || got["from"] != a.Name {
		t.Errorf("a reconcile's record carries %#v", got)
	}
	// Not for other Freight, not for a stage it does not list, not without a request, not another environment's.
	for what, request := range map[string]map[string]string{
		"another Freight": rollbackRequest(t, "rollback", b.Name, map[string]string{update: b.Name}, []string{update}),
		"another stage":   rollbackRequest(t, "rollback", a.Name, map[string]string{preview: b.Name}, []string{preview}),
		"no request":      nil,
	} {
		if got := run(update, a, request)["rollback"]; got != nil {
			t.Errorf("%s: the record of %s carries rollback %v", what, update, got)
		}
	}
	if got := run(update, a, covering, name+"-other")["rollback"]; got != nil {
		t.Errorf("another environment's request: the record of %s carries rollback %v", update, got)
	}
}
