package promotion

import (
	"fmt"
	"path"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// checkDriftCheck asserts an update stage's branch holds its drift check (lib/pipeline/drift.ts) as the
// promotion wrote it: the drift template of the Freight's commit, pinned to the same commit, its reconcile
// request the value the promotion's own step evaluated (the Promotion's name), all else as the template.
func checkDriftCheck(t *testing.T, r *Remote, stage, commit, onBranch string, res *Result) string {
	t.Helper()
	app := appOf(t, stage)
	var want, got map[string]any
	template, ok := r.File(t, commit, path.Join(stacksDir(t), app.Drift))
	if !ok {
		t.Fatalf("%s: no drift template %s at %s", stage, app.Drift, commit)
	}
	if err := yaml.Unmarshal([]byte(template), &want); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(onBranch), &got); err != nil || got == nil {
		t.Fatalf("%s: %s on the branch: %v", stage, app.Drift, err)
	}
	request, _, _ := unstructured.NestedString(got, "metadata", "annotations", reconcileRequest)
	if request == "" || request != driftRequestOf(t, res) {
		t.Errorf("%s: the drift check's reconcile request is %q, want the promotion's %q", stage, request, driftRequestOf(t, res))
	}
	_ = unstructured.SetNestedField(want, commit, "spec", "commit")
	_ = unstructured.SetNestedField(want, request, "metadata", "annotations", reconcileRequest)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %s on the branch is\n%s\nwant the template of %s with spec.commit %q", stage, app.Drift, onBranch, commit, commit)
	}
	return request
}

// driftRequestOf is the reconcile request the promotion's drift step wrote, as Kargo evaluated it.
func driftRequestOf(t *testing.T, res *Result) string {
	t.Helper()
	for _, s := range res.Steps {
		updates, _ := s.Config["updates"].([]any)
		for _, u := range updates {
			if u := u.(map[string]any); strings.HasSuffix(u["key"].(string), "reconciliation-request") {
				return fmt.Sprint(u["value"])
			}
		}
	}
	return ""
}

// Promoting an update stage's Freight again (how drift is brought home: `npm run rollback -- <env>
// --reconcile`) rewrites its drift check with a new reconcile request, so PKO runs the check again at the
// same commit even after it stopped retrying on drift; the stage's other stages skip the drift steps.
func TestPromotingAnUpdateStageAgainRunsItsDriftCheckAgain(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	var stage string
	for _, s := range envs {
		if appOf(t, s).Drift != "" {
			stage = s
			break
		}
	}
	if stage == "" {
		t.Fatal("no update stage has a drift check (verification.driftInterval off?)")
	}
	r := remoteWithStageBranch(t, stage)
	first := mustPromote(t, r, stage, r.A)
	checkPromoted(t, r, stage, r.A, first)
	before := r.Ref(t, appOf(t, stage).Branch)
	again := mustPromote(t, r, stage, r.A)
	checkPromoted(t, r, stage, r.A, again)
	if driftRequestOf(t, first) == driftRequestOf(t, again) {
		t.Errorf("both promotions asked PKO for the same run: %q", driftRequestOf(t, again))
	}
	if after := r.Ref(t, appOf(t, stage).Branch); after == before {
		t.Error("the branch did not move: Argo CD would apply nothing and PKO run nothing")
	}
	for _, s := range envs {
		if appOf(t, s).Drift == "" {
			other := remoteWithStageBranch(t, s)
			res := mustPromote(t, other, s, other.A)
			if rec := driftStep(res); rec == nil || rec.Result.Status != StatusSkipped {
				t.Errorf("%s (no drift check): the drift steps ran: %+v", s, rec)
			}
			return
		}
	}
}

// driftStep is the record of the promotion's drift copy step (the second copy).
func driftStep(res *Result) *StepRecord {
	seen := 0
	for i := range res.Steps {
		if res.Steps[i].Uses == "copy" {
			if seen++; seen == 2 {
				return &res.Steps[i]
			}
		}
	}
	return nil
}
