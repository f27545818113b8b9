package promotion

import (
	"fmt"

	"github.com/akuity/kargo/pkg/expressions"
)

// stepVars is pkg/promotion/evaluator.go Vars: the Promotion's vars, then the step's (which see the outputs
// so far), each a template over ctx and the vars before it.
func stepVars(p Promotion, project string, s step, promoVars []variable, state map[string]any, fns *functions) (map[string]any, error) {
	opts := fns.options()
	vars := map[string]any{}
	for _, v := range promoVars {
		val, err := expressions.EvaluateTemplate(v.Value, env(p, project, "", vars, nil), opts...)
		if err != nil {
			return nil, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	for _, v := range s.Vars {
		val, err := expressions.EvaluateTemplate(v.Value, env(p, project, s.As, vars, state), opts...)
		if err != nil {
			return nil, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	return vars, nil
}

// skip is pkg/promotion/evaluator.go ShouldSkip for a step with `if`: the expression, over the step's vars,
// ctx and the outputs so far, must be a bool; false skips the step (recorded as Skipped). Without `if`, a
// step runs: the harness stops at the first failure, so "skip after a failure" never arises. The status
// functions (always(), failure()...) are not offered: a step using one fails here rather than passing.
func (e *Engine) skip(p Promotion, project string, s step, promoVars []variable, state map[string]any, fns *functions) (*StepRecord, error) {
	if s.If == "" {
		return nil, nil
	}
	vars, err := stepVars(p, project, s, promoVars, state, fns)
	if err != nil {
		return nil, err
	}
	v, err := expressions.EvaluateTemplate(s.If, env(p, project, s.As, vars, state), fns.options()...)
	if err != nil {
		return nil, err
	}
	run, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("expression must evaluate to a boolean, got %T", v)
	}
	if run {
		return nil, nil
	}
	return &StepRecord{Alias: s.As, Uses: s.Uses, Statuses: []string{"Skipped"}}, nil
}
