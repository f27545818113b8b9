package promotion

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/akuity/kargo/pkg/expressions"
	"github.com/expr-lang/expr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// An expression, where the plan emits it.
type emitted struct {
	project, kind, name string
	path                []string
	template            string
}

func (e emitted) String() string {
	return fmt.Sprintf("%s %s/%s %s: %q", e.project, e.kind, e.name, strings.Join(e.path, "."), e.template)
}

var delimiters = regexp.MustCompile(`\$\{\{|\$\{%`)

// everyExpression walks every object of every project for strings holding a Kargo expression.
func everyExpression(t *testing.T) []emitted {
	t.Helper()
	var out []emitted
	var walk func(p *plan.Project, o *unstructured.Unstructured, path []string, v any)
	walk = func(p *plan.Project, o *unstructured.Unstructured, path []string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				walk(p, o, append(append([]string{}, path...), k), c)
			}
		case []any:
			for i, c := range v {
				walk(p, o, append(append([]string{}, path...), fmt.Sprint(i)), c)
			}
		case string:
			if delimiters.MatchString(v) {
				out = append(out, emitted{p.Name, o.GetKind(), o.GetName(), path, v})
			}
		}
	}
	for _, name := range plan.Projects {
		p := plan.Load(t, name)
		if name == "kargo" {
			p = kargoPlan(t)
		}
		for _, o := range p.Objects {
			walk(p, o, nil, o.Object)
		}
	}
	return out
}

// Commit IDs a Freight may carry: an ordinary one, and two that Kargo would turn into a number wherever an
// expression is the whole value and not quoted (pkg/expressions/json_templates.go: strconv.ParseFloat),
// digits only and digits with one "e".
var commitIDs = []string{
	"3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a",
	"1234567890123456789012345678901234567890",
	"12345678901234567890123456789012345678e1",
}

// stagesRunning is every Stage whose promotion runs the object: a Stage runs its own template, a
// PromotionTask runs in every Stage whose template uses it.
func stagesRunning(t *testing.T, e emitted) []string {
	t.Helper()
	if e.kind == "Stage" {
		return []string{e.name}
	}
	var stages []string
	for _, s := range kargoPlan(t).OfKind("Stage") {
		steps, _, _ := unstructured.NestedSlice(s.Object, "spec", "promotionTemplate", "spec", "steps")
		for _, st := range steps {
			if name, _, _ := unstructured.NestedString(st.(map[string]any), "task", "name"); name == e.name {
				stages = append(stages, s.GetName())
			}
		}
	}
	return stages
}

// evaluateInPromotion evaluates the expression as the promotion step holding it would, in the named
// Stage: ctx, the Promotion's and the task's vars, every other step's output (git-push's as Kargo's git
// client reports it) and the Freight's commit.
func evaluateInPromotion(t *testing.T, e emitted, stage, commit string) (any, error) {
	t.Helper()
	eng := NewEngine(kargoPlan(t), nil, NewFreightStore())
	steps, promoVars, err := eng.Steps(stage)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := eng.functions(stage)
	if err != nil {
		t.Fatal(err)
	}
	f := &Freight{Name: commit, Origin: fns.requested[0].Origin,
		Commits: []GitCommit{{RepoURL: fns.warehouses[fns.requested[0].Origin.Name][0], ID: commit, Branch: "main"}}}
	fns.freight = []*Freight{f}
	fns.store = NewFreightStore(f)
	p := Promotion{Name: stage + ".01j2k3", Stage: stage, Freight: f, Actor: "email:approver@example.com"}
	// The step this expression belongs to (by its index in the object's steps) and the state before it.
	stepIndex := -1
	for i, s := range e.path {
		if s == "steps" && i+1 < len(e.path) {
			fmt.Sscan(e.path[i+1], &stepIndex)
		}
	}
	state := map[string]any{}
	var own *step
	taskSteps := 0
	for i := range steps {
		s := &steps[i]
		inTask := strings.Contains(s.As, aliasSeparator)
		if (e.kind == "PromotionTask") == inTask {
			if taskSteps == stepIndex {
				own = s
			}
			taskSteps++
		}
		if s.Uses == "git-push" {
			state[s.As] = map[string]any{"commit": "9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c", "branch": "stage/" + stage}
		}
	}
	if own == nil && stepIndex >= 0 {
		t.Fatalf("%s: no step %d runs in %s", e, stepIndex, stage)
	}
	vars := map[string]any{}
	alias := ""
	var stepVars []variable
	if own != nil {
		alias, stepVars = own.As, own.Vars
	}
	opts := fns.options()
	for _, v := range append(append([]variable{}, promoVars...), stepVars...) {
		val, err := expressions.EvaluateTemplate(v.Value, env(p, fns.project, alias, vars, state), opts...)
		if err != nil {
			return nil, fmt.Errorf("var %s: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	return expressions.EvaluateTemplate(e.template, env(p, fns.project, alias, vars, state), opts...)
}

// evaluateInVerification evaluates a verification arg as Kargo's Stage reconciler builds the AnalysisRun
// (pkg/controller/stages/regular_stages.go, pkg/rollouts/analysis_run_builder.go): ctx.project and
// ctx.stage, the Freight functions; an arg that is not a string is an error there.
func evaluateInVerification(t *testing.T, e emitted, commit string) (any, error) {
	t.Helper()
	eng := NewEngine(kargoPlan(t), nil, NewFreightStore())
	fns, err := eng.functions(e.name)
	if err != nil {
		t.Fatal(err)
	}
	fns.freight = []*Freight{{Name: commit, Origin: fns.requested[0].Origin,
		Commits: []GitCommit{{RepoURL: fns.warehouses[fns.requested[0].Origin.Name][0], ID: commit}}}}
	env := map[string]any{"ctx": map[string]any{"project": fns.project, "stage": e.name}}
	return expressions.EvaluateTemplate(e.template, env, fns.options()...)
}

// The types each expression must evaluate to: strings, except a gate's record of approvals (a list of
// actors). A new kind of expression is a string until this says otherwise.
func wantType(e emitted) string {
	// A step's `if` must be a bool (akuity/kargo v1.11.2 pkg/promotion/evaluator.go ShouldSkip).
	if len(e.path) > 0 && e.path[len(e.path)-1] == "if" {
		return "bool"
	}
	if e.kind == "Stage" && len(e.path) > 2 && e.path[len(e.path)-2] == "values" {
		return "[]string"
	}
	return "string"
}

func typeOf(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case []any:
		for _, x := range v {
			if _, ok := x.(string); !ok {
				return fmt.Sprintf("[]%T", x)
			}
		}
		return "[]string"
	default:
		return fmt.Sprintf("%T", v)
	}
}

func TestEveryExpressionEvaluates(t *testing.T) {
	t.Parallel()
	all := everyExpression(t)
	if len(all) == 0 {
		t.Fatal("the plan holds no expression")
	}
	for _, e := range all {
		where := strings.Join(e.path, ".")
		for _, commit := range commitIDs {
			var results []any
			var errs []error
			switch {
			case e.project == "kargo" && (e.kind == "PromotionTask" || e.kind == "Stage") &&
				(strings.HasPrefix(where, "spec.steps.") || strings.HasPrefix(where, "spec.vars.") ||
					strings.HasPrefix(where, "spec.promotionTemplate.spec.")):
				stages := stagesRunning(t, e)
				if len(stages) == 0 {
					t.Errorf("%s: no Stage runs it", e)
				}
				for _, s := range stages {
					v, err := evaluateInPromotion(t, e, s, commit)
					results, errs = append(results, v), append(errs, err)
				}
			case e.project == "kargo" && e.kind == "Stage" && strings.HasPrefix(where, "spec.verification.args."):
				v, err := evaluateInVerification(t, e, commit)
				results, errs = append(results, v), append(errs, err)
			default:
				t.Errorf("%s: the harness does not know where Kargo evaluates this; teach TestEveryExpressionEvaluates", e)
				continue
			}
			for i, v := range results {
				if errs[i] != nil {
					t.Errorf("%s with commit %s: %v", e, commit, errs[i])
					continue
				}
				if got := typeOf(v); got != wantType(e) {
					t.Errorf("%s with commit %s: evaluates to %s %#v, want a %s", e, commit, got, v, wantType(e))
				}
				if s, ok := v.(string); ok && (strings.Contains(s, "${{") || strings.Contains(s, "<nil>") || s == "") {
					t.Errorf("%s with commit %s: evaluates to %q", e, commit, s)
				}
				if strings.Contains(e.template, "commitFrom") && !strings.Contains(fmt.Sprint(v), commit) {
					t.Errorf("%s: evaluates to %v, without the Freight's commit %s", e, v, commit)
				}
			}
		}
	}
}

// An unquoted commit ID that reads as a number becomes one, which a verification arg must not be: the
// case quote() is there for, shown on Kargo's evaluator.
func TestAnUnquotedNumericCommitIsANumber(t *testing.T) {
	t.Parallel()
	for _, commit := range commitIDs[1:] {
		v, err := expressions.EvaluateTemplate(`${{ commit }}`, map[string]any{"commit": commit})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := v.(float64); !ok {
			t.Errorf("unquoted, %s evaluates to %T, want a float64", commit, v)
		}
		if v, _ = expressions.EvaluateTemplate(`${{ quote(commit) }}`, map[string]any{"commit": commit}); v != commit {
			t.Errorf("quoted, %s evaluates to %#v", commit, v)
		}
	}
}

// link is a DeepLink of the ProjectConfig (stageLinks, freightLinks).
type link struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
	If          string `json:"if,omitempty"`
}

// resolve is how Kargo's UI links are evaluated (akuity/kargo v1.11.2 pkg/deeplinks/deeplinks.go
// EvaluateLinks, which imports the API module): `if` with expr-lang over the context, then the URL as a Go
// text/template with sprig's generic functions. A link whose condition is false is left out.
func resolve(l link, ctx map[string]any) (string, bool, error) {
	if l.If != "" {
		out, err := expr.Eval(l.If, ctx)
		if err != nil {
			return "", false, err
		}
		ok, isBool := out.(bool)
		if !isBool {
			return "", false, fmt.Errorf("condition evaluated to non-boolean value %T", out)
		}
		if !ok {
			return "", false, nil
		}
	}
	funcs := sprig.GenericFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	delete(funcs, "getHostByName")
	tpl, err := template.New("").Funcs(funcs).Parse(l.URL)
	if err != nil {
		return "", false, err
	}
	var buf bytes.Buffer
	if err := tpl.Execute(&buf, ctx); err != nil {
		return "", false, err
	}
	return buf.String(), true, nil
}

func links(t *testing.T, field string) []link {
	t.Helper()
	var out []link
	for _, pc := range kargoPlan(t).OfKind("ProjectConfig") {
		raw, _, _ := unstructured.NestedSlice(pc.Object, "spec", field)
		var ls []link
		plan.Into(t, raw, &ls)
		out = append(out, ls...)
	}
	return out
}

// Each environment stage links to the Pulumi Cloud stack its verification reads, and nothing else does.
func TestStageLinksNameEachStagesStack(t *testing.T) {
	t.Parallel()
	ls := links(t, "stageLinks")
	for _, s := range kargoPlan(t).OfKind("Stage") {
		stack := ""
		args, _, _ := unstructured.NestedSlice(s.Object, "spec", "verification", "args")
		for _, a := range args {
			if a.(map[string]any)["name"] == "stack" {
				stack = a.(map[string]any)["value"].(string)
			}
		}
		var urls []string
		for _, l := range ls {
			url, ok, err := resolve(l, map[string]any{"stage": s.Object})
			if err != nil {
				t.Errorf("stage link %q for %s: %v", l.Title, s.GetName(), err)
			} else if ok {
				urls = append(urls, url)
			}
		}
		switch {
		case stack == "" && len(urls) > 0:
			t.Errorf("%s verifies no stack but links to %v", s.GetName(), urls)
		case stack != "" && (len(urls) != 1 || !strings.HasSuffix(urls[0], "/"+stack)):
			t.Errorf("%s verifies stack %s, links to %v", s.GetName(), stack, urls)
		}
	}
}

// Freight links to its commit, and Freight without commits has no link and no error.
func TestFreightLinksNameTheCommit(t *testing.T) {
	t.Parallel()
	ls := links(t, "freightLinks")
	if len(ls) == 0 {
		t.Fatal("no freightLinks")
	}
	for _, commit := range commitIDs {
		freight := map[string]any{
			"metadata": map[string]any{"name": commit, "namespace": "infra"},
			"origin":   map[string]any{"kind": "Warehouse", "name": "program"},
			"commits":  []any{map[string]any{"repoURL": repoURL(t), "id": commit, "branch": "main"}},
		}
		for _, l := range ls {
			url, ok, err := resolve(l, map[string]any{"freight": freight})
			if err != nil || !ok || !strings.HasSuffix(url, "/commit/"+commit) {
				t.Errorf("freight link %q: %q shown %v, error %v; want the commit's page", l.Title, url, ok, err)
			}
			if _, ok, err := resolve(l, map[string]any{"freight": map[string]any{"metadata": freight["metadata"]}}); ok || err != nil {
				t.Errorf("freight link %q for Freight without commits: shown %v, error %v", l.Title, ok, err)
			}
		}
	}
}
