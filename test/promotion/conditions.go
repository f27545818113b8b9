package promotion

import (
	"fmt"

	"github.com/akuity/kargo/pkg/expressions"
)

// shouldSkip is akuity/kargo v1.11.2 pkg/promotion/evaluator.go ShouldSkip: without `if`, a step is skipped
// once an earlier step failed (the engine stops at the first failure, so that never arises here); with one,
// the Promotion's and the step's vars are evaluated, then `if` over the same environment as the config, and
// the step is skipped when it is false. Anything but a boolean is an error.
func (e *Engine) shouldSkip(p Promotion, project string, s step, promoVars []variable, state map[string]any, fns *functions) (bool, error) {
	if s.If == "" {
		return false, nil
	}
	opts := fns.options()
	vars := map[string]any{}
	for _, v := range append(append([]variable{}, promoVars...), s.Vars...) {
		val, err := expressions.EvaluateTemplate(v.Value, env(p, project, s.As, vars, state), opts...)
		if err != nil {
			return false, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	v, err := expressions.EvaluateTemplate(s.If, env(p, project, s.As, vars, state), opts...)
	if err != nil {
		return false, err
	}
	ok, isBool := v.(bool)
	if !isBool {
		return false, fmt.Errorf("expression must evaluate to a boolean, got %T", v)
	}
	return !ok, nil
}
