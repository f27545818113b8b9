package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"infra-change-platform/test/internal/plan"
)

// Manifest is test/upstream-mirrors.json.
type Manifest struct {
	Comment string            `json:"$comment"`
	Pins    map[string]string `json:"pins"`
	// Snapshots are the repositories some of whose files no Go module serves, each by the name lib/crds/sources.ts
	// pins it under: Command fetches them at that tag.
	Snapshots map[string]string `json:"snapshots"`
	Models    []Model           `json:"models"`
}

// Model is one part of test/ that re-implements upstream code, and the upstream files it follows.
type Model struct {
	Model   string   `json:"model"`
	In      []string `json:"in"`
	Mirrors []Mirror `json:"mirrors"`
}

// Mirror is one upstream file, by repository and path, with its sha256 at the version Pins records.
type Mirror struct {
	Repo   string `json:"repo"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// source is where a repository's files are read at our pin: its Go module (the version test/go.mod requires,
// or the go.mod of test/<in>, unless pin names lib/crds/sources.ts's entry; sub is the module's folder in the
// repository), else the snapshot `npm run upstream` fetches (snapshot.go).
type source struct{ module, pin, in, sub string }

var sources = map[string]source{
	"akuity/kargo":                      {module: "github.com/akuity/kargo"},
	"argoproj/argo-rollouts":            {module: "github.com/argoproj/argo-rollouts"},
	"kubernetes/kubernetes":             {module: "k8s.io/kubernetes"},
	"argoproj/argo-cd":                  {module: "github.com/argoproj/argo-cd/v3", pin: "argocd"},
	"pulumi/pulumi-kubernetes-operator": {pin: "pko"},
	"pulumi/pulumi-cloud-sdk":           {module: "github.com/pulumi/pulumi-cloud-sdk/go"},
	"pulumi/pulumi":                     {module: "github.com/pulumi/pulumi/pkg/v3", in: "pulumiengine", sub: "pkg/"},
}

func manifestPath() string { return filepath.Join(plan.RepoRoot(), "test", "upstream-mirrors.json") }

func load(t *testing.T) *Manifest {
	t.Helper()
	raw, err := os.ReadFile(manifestPath())
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		t.Fatalf("test/upstream-mirrors.json: %v", err)
	}
	return m
}

var (
	versions   sync.Map // repo -> version
	moduleDirs sync.Map // module@version -> dir, or error
)

// version is the version of repo we pin now: test/go.mod's requirement of its module, or lib/crds/sources.ts.
func version(repo string) (string, error) {
	if v, ok := versions.Load(repo); ok {
		return v.(string), nil
	}
	src, ok := sources[repo]
	if !ok {
		return "", fmt.Errorf("no source for %s: add it to sources in test/internal/upstream", repo)
	}
	var v string
	if src.pin != "" {
		pinned, err := plan.PinnedVersion(src.pin)
		if err != nil {
			return "", err
		}
		v = pinned
	} else {
		list := exec.Command("go", "list", "-m", "-f", "{{.Version}}", src.module)
		if src.in != "" {
			list.Dir = filepath.Join(plan.RepoRoot(), "test", src.in)
		}
		out, err := list.Output()
		if err != nil {
			return "", fmt.Errorf("go list -m %s: %w", src.module, err)
		}
		v = strings.TrimSpace(string(out))
	}
	versions.Store(repo, v)
	return v, nil
}

// moduleDir is the module's folder in the module cache at that version (downloaded when the proxy serves it
// and it is not there yet); "" when the module cannot be had.
func moduleDir(module, v string) string {
	key := module + "@" + v
	if d, ok := moduleDirs.Load(key); ok {
		return d.(string)
	}
	var info struct{ Dir string }
	out, err := exec.Command("go", "mod", "download", "-json", key).Output()
	if err == nil {
		_ = json.Unmarshal(out, &info)
	}
	moduleDirs.Store(key, info.Dir)
	return info.Dir
}

// read is the upstream file at the version we pin: from the module cache, else from the snapshot of a
// repository the manifest lists under snapshots.
func read(m *Manifest, repo, path string) ([]byte, string, error) {
	v, err := version(repo)
	if err != nil {
		return nil, "", err
	}
	if src := sources[repo]; src.module != "" {
		dir := moduleDir(src.module, v)
		if dir != "" {
			if raw, err := os.ReadFile(filepath.Join(dir, strings.TrimPrefix(path, src.sub))); err == nil {
				return raw, v, nil
			} // a nested module's file (Kargo's api/) is not in the root module: the snapshot has it
		} else if _, ok := m.Snapshots[repo]; !ok {
			return nil, v, &Absent{fmt.Sprintf("the Go module proxy did not serve %s@%s, which holds %s", src.module, v, path)}
		}
	}
	if _, ok := m.Snapshots[repo]; !ok {
		return nil, v, fmt.Errorf("no Go module serves %s %s at %s: list %s under snapshots in "+
			"test/upstream-mirrors.json, so that `%s` fetches it", repo, path, v, repo, Command)
	}
	raw, err := Show(repo, v, path)
	return raw, v, err
}

func digest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// The tripwire: each upstream file a model follows is, at the version we pin now, the file the model was
// written against. UPSTREAM_MIRRORS_UPDATE=1 records the hashes and pins anew, once the models are re-read.
func TestEachModelsUpstreamFilesAreThoseItWasWrittenAgainst(t *testing.T) {
	m := load(t)
	update := os.Getenv("UPSTREAM_MIRRORS_UPDATE") == "1"
	for i := range m.Models {
		model := &m.Models[i]
		for j := range model.Mirrors {
			mirror := &model.Mirrors[j]
			t.Run(model.Model+"/"+mirror.Repo+"/"+mirror.Path, func(t *testing.T) {
				raw, v, err := read(m, mirror.Repo, mirror.Path)
				if a := (*Absent)(nil); errors.As(err, &a) {
					t.Skipf("NOT CHECKED: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				got := digest(raw)
				if update {
					mirror.SHA256, m.Pins[mirror.Repo] = got, v
					return
				}
				if got != mirror.SHA256 {
					t.Errorf("UPSTREAM CHANGED: the model %q (%s) follows %s %s, recorded at %s; at %s that file is "+
						"different (sha256 %s, recorded %s). Re-read github.com/%s/blob/%s/%s, bring the model in line, "+
						"then record it: UPSTREAM_MIRRORS_UPDATE=1 go test ./internal/upstream (from test/)",
						model.Model, strings.Join(model.In, ", "), mirror.Repo, mirror.Path, m.Pins[mirror.Repo], v,
						got, mirror.SHA256, mirror.Repo, v, mirror.Path)
				}
			})
		}
	}
	if update {
		out, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(manifestPath(), append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("recorded test/upstream-mirrors.json; run prettier on it")
	}
}

// Each model names, in its own source, every upstream file it follows (so that a reader of the model finds
// it, and the manifest cannot list a file the model does not claim), and every repository it follows is pinned.
func TestEachModelNamesTheUpstreamFilesItFollows(t *testing.T) {
	m := load(t)
	if len(m.Models) == 0 {
		t.Fatal("test/upstream-mirrors.json lists no model")
	}
	// Command fetches a snapshot at the tag lib/crds/sources.ts pins; the check reads it at the version test/go.mod
	// requires: they must be one.
	for repo, name := range m.Snapshots {
		fetched, err := plan.PinnedVersion(name)
		if err != nil {
			t.Errorf("snapshots: %s: %v", repo, err)
			continue
		}
		if read, err := version(repo); err != nil || read != fetched {
			t.Errorf("snapshots: `%s` fetches %s at %s (lib/crds/sources.ts pinned.%s), the check reads it at %q (%v)",
				Command, repo, fetched, name, read, err)
		}
	}
	for _, model := range m.Models {
		var text strings.Builder
		for _, in := range model.In {
			raw, err := os.ReadFile(filepath.Join(plan.RepoRoot(), in))
			if err != nil {
				t.Errorf("%s: %v", model.Model, err)
			}
			text.Write(raw)
		}
		if len(model.Mirrors) == 0 {
			t.Errorf("%s names no upstream file", model.Model)
		}
		for _, mirror := range model.Mirrors {
			if !strings.Contains(text.String(), filepath.Base(mirror.Path)) {
				t.Errorf("%s (%s) does not name %s %s, which the manifest says it follows", model.Model, strings.Join(model.In, ", "), mirror.Repo, mirror.Path)
			}
			if _, ok := sources[mirror.Repo]; !ok || m.Pins[mirror.Repo] == "" {
				t.Errorf("%s: %s has no source or no recorded pin", model.Model, mirror.Repo)
			}
			if len(mirror.SHA256) != 64 {
				t.Errorf("%s: %s %s has no recorded sha256", model.Model, mirror.Repo, mirror.Path)
			}
		}
	}
}
