package promotion

import (
	"path/filepath"
	"testing"
)

// The branch moved on the remote after the clone (someone pushed by hand): the push rebases onto it, as
// the controller's AlwaysRebase policy does, and reports the commit it pushed.
func TestGitPushRebasesOntoARemoteThatMoved(t *testing.T) {
	t.Parallel()
	e, dir, remote := cloned(t)
	other := filepath.Join(t.TempDir(), "other")
	gitRun(t, filepath.Dir(other), "clone", "--quiet", "--branch", "stage/x", remote, other)
	writeFiles(t, other, map[string]string{"hand.txt": "h\n"})
	gitRun(t, other, "add", "-A")
	gitRun(t, other, "commit", "--quiet", "-m", "by hand")
	gitRun(t, other, "push", "--quiet", "origin", "stage/x")

	writeFiles(t, filepath.Join(dir, "stage"), map[string]string{"mine.txt": "m\n"})
	if _, err := runStep(t, e, dir, "git-commit", map[string]any{"path": "./stage", "message": "mine"}); err != nil {
		t.Fatal(err)
	}
	res, err := runStep(t, e, dir, "git-push", map[string]any{"path": "./stage", "targetBranch": "stage/x"})
	if err != nil {
		t.Fatal(err)
	}
	head := gitRun(t, remote, "rev-parse", "stage/x")
	if res.Output["commit"] != head || res.Output["branch"] != "stage/x" {
		t.Errorf("output %v, the branch is at %s", res.Output, head)
	}
	if got := gitRun(t, remote, "log", "--format=%s", "stage/x"); got != "mine\nby hand\nstage" {
		t.Errorf("history:\n%s", got)
	}
	if main := gitRun(t, remote, "log", "--format=%s", "main"); main != "main" {
		t.Errorf("main changed:\n%s", main)
	}
}
