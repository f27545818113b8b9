package analysis

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// driftMarkKey is the key a drift check's operations carry in their `environment`: the variable the drift
// Stack templates add to the workspace (stacks/*-drift.yaml, lib/pipeline/drift.ts), which the Pulumi CLI
// records by name as `pulumi.env.<NAME>` (test/pulumiengine TestDriftCheckMark runs that at pulumi/pkg/v3
// v3.274.1). Read from the templates, so a renamed variable fails here rather than passing untested.
var driftMarkKey = sync.OnceValue(func() string {
	files, _ := filepath.Glob(filepath.Join(plan.RepoRoot(), "stacks", "*-drift.yaml"))
	names := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var stack struct {
			Spec struct {
				WorkspaceTemplate struct {
					Spec struct {
						Env []struct{ Name string } `json:"env"`
					} `json:"spec"`
				} `json:"workspaceTemplate"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &stack); err != nil {
			panic(err)
		}
		for _, e := range stack.Spec.WorkspaceTemplate.Spec.Env {
			// The one the update's own template lacks: PULUMI_HOME is every workspace's.
			if strings.HasPrefix(e.Name, "PULUMI_") && e.Name != "PULUMI_HOME" {
				names[e.Name] = true
			}
		}
	}
	if len(names) != 1 {
		panic("the drift Stack templates in stacks/ do not add exactly one PULUMI_ variable to the workspace")
	}
	for name := range names {
		return "pulumi.env." + name
	}
	return ""
})

// driftCheck is an operation of a drift check: the same commit, marked as the CLI marks it ("set": the
// variable is not one of Pulumi's booleans).
func driftCheck(u updateInfo) updateInfo {
	env := map[string]string{driftMarkKey(): "set"}
	for k, v := range u.Environment {
		env[k] = v
	}
	u.Environment = env
	return u
}

// driftScenarios: a drift check previews the commit its update stage last ran, on the same stack, every
// interval; none of its operations is ever taken for the promotion's.
func driftScenarios(kind string) []scenario {
	return []scenario{
		same(scenario{name: "a drift check's failed preview of the commit, newer than the promotion's",
			setup: ops(kind, op(commit, "succeeded", t0, nil), driftCheck(op(commit, "failed", t0+100, nil)))}, successful),
		same(scenario{name: "only a drift check's succeeded preview of the commit", why: notFound,
			setup: ops(kind, driftCheck(op(commit, "succeeded", t0, nil)))}, failed),
	}
}
