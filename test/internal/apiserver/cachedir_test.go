package apiserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A comment in go.mod keeps the cached binaries; a changed version (go.sum) builds new ones.
func TestCacheKeyFollowsVersionsNotComments(t *testing.T) {
	t.Setenv("APISERVER_BIN_CACHE", t.TempDir())
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n")
	write("go.sum", "k8s.io/kubernetes v1.34.3 h1:a\n")
	key := func() string {
		d, err := cacheDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := key()
	write("go.mod", "// why\nmodule m\n\ntool k8s.io/kubernetes/cmd/kube-apiserver\n")
	if key() != first {
		t.Errorf("a comment in go.mod changed the cache folder")
	}
	write("go.sum", "k8s.io/kubernetes v1.34.4 h1:b\n")
	if key() == first {
		t.Errorf("another kube-apiserver version kept the cache folder %s", first)
	}
}

// Build renames what `go build -o DIR/` wrote: execName must be the file name Go gives each tool.
func TestExecNameIsGos(t *testing.T) {
	for _, pkg := range tools {
		out, err := exec.Command("go", "list", "-f", "{{.Target}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		if got, want := execName(pkg), filepath.Base(strings.TrimSpace(string(out))); got != want {
			t.Errorf("execName(%s) = %q, go build writes %q", pkg, got, want)
		}
	}
}
