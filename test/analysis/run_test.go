package analysis

import (
	"testing"

	"infra-change-platform/test/internal/plan"
)

// Every Stage that verifies gets a run with every template argument resolved the way Kargo and Rollouts
// resolve them: its own stack, the Freight's commit, the token still read from the Secret by the controller.
func TestEveryVerifyingStageBuildsARun(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	freight := gitCommit{RepoURL: repoURL(t, kargo), ID: commit}
	verifying := 0
	for _, stage := range kargo.OfKind("Stage") {
		if _, found := stage.Object["spec"].(map[string]any)["verification"]; !found {
			continue
		}
		verifying++
		run := newRun(t, kargo, stage, freight)
		if v := argValue(run, "commit"); v == nil || *v != commit {
			t.Errorf("%s: commit %v, want %s", stage.GetName(), v, commit)
		}
		if v := argValue(run, "stack"); v == nil || *v == "" {
			t.Errorf("%s: no stack argument", stage.GetName())
		}
		for _, a := range run.Spec.Args {
			if a.Value == nil && (a.ValueFrom == nil || a.ValueFrom.SecretKeyRef == nil) {
				t.Errorf("%s: argument %s has no value", stage.GetName(), a.Name)
			}
		}
	}
	if verifying == 0 {
		t.Fatal("no Stage in the plan verifies")
	}
}
