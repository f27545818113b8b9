package health

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"infra-change-platform/test/internal/plan"
)

// stackSchemas is the pinned Stack CRD's schema of each version it serves, as `npm run crds` records it from
// pulumi-kubernetes-operator's pulumi.com_stacks.yaml in lib/crds/generated/schemas/crds.json (committed, so
// a fork without the upstream files reads it too).
func stackSchemas(t *testing.T) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(plan.RepoRoot(), "lib", "crds", "generated", "schemas", "crds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var files map[string][]struct {
		Group, Version, Kind string
		Schema               map[string]any
	}
	if err := json.Unmarshal(raw, &files); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, crds := range files {
		for _, c := range crds {
			if c.Group == "pulumi.com" && c.Kind == "Stack" {
				out[c.Version] = c.Schema
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("lib/crds/generated/schemas/crds.json has no pulumi.com Stack")
	}
	return out
}

// stackStates is each Stack the scenarios reach, from a stage's template, as Argo CD's cache holds it: not yet
// observed, waiting for its workspace, running, succeeded, failed and retrying, stalled past the retry limit,
// a workspace that failed to install.
func stackStates(t *testing.T, template map[string]any) map[string]map[string]any {
	t.Helper()
	kind := "up"
	if spec, _ := template["spec"].(map[string]any); spec["preview"] == true {
		kind = "preview"
	}
	out := map[string]map[string]any{}
	op := &Operator{Stack: &Stack{Template: template, Generation: 1}, Clock: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)}
	keep := func(name string) { out[name] = op.Stack.Object(t).Object }
	op.Promote("c1")
	keep("not observed")
	op.WaitForWorkspace()
	keep("waiting for its workspace")
	op.StartRun("run-1")
	keep("running")
	op.RunFailed(kind, "error: AccessDenied")
	op.StartRun("run-2")
	keep("failed once, retrying")
	for i := 3; i <= maxUpdateFailures+1; i++ {
		op.RunFailed(kind, "error: AccessDenied")
		op.StartRun(fmt.Sprintf("run-%d", i))
	}
	op.RunFailed(kind, "error: AccessDenied")
	keep("stalled past the retry limit")
	op.Promote("c2")
	op.StartRun("run-next")
	op.RunSucceeded(kind)
	keep("succeeded")
	op.Promote("c3")
	op.WaitForWorkspace()
	op.WorkspaceStalled("InstallationFailed", "exit status 1")
	keep("workspace failed to install")
	return out
}

// odd are the values a field is given in place of its own: JSON null, and one of every JSON type (as the
// unstructured decoder holds them: an integer int64), whatever the field's type; "" for a string, which the
// messages are compared with, and a list holding what no list of the schema holds.
var odd = []any{nil, "", int64(7), true, []any{"x"}, map[string]any{}}

// variant is an object with one field taken away or changed.
type variant struct {
	what string
	obj  map[string]any
}

// variants walks the object along the schema: at every object it holds, each field the schema declares
// there or the object holds (metadata's, which the schema leaves open, included) is taken away and given
// each odd value; at every list, each item is taken away and replaced by each odd value; then the walk goes
// on into what the field holds. A change already made to the same field of an equal object (the same
// container of a Stack's spec in another state, or under the other version) is in `seen` and not made again.
func variants(root map[string]any, schema map[string]any, seen map[string]bool) []variant {
	var out []variant
	var parent string
	change := func(path []any, remove bool, to any) {
		what := describePath(path) + fmt.Sprintf(" = %#v", to)
		if remove {
			what = "without " + describePath(path)
		}
		if key := what + "|" + parent; seen[key] {
			return
		} else {
			seen[key] = true
		}
		obj := runtime.DeepCopyJSON(root)
		out = append(out, variant{what, with(obj, path, remove, runtime.DeepCopyJSONValue(to)).(map[string]any)})
	}
	var walk func(path []any, value any, schema map[string]any)
	walk = func(path []any, value any, schema map[string]any) {
		raw, _ := json.Marshal(value)
		parent = string(raw)
		switch v := value.(type) {
		case map[string]any:
			props, _ := schema["properties"].(map[string]any)
			keys := slices.Collect(maps.Keys(props))
			for k := range v {
				if _, ok := props[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				at := append(slices.Clone(path), k)
				parent = string(raw)
				if _, ok := v[k]; ok {
					change(at, true, nil)
				}
				for _, o := range odd {
					change(at, false, o)
				}
				child, _ := props[k].(map[string]any)
				if child == nil {
					child, _ = schema["additionalProperties"].(map[string]any)
				}
				walk(at, v[k], child)
			}
		case []any:
			items, _ := schema["items"].(map[string]any)
			for i := range v {
				at := append(slices.Clone(path), i)
				parent = string(raw)
				change(at, true, nil)
				for _, o := range odd {
					change(at, false, o)
				}
				walk(at, v[i], items)
			}
		}
	}
	walk(nil, root, schema)
	return out
}

// with is value with what path leads to taken away, or set to `to`.
func with(value any, path []any, remove bool, to any) any {
	switch v := value.(type) {
	case map[string]any:
		k := path[0].(string)
		switch {
		case len(path) > 1:
			v[k] = with(v[k], path[1:], remove, to)
		case remove:
			delete(v, k)
		default:
			v[k] = to
		}
	case []any:
		i := path[0].(int)
		switch {
		case len(path) > 1:
			v[i] = with(v[i], path[1:], remove, to)
		case remove:
			return slices.Delete(v, i, i+1)
		default:
			v[i] = to
		}
	}
	return value
}

func describePath(path []any) string {
	var b strings.Builder
	for _, step := range path {
		switch s := step.(type) {
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return b.String()
}

// Argo CD shows the Lua error of a health script in place of a health. Every Stack the pinned CRD admits
// (any field absent: spec, status, its conditions, its last update) and every one it would not (a field of
// another type: status.conditions a string, spec.commit a number) gets a health from the check, in the VM
// Argo CD runs it in, from each state PKO writes on the way.
func TestEveryStackGetsAHealth(t *testing.T) {
	override := StackOverride(t)
	schemas := stackSchemas(t)
	templates := Templates(t)
	// One stage's Stack: the others differ in names, the program and its settings, none of which the check reads.
	file := slices.Sorted(maps.Keys(templates))[0]
	tried, covered, seen := 0, map[string]bool{}, map[string]bool{}
	for _, version := range slices.Sorted(maps.Keys(schemas)) {
		states := stackStates(t, templates[file])
		for _, state := range slices.Sorted(maps.Keys(states)) {
			obj := states[state]
			obj["apiVersion"] = "pulumi.com/" + version
			for _, v := range variants(obj, schemas[version], seen) {
				tried++
				covered[strings.SplitN(strings.TrimPrefix(v.what, "without "), " =", 2)[0]] = true
				h, err := Run(override.HealthLua, &unstructured.Unstructured{Object: v.obj}, override.UseOpenLibs)
				if err != nil || !slices.Contains([]string{"Healthy", "Progressing", "Degraded"}, h.Status) {
					t.Errorf("%s %s, %s, %s: health %+v, error %v", version, file, state, v.what, h, err)
				}
			}
		}
	}
	// The walk reaches what the check reads, wherever it is absent or odd.
	for _, path := range []string{"spec", "status", "metadata.generation", "spec.commit", "status.conditions",
		"status.conditions[0]", "status.conditions[0].reason", "status.lastUpdate", "status.lastUpdate.failures"} {
		if !covered[path] {
			t.Errorf("no object without or with an odd %s was tried", path)
		}
	}
	t.Logf("%d objects tried", tried)
}
