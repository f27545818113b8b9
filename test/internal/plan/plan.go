package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Projects in the order they deploy.
var Projects = []string{"cluster", "cluster-setup", "kargo"}

// Resource is one entry of a project's resources.json.
type Resource struct {
	URN     string         `json:"urn"`
	Type    string         `json:"type"`
	Name    string         `json:"name"`
	Parent  string         `json:"parent"`
	Inputs  map[string]any `json:"inputs"`
	Options map[string]any `json:"options"`
}

// Project is what the plan holds for one project.
type Project struct {
	Name      string
	Objects   []*unstructured.Unstructured
	Resources []Resource
	Outputs   map[string]any
}

var (
	once    sync.Once
	dir     string
	loadErr error
)

// RepoRoot is the repository holding this test module (the folder with package.json above test/).
func RepoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "test", "go.mod")); err == nil {
				return d
			}
		}
	}
	panic("no repository root (package.json beside test/go.mod) above " + wd)
}

// Node is the Node.js the TypeScript side runs on: $NODE (npm run test:engines passes the one running it,
// which .ci/run chose to satisfy package.json's engines), else `node` on PATH.
func Node() string {
	if n := os.Getenv("NODE"); n != "" {
		return n
	}
	return "node"
}

// Dir is the plan's folder: $PLAN_DIR when the runner already wrote one (npm test does, once for every
// package), otherwise written here once per test binary.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if d := os.Getenv("PLAN_DIR"); d != "" {
			dir = d
			return
		}
		out, err := os.MkdirTemp("", "plan-")
		if err != nil {
			loadErr = err
			return
		}
		cmd := exec.Command(Node(), "--import", "tsx", "lib/cli/plan.ts", "--out", out)
		cmd.Dir = RepoRoot()
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			loadErr = fmt.Errorf("npm run plan -- --out %s: %v\n%s", out, err, stderr.String())
			return
		}
		dir = out
	})
	if loadErr != nil {
		t.Fatalf("the offline plan: %v", loadErr)
	}
	return dir
}

// Load reads one project of the plan.
func Load(t testing.TB, project string) *Project {
	t.Helper()
	base := filepath.Join(Dir(t), project)
	p := &Project{Name: project}
	raw, err := os.ReadFile(filepath.Join(base, "manifests.yaml"))
	if err != nil {
		t.Fatalf("plan of %s: %v", project, err)
	}
	if p.Objects, err = Documents(raw); err != nil {
		t.Fatalf("plan of %s: manifests.yaml: %v", project, err)
	}
	raw, err = os.ReadFile(filepath.Join(base, "resources.json"))
	if err != nil {
		t.Fatalf("plan of %s: %v", project, err)
	}
	var resources struct {
		Resources []Resource     `json:"resources"`
		Outputs   map[string]any `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &resources); err != nil {
		t.Fatalf("plan of %s: resources.json: %v", project, err)
	}
	p.Resources, p.Outputs = resources.Resources, resources.Outputs
	return p
}

// OfKind is every object of that kind, in plan order.
func (p *Project) OfKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range p.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Object is the one object of that kind and name; the test fails without it.
func (p *Project) Object(t testing.TB, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range p.OfKind(kind) {
		if o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the %s plan has no %s %q", p.Name, kind, name)
	return nil
}

// ResourcesOfType is every Pulumi resource of that type token (e.g. "github:index/repositoryFile:RepositoryFile").
func (p *Project) ResourcesOfType(token string) []Resource {
	var out []Resource
	for _, r := range p.Resources {
		if r.Type == token {
			out = append(out, r)
		}
	}
	return out
}

// Into converts an object (or any part of one) into a typed value through JSON, refusing fields the type
// does not have, as the API server's strict decoding would.
func Into(t testing.TB, from any, into any) {
	t.Helper()
	raw, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("decoding into %T: %v", into, err)
	}
}

// Documents decodes every non-empty document of a multi-document YAML (or JSON) stream.
func Documents(raw []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var object map[string]any
		if err := decoder.Decode(&object); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(object) > 0 {
			out = append(out, &unstructured.Unstructured{Object: object})
		}
	}
}

// PinnedVersion is the upstream tag lib/crds/sources.ts pins under `name` (its `pinned` object: kargo, pko,
// argocd, rollouts, karpenter, ...), as "vX.Y.Z": the version the typed resources, our validation and the
// engines here read.
func PinnedVersion(name string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(RepoRoot(), "lib", "crds", "sources.ts"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `:\s*"(v\d+\.\d+\.\d+)"`).FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf(`lib/crds/sources.ts: no pinned.%s "vX.Y.Z"`, name)
	}
	return string(m[1]), nil
}

// IncludedFiles are the files an Application's `directory.include` names: one file, or several as
// `{a,b}` (argo-cd v3.4.4 docs/user-guide/directory.md; the update stages' Applications include their drift
// check beside their Stack: lib/pipeline/stack-manifest.ts). The stage's own file comes first.
func IncludedFiles(include string) []string {
	if strings.HasPrefix(include, "{") && strings.HasSuffix(include, "}") {
		return strings.Split(include[1:len(include)-1], ",")
	}
	return []string{include}
}
