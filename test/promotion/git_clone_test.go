package promotion

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGitCloneChecksOutEachRefAndOutputsItsCommit(t *testing.T) {
	t.Parallel()
	remote, url := smallRemote(t)
	e := NewEngine(kargoPlan(t), map[string]string{url: remote}, NewFreightStore())
	main := gitRun(t, remote, "rev-parse", "main")
	dir := t.TempDir()
	res, err := runStep(t, e, dir, "git-clone", map[string]any{
		"repoURL": url,
		"checkout": []any{
			map[string]any{"commit": main, "path": "./freight"},
			map[string]any{"branch": "stage/x", "path": "./stage", "as": "stage"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	commits := res.Output["commits"].(map[string]any)
	if commits["./freight"] != main || commits["stage"] != gitRun(t, remote, "rev-parse", "stage/x") {
		t.Errorf("commits output %v", commits)
	}
	for _, f := range []string{"freight/a.txt", "freight/dir/b.txt", "stage/x.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not checked out: %v", f, err)
		}
	}
}

func TestGitCloneRefusesAMissingBranchWithoutCreate(t *testing.T) {
	t.Parallel()
	remote, url := smallRemote(t)
	e := NewEngine(kargoPlan(t), map[string]string{url: remote}, NewFreightStore())
	res, err := runStep(t, e, t.TempDir(), "git-clone", map[string]any{
		"repoURL": url, "checkout": []any{map[string]any{"branch": "stage/y", "path": "./stage"}},
	})
	if err == nil || res.Status != StatusErrored || !strings.Contains(err.Error(), "set create=true") {
		t.Errorf("got %s, %v", res.Status, err)
	}
}

func TestGitCloneCreatesAMissingBranchAsAnEmptyOrphan(t *testing.T) {
	t.Parallel()
	needsOrphanWorktrees(t)
	remote, url := smallRemote(t)
	e := NewEngine(kargoPlan(t), map[string]string{url: remote}, NewFreightStore())
	dir := t.TempDir()
	if _, err := runStep(t, e, dir, "git-clone", map[string]any{
		"repoURL": url, "checkout": []any{map[string]any{"branch": "stage/y", "create": true, "path": "./stage"}},
	}); err != nil {
		t.Fatal(err)
	}
	if tree := gitRun(t, remote, "ls-tree", "-r", "stage/y"); tree != "" {
		t.Errorf("the new branch holds %s", tree)
	}
	if log := gitRun(t, remote, "log", "--format=%an <%ae>", "stage/y"); log != kargoAuthor(t) {
		t.Errorf("the new branch's history is by %q, want one commit by the controller, %s", log, kargoAuthor(t))
	}
}

func TestGitCloneRefusesDuplicateAliases(t *testing.T) {
	t.Parallel()
	res, err := runStep(t, nil, t.TempDir(), "git-clone", map[string]any{
		"repoURL": "https://git.example.com/small.git",
		"checkout": []any{
			map[string]any{"branch": "main", "path": "./a", "as": "x"},
			map[string]any{"branch": "main", "path": "./b", "as": "x"},
		},
	})
	if err == nil || res.Status != StatusFailed {
		t.Errorf("got %s, %v", res.Status, err)
	}
}
