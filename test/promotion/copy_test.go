package promotion

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCopyCopiesAFileAndLeavesOutIgnoredOnes(t *testing.T) {
	t.Parallel()
	e, dir, _ := cloned(t)
	if _, err := runStep(t, e, dir, "copy", map[string]any{"inPath": "./main/a.txt", "outPath": "./stage/a.txt"}); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "stage", "a.txt")); err != nil || string(raw) != "a\n" {
		t.Errorf("copied %q, %v", raw, err)
	}
	if _, err := runStep(t, e, dir, "copy", map[string]any{"inPath": "./main", "outPath": "./out", "ignore": "dir/\n"}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"out/a.txt": true, "out/dir": false, "out/.git": false} {
		if _, err := os.Stat(filepath.Join(dir, path)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", path, err == nil, want)
		}
	}
}

func TestCopyOfAMissingFileErrors(t *testing.T) {
	t.Parallel()
	e, dir, _ := cloned(t)
	if res, err := runStep(t, e, dir, "copy", map[string]any{"inPath": "./main/nope.yaml", "outPath": "./stage/nope.yaml"}); err == nil || res.Status != StatusErrored {
		t.Errorf("got %s, %v", res.Status, err)
	}
}
