package promotion

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Every step kind the plan's promotions use has a runner here.
func TestEveryStepKindThePlanUsesRuns(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"PromotionTask", "Stage"} {
		for _, o := range kargoPlan(t).OfKind(kind) {
			path := []string{"spec", "steps"}
			if kind == "Stage" {
				path = []string{"spec", "promotionTemplate", "spec", "steps"}
			}
			steps, _, _ := unstructured.NestedSlice(o.Object, path...)
			for _, s := range steps {
				uses, _ := s.(map[string]any)["uses"].(string)
				if uses != "" && !slices.Contains(Kinds(), uses) {
					t.Errorf("%s %s uses step %q, which the harness cannot run", kind, o.GetName(), uses)
				}
			}
		}
	}
}

// A config field the step does not have is refused by its schema before the step runs.
func TestAnUnknownConfigFieldFailsTheStep(t *testing.T) {
	t.Parallel()
	res, err := runStep(t, nil, t.TempDir(), "git-clear", map[string]any{"path": "./stage", "paths": "./other"})
	if err == nil || res.Status != StatusFailed || !strings.Contains(err.Error(), "invalid git-clear config") {
		t.Errorf("got %s, %v", res.Status, err)
	}
}
