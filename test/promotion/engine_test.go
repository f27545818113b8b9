package promotion

import (
	"strings"
	"testing"
)

// A Stage's PromotionTask is inflated as Kargo does: its steps aliased under the task's alias, each with
// the task's vars.
func TestEnvironmentStagesRunTheTaskInflated(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	e := NewEngine(kargoPlan(t), nil, NewFreightStore())
	steps, _, err := e.Steps(envs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	for i, s := range steps {
		if !strings.HasPrefix(s.As, "task-1::") {
			t.Errorf("step %d (%s) aliased %q, want task-1::…", i, s.Uses, s.As)
		}
		if len(s.Vars) == 0 {
			t.Errorf("step %s has none of the task's vars", s.As)
		}
	}
}

// task.outputs holds the outputs of the steps of the same task only, by their own alias.
func TestTaskOutputsAreThoseOfTheSameTask(t *testing.T) {
	t.Parallel()
	state := map[string]any{
		"task-1::push": map[string]any{"commit": "one"},
		"task-2::push": map[string]any{"commit": "two"},
		"push":         map[string]any{"commit": "top"},
	}
	got := env(Promotion{Stage: "dev"}, "infra", "task-2::step-8", nil, state)["task"].(map[string]any)["outputs"].(map[string]any)
	if len(got) != 1 || got["push"].(map[string]any)["commit"] != "two" {
		t.Errorf("task.outputs %v", got)
	}
}
