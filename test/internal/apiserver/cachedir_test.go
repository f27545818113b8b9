package apiserver

import (
	"os"
	"path/filepath"
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
