package promotion

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// smallRemote is a bare repository with main holding a.txt and dir/b.txt, and a branch "stage/x" holding
// x.txt; repoURL names it.
func smallRemote(t *testing.T) (dir, url string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "small.git")
	gitRun(t, filepath.Dir(dir), "init", "--quiet", "--bare", "-b", "main", dir)
	work := filepath.Join(t.TempDir(), "w")
	gitRun(t, filepath.Dir(work), "clone", "--quiet", dir, work)
	gitRun(t, work, "checkout", "--quiet", "-b", "main")
	writeFiles(t, work, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "commit", "--quiet", "-m", "main")
	gitRun(t, work, "push", "--quiet", "origin", "main")
	gitRun(t, work, "checkout", "--quiet", "--orphan", "stage/x")
	gitRun(t, work, "rm", "-r", "--quiet", "--cached", ".")
	os.RemoveAll(filepath.Join(work, "a.txt"))
	os.RemoveAll(filepath.Join(work, "dir"))
	writeFiles(t, work, map[string]string{"x.txt": "x\n"})
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "commit", "--quiet", "-m", "stage")
	gitRun(t, work, "push", "--quiet", "origin", "stage/x")
	return dir, "https://git.example.com/small.git"
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// step runs one step kind with a config (already evaluated) in workDir, as the engine would.
func runStep(t *testing.T, e *Engine, workDir, kind string, config map[string]any) (StepResult, error) {
	t.Helper()
	if e == nil {
		e = NewEngine(kargoPlan(t), nil, NewFreightStore())
	}
	return run(context.Background(), kind, &StepContext{
		WorkDir: workDir, Project: "infra", Stage: "dev", Promotion: "dev.1", Alias: "step-1", Engine: e,
	}, config)
}

// cloned runs git-clone of the small remote's main (./main) and stage/x (./stage) into a new work dir.
func cloned(t *testing.T) (e *Engine, workDir, remote string) {
	t.Helper()
	remote, url := smallRemote(t)
	e = NewEngine(kargoPlan(t), map[string]string{url: remote}, NewFreightStore())
	workDir = t.TempDir()
	if _, err := runStep(t, e, workDir, "git-clone", map[string]any{
		"repoURL":  url,
		"checkout": []any{map[string]any{"branch": "main", "path": "./main"}, map[string]any{"branch": "stage/x", "path": "./stage"}},
	}); err != nil {
		t.Fatal(err)
	}
	return e, workDir, remote
}
