package apiserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The packages test/go.mod names in its `tool` block; their versions are the module's (k8s.io/kubernetes,
// with every k8s.io staging module replaced by its release of the same minor, and go.etcd.io/etcd/server/v3).
var tools = map[string]string{
	"kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
	"etcd":           "go.etcd.io/etcd/server/v3",
}

// Binaries are the paths of the built servers.
type Binaries struct {
	APIServer string
	Etcd      string
}

// cacheDir is keyed by what decides the binaries: go.mod without its comments and go.sum (the pinned
// versions), the Go toolchain and the platform. $APISERVER_BIN_CACHE overrides the base folder.
func cacheDir(moduleDir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		raw, err := os.ReadFile(filepath.Join(moduleDir, name))
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") {
				fmt.Fprintln(h, line)
			}
		}
	}
	fmt.Fprintf(h, "%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	base := os.Getenv("APISERVER_BIN_CACHE")
	if base == "" {
		user, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(user, "infra-change-platform", "apiserver")
	}
	return filepath.Join(base, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// Build returns the binaries, building them with `go build` in the test module when the cache has none for
// these versions. Test packages run as parallel processes: a lock file lets one build while the others wait.
func Build(ctx context.Context, moduleDir string) (Binaries, error) {
	dir, err := cacheDir(moduleDir)
	if err != nil {
		return Binaries{}, fmt.Errorf("apiserver: the binary cache: %w", err)
	}
	bins := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}
	if exists(bins.APIServer) && exists(bins.Etcd) {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binaries{}, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Binaries{}, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return Binaries{}, fmt.Errorf("apiserver: locking %s: %w", dir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck

	// No time limit of our own: cold, on two cores, kube-apiserver takes about 4 minutes alone, and far longer on
	// a machine shared with other work, which a fixed limit once failed (go test runs with -timeout=0). ctx is
	// the caller's: an interrupted run stops the build.
	missing := map[string]string{} // name: package, of the tools not built yet
	for name, pkg := range tools {
		if !exists(filepath.Join(dir, name)) {
			missing[name] = pkg
		}
	}
	if len(missing) == 0 {
		return bins, nil
	}
	pkgs := slices.Sorted(maps.Values(missing))
	started := time.Now()
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return Binaries{}, err
	}
	defer os.RemoveAll(tmp)
	// One `go build` for both: one action graph, so what they share compiles once and the two links run side by
	// side. -ldflags=-w: no DWARF, as the test binaries link (test/go-harness.ts).
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-ldflags=-w", "-o", tmp + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = moduleDir
	// Compiled as test/go-harness.ts compiles the test binaries (GOFLAGS, which the tests inherit, and the
	// compiler's memory settings, which they do not), so the libraries they share are built once.
	cmd.Env = append(os.Environ(), "GOGC=off", "GOMEMLIMIT=1536MiB")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (stopped after %s)", ctx.Err(), time.Since(started).Round(time.Second))
		}
		return Binaries{}, fmt.Errorf("apiserver: go build %s (test/go.mod) failed: %v\n%s", strings.Join(pkgs, " "), err, output.String())
	}
	for name, pkg := range missing {
		if err := os.Rename(filepath.Join(tmp, execName(pkg)), filepath.Join(dir, name)); err != nil {
			return Binaries{}, err
		}
	}
	fmt.Fprintf(os.Stderr, "apiserver: built %s in %s into %s\n", strings.Join(pkgs, " "), time.Since(started).Round(time.Second), dir)
	return bins, nil
}

// execName is the file `go build -o DIR/` writes a main package to: its path's last element, or the one before a
// major version suffix (cmd/go/internal/load's DefaultExecName).
func execName(pkg string) string {
	elems := strings.Split(pkg, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = elems[len(elems)-2]
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return name
}

func exists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
