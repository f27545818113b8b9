package promotion

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFileWriteWritesOwnerOnlyAndOverwritesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := runStep(t, nil, dir, "file-write", map[string]any{"path": "./stage/README.md", "contents": "one\n"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "stage", "README.md"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written with %v, %v; want mode 0600", fi.Mode(), err)
	}
	if res, err := runStep(t, nil, dir, "file-write", map[string]any{"path": "./stage/README.md", "contents": "two\n"}); err == nil || res.Status != StatusFailed {
		t.Errorf("overwrote without overwrite: %s, %v", res.Status, err)
	}
	if _, err := runStep(t, nil, dir, "file-write", map[string]any{"path": "./stage/README.md", "contents": "two\n", "overwrite": true}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "stage", "README.md")); string(raw) != "two\n" {
		t.Errorf("contents %q", raw)
	}
}

func TestFileWriteRefusesPathsOutsideTheWorkDirAndIntoGit(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"../x", "/tmp/x", ".git/config"} {
		if res, err := runStep(t, nil, t.TempDir(), "file-write", map[string]any{"path": path, "contents": "x"}); err == nil || res.Status != StatusFailed {
			t.Errorf("%s: got %s, %v", path, res.Status, err)
		}
	}
}
