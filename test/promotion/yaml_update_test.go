package promotion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// A Stack template of this repository, its spec.commit set to each kind of commit ID: the value stays a
// string, the template's header comment stays, and the step offers a commit message.
func TestYAMLUpdateSetsTheCommitOfAStackTemplate(t *testing.T) {
	t.Parallel()
	templates, _ := filepath.Glob(filepath.Join(plan.RepoRoot(), stacksDir(t), "*.yaml"))
	if len(templates) == 0 {
		t.Fatal("no Stack templates")
	}
	raw, err := os.ReadFile(templates[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range commitIDs {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"stage/s.yaml": string(raw)})
		res, err := runStep(t, nil, dir, "yaml-update", map[string]any{
			"path": "./stage/s.yaml", "updates": []any{map[string]any{"key": "spec.commit", "value": commit}},
		})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := os.ReadFile(filepath.Join(dir, "stage", "s.yaml"))
		var doc struct {
			Spec map[string]any `json:"spec"`
		}
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Spec["commit"] != commit {
			t.Errorf("spec.commit is %#v, want the string %s", doc.Spec["commit"], commit)
		}
		if first := strings.SplitN(string(raw), "\n", 2)[0]; !strings.HasPrefix(string(out), first) {
			t.Errorf("the template's header comment is gone:\n%s", out)
		}
		if msg, _ := res.Output["commitMessage"].(string); !strings.HasPrefix(msg, "Updated ./stage/s.yaml\n\n- spec.commit: ") || !strings.Contains(msg, commit) {
			t.Errorf("commit message %q", msg)
		}
	}
}

// pkg/yaml only replaces a key that exists: a template without spec.commit fails the promotion.
func TestYAMLUpdateOfAMissingKeyErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"s.yaml": "kind: Stack\nspec:\n  stack: a/b/c\n"})
	res, err := runStep(t, nil, dir, "yaml-update", map[string]any{
		"path": "./s.yaml", "updates": []any{map[string]any{"key": "spec.commit", "value": "abc"}},
	})
	if err == nil || res.Status != StatusErrored {
		t.Errorf("got %s, %v", res.Status, err)
	}
}
