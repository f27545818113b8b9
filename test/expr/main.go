// Command expr evaluates expressions with expr-lang, the library Argo Rollouts and Kargo run them with, so
// the tests check the verdicts of the real engine rather than of a copy of its logic.
//
// It reads one JSON document on stdin, {"cases": [...]}, and writes one JSON array with a verdict per case.
// Each case is one of:
//
//	{"kind": "condition", "expression": "...", "body": <JSON>}
//	    An AnalysisTemplate successCondition/failureCondition over a web metric's answer. The web metric
//	    provider without a jsonPath (its default "{$}") hands the whole decoded body to the condition as
//	    `result` (argo-rollouts v1.9.0 metricproviders/webmetric/webmetric.go), and the condition must
//	    evaluate to a bool (utils/evaluate/evaluate.go).
//	{"kind": "expr", "expression": "...", "env": {...}}
//	    Any expression over a JSON environment, such as a Kargo deep link's `if` (pkg/deeplinks/deeplinks.go).
//	{"kind": "template", "expression": "...", "env": {...}}
//	    A Go text/template over a JSON environment, such as a Kargo deep link's `url`.
//
// Verdict: {"value": <result>} or {"error": "<message>"}.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"

	"github.com/antonmedv/expr"
)

type testCase struct {
	Kind       string                 `json:"kind"`
	Expression string                 `json:"expression"`
	Body       json.RawMessage        `json:"body"`
	Env        map[string]interface{} `json:"env"`
}

type verdict struct {
	Value interface{} `json:"value,omitempty"`
	Error string      `json:"error,omitempty"`
}

func evaluate(c testCase) (v verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = verdict{Error: fmt.Sprint(r)}
		}
	}()
	switch c.Kind {
	case "condition":
		var result interface{}
		if err := json.Unmarshal(c.Body, &result); err != nil {
			return verdict{Error: "body is not JSON: " + err.Error()}
		}
		env := map[string]interface{}{"result": result}
		program, err := expr.Compile(c.Expression, expr.Env(env))
		if err != nil {
			return verdict{Error: err.Error()}
		}
		out, err := expr.Run(program, env)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		if b, ok := out.(bool); ok {
			return verdict{Value: b}
		}
		return verdict{Error: fmt.Sprintf("expected bool, but got %T", out)}
	case "expr":
		out, err := expr.Eval(c.Expression, c.Env)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		return verdict{Value: out}
	case "template":
		t, err := template.New("").Parse(c.Expression)
		if err != nil {
			return verdict{Error: err.Error()}
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, c.Env); err != nil {
			return verdict{Error: err.Error()}
		}
		return verdict{Value: buf.String()}
	}
	return verdict{Error: "unknown kind " + c.Kind}
}

func main() {
	var input struct {
		Cases []testCase `json:"cases"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&input); err != nil {
		fmt.Fprintln(os.Stderr, "reading cases:", err)
		os.Exit(2)
	}
	verdicts := make([]verdict, len(input.Cases))
	for i, c := range input.Cases {
		verdicts[i] = evaluate(c)
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		fmt.Fprintln(os.Stderr, "writing verdicts:", err)
		os.Exit(2)
	}
}
