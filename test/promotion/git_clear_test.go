package promotion

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGitClearRemovesTrackedAndUntrackedFiles(t *testing.T) {
	t.Parallel()
	e, dir, _ := cloned(t)
	writeFiles(t, filepath.Join(dir, "main"), map[string]string{"untracked.txt": "u\n"})
	if _, err := runStep(t, e, dir, "git-clear", map[string]any{"path": "./main"}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "main"))
	for _, entry := range entries {
		if entry.Name() != ".git" {
			t.Errorf("%s left after git-clear", entry.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "main", ".git")); err != nil {
		t.Errorf("the work tree's .git is gone: %v", err)
	}
}
