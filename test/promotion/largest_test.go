package promotion

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// The promote-stack task of the largest pipeline the validation allows (test/promotion/largest-task.ts) runs
// through Kargo's expressions: each update stage's lookup of its preview, the guard's `if` and message, a
// preview's record of what it previews and the record of a rollback each hold every stage of the pipeline,
// and must stay within what expr-lang compiles (conf.DefaultMaxNodes, 10,000 nodes per expression) and what
// the API server stores (its 1.5 MiB request limit, etcd's --max-request-bytes).
func TestTheLargestPipelinesTaskRunsWithinKargosLimits(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(plan.Node(), "--import", "tsx", "test/promotion/largest-task.ts")
	cmd.Dir = plan.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/promotion/largest-task.ts: %v", err)
	}
	var largest struct {
		Objects  []map[string]any  `json:"objects"`
		Previews map[string]string `json:"previews"`
		Requests map[string]string `json:"requests"`
	}
	if err := json.Unmarshal(out, &largest); err != nil {
		t.Fatal(err)
	}
	project := &plan.Project{Name: "kargo"}
	for _, o := range largest.Objects {
		u := &unstructured.Unstructured{Object: o}
		project.Objects = append(project.Objects, u)
		if u.GetKind() == "PromotionTask" {
			raw, _ := json.Marshal(o)
			t.Logf("the largest pipeline's PromotionTask: %d bytes; its largest expression: %d nodes of expr-lang's %d",
				len(raw), mostNodes(t, o), conf.DefaultMaxNodes)
			if len(raw) > 1<<20 {
				t.Errorf("the largest pipeline's PromotionTask is %d bytes; the API server stores at most 1.5 MiB, and this leaves no room", len(raw))
			}
		}
	}
	updates := make([]string, 0, len(largest.Previews))
	for u := range largest.Previews {
		updates = append(updates, u)
	}
	if len(updates) < 2 {
		t.Fatalf("the largest pipeline guards %d update stages", len(updates))
	}
	sort.Strings(updates)
	update := updates[len(updates)-1]
	preview := largest.Previews[update]
	subs, _, _ := unstructured.NestedSlice(project.OfKind("Warehouse")[0].Object, "spec", "subscriptions")
	url, _, _ := unstructured.NestedString(subs[0].(map[string]any), "git", "repoURL")
	f := freightAt(t, &Remote{URL: url}, strings.Repeat("c", 40))
	e := NewEngine(project, nil, NewFreightStore(f))

	// The guard evaluates, and refuses, with nothing previewed; the preview's own steps evaluate and run on.
	res, err := attempt(t, e, update, f)
	refused(t, res, err, f, preview, "nothing")
	res, _ = attempt(t, e, preview, f)
	admitted(t, res, preview)

	// The record of a covered rollback, evaluated as git-commit's config in the update stage.
	e.ConfigMaps = map[string]map[string]string{
		largest.Requests[update]: rollbackRequest(t, "rollback", f.Name, map[string]string{update: "b"}, []string{update}),
	}
	steps, promoVars, err := e.Steps(update)
	if err != nil {
		t.Fatal(err)
	}
	fns, err := e.functions(update)
	if err != nil {
		t.Fatal(err)
	}
	fns.freight = []*Freight{f}
	for _, s := range steps {
		if s.Uses != "git-commit" {
			continue
		}
		cfg, err := e.evaluate(Promotion{Name: update + ".1", Stage: update, Freight: f}, project.OfKind("Project")[0].GetName(), s, promoVars, map[string]any{}, fns)
		if err != nil {
			t.Fatalf("the record of %s: %v", update, err)
		}
		if msg, _ := cfg["message"].(string); !strings.Contains(msg, `"rollback":{`) {
			t.Errorf("the record of %s carries no rollback: %s", update, msg)
		}
		return
	}
	t.Fatal("no git-commit step")
}

type nodeCounter struct{ n int }

func (c *nodeCounter) Visit(*ast.Node) { c.n++ }

// mostNodes is the size, in expr-lang AST nodes, of the largest expression anywhere in the object.
func mostNodes(t *testing.T, o any) int {
	t.Helper()
	most := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			for rest := v; strings.Contains(rest, "${{"); {
				start := strings.Index(rest, "${{") + 3
				end := strings.Index(rest[start:], "}}")
				tree, err := parser.Parse(rest[start : start+end])
				if err != nil {
					t.Errorf("%q: %v", rest[start:start+end], err)
					return
				}
				c := &nodeCounter{}
				ast.Walk(&tree.Node, c)
				most = max(most, c.n)
				rest = rest[start+end+2:]
			}
		}
	}
	walk(o)
	return most
}
