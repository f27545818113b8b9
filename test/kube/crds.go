package kube

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// crdSource is one upstream folder of CRDs at the version the platform pins.
type crdSource struct {
	name string // e.g. "Kargo v1.11.2 charts/kargo/resources/crds"
	dir  string
}

// crdSources are the CRDs of every custom resource we emit, from the module archives at the pinned tags:
// Kargo and Argo Rollouts at their test/go.mod versions, Argo CD, Karpenter and the CSI snapshot CRDs at
// lib/crds/sources.ts's pins (their modules are not built here, but their archives download). PKO's module is not served by the proxy: its CRDs come
// from ../shared/crds/pko (or $CRDS_DIR/pko), and pkoMissing says why they are absent when they are.
func crdSources(t testing.TB) (sources []crdSource, pkoMissing string) {
	t.Helper()
	moduleDir := filepath.Join(plan.RepoRoot(), "test")
	for _, m := range []struct{ path, folder string }{
		{"github.com/akuity/kargo", "charts/kargo/resources/crds"},
		{"github.com/argoproj/argo-rollouts", "manifests/crds"},
	} {
		dir, version := moduleArchive(t, moduleDir, m.path)
		sources = append(sources, crdSource{fmt.Sprintf("%s %s %s", m.path, version, m.folder), filepath.Join(dir, m.folder)})
	}
	argocd := pinnedArgoCD(t)
	major := strings.SplitN(argocd, ".", 2)[0]
	dir, _ := moduleArchive(t, os.TempDir(), "github.com/argoproj/argo-cd/"+major+"@"+argocd)
	sources = append(sources, crdSource{"github.com/argoproj/argo-cd " + argocd + " manifests/crds", filepath.Join(dir, "manifests/crds")})
	sources = append(sources, karpenterCRDs(t))
	// Argo Events' CRDs (its EventBus, EventSource and Sensor are in every plan), from the module
	// test/argoevents runs, at lib/crds/sources.ts's pin.
	events, err := plan.PinnedVersion("argoEvents")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ = moduleArchive(t, os.TempDir(), "github.com/argoproj/argo-events@"+events)
	sources = append(sources, crdSource{"github.com/argoproj/argo-events " + events + " manifests/base/crds", filepath.Join(dir, "manifests/base/crds")})
	// The CSI snapshot CRDs the EKS snapshot-controller add-on installs (the plugin cache's snapshot), from
	// external-snapshotter's client module, whose root is the repository's client/ folder.
	snapshotter, err := plan.PinnedVersion("externalSnapshotter")
	if err != nil {
		t.Fatal(err)
	}
	dir, _ = moduleArchive(t, os.TempDir(), "github.com/kubernetes-csi/external-snapshotter/client/v8@"+snapshotter)
	sources = append(sources, crdSource{"github.com/kubernetes-csi/external-snapshotter/client/v8 " + snapshotter + " config/crd", filepath.Join(dir, "config/crd")})

	shared := os.Getenv("CRDS_DIR")
	if shared == "" {
		shared = filepath.Join(plan.RepoRoot(), "..", "shared", "crds")
	}
	pko := filepath.Join(shared, "pko")
	if files, _ := filepath.Glob(filepath.Join(pko, "pulumi.com_stacks.yaml")); len(files) == 0 {
		return sources, fmt.Sprintf("PKO's CRDs are not in %s (a fork without ../shared): the Stack objects of stacks/ are not applied here; npm test's schema check (test/validate-plan.test.ts) still validates them", pko)
	}
	return append(sources, crdSource{"PKO v2.9.0 CRDs from " + pko, pko}), ""
}

// moduleArchive is a module's folder in the module cache, downloaded by `go mod download` (the version the
// test module requires when path has no @version).
func moduleArchive(t testing.TB, dir, path string) (string, string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", path)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Version, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Error != "" || info.Dir == "" {
		t.Fatalf("go mod download %s (for its CRDs): %v %s %s", path, err, info.Error, stderr.String())
	}
	return info.Dir, info.Version
}

// karpenterCRDs are Karpenter's CRDs (pkg/apis/crds) at lib/crds/sources.ts's pin, read out of the module
// zip: `go mod download` downloads it but reports an error, as the module needs a newer go than the one
// here, and leaves it unextracted; nothing of it is built.
func karpenterCRDs(t testing.TB) crdSource {
	t.Helper()
	version, err := plan.PinnedVersion("karpenter")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/aws/karpenter-provider-aws"
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	out, _ := cmd.Output()
	var info struct{ Zip, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Zip == "" {
		t.Fatalf("go mod download %s@%s (for its CRDs): no module zip: %v %s", module, version, err, info.Error)
	}
	archive, err := zip.OpenReader(info.Zip)
	if err != nil {
		t.Fatalf("%s: %v", info.Zip, err)
	}
	defer archive.Close()
	dir := t.TempDir()
	prefix := module + "@" + version + "/pkg/apis/crds/"
	for _, f := range archive.File {
		if !strings.HasPrefix(f.Name, prefix) || !strings.HasSuffix(f.Name, ".yaml") {
			continue
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return crdSource{fmt.Sprintf("%s %s pkg/apis/crds", module, version), dir}
}

// pinnedArgoCD is the Argo CD version lib/crds/sources.ts pins (the chart's appVersion), so the typed
// resources, our validation and this server read the same CRDs.
func pinnedArgoCD(t testing.TB) string {
	version, err := plan.PinnedVersion("argocd")
	if err != nil {
		t.Fatal(err)
	}
	return version
}

// readCRDs is every CustomResourceDefinition in the sources' YAML files.
func readCRDs(t testing.TB, sources []crdSource) []*unstructured.Unstructured {
	t.Helper()
	var crds []*unstructured.Unstructured
	for _, s := range sources {
		files, _ := filepath.Glob(filepath.Join(s.dir, "*.yaml"))
		sort.Strings(files)
		for _, f := range files {
			for _, o := range readYAML(t, f) {
				if o.GetKind() == "CustomResourceDefinition" {
					crds = append(crds, o)
				}
			}
		}
	}
	if len(crds) == 0 {
		t.Fatal("no CRDs found in the module archives")
	}
	return crds
}

func readYAML(t testing.TB, file string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, err := plan.Documents(raw)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}
