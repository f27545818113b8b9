package kube

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/api/equality"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"infra-change-platform/test/internal/apiserver"
	"infra-change-platform/test/internal/plan"
)

// fieldManager is who applies the plan; server-side apply keeps its fields apart from anyone else's.
const fieldManager = "plan"

// source is one object to apply and where it comes from.
type source struct {
	from   string // "cluster-setup", "kargo", "stacks/dev.yaml"
	object *unstructured.Unstructured
}

func (s source) id() string {
	o := s.object
	ns := o.GetNamespace()
	if ns != "" {
		ns += "/"
	}
	return fmt.Sprintf("%s: %s %s%s", s.from, o.GetKind(), ns, o.GetName())
}

// installation is the server with the upstream CRDs and everything we emit applied, twice.
type installation struct {
	server *apiserver.Server
	// objects in the order applied.
	objects []source
	// rejected: what the server refused on the first apply, by object.
	rejected []string
	// changed: objects the second, identical apply changed (a new resourceVersion).
	changed []string
	// createdNamespaces are the namespaces the plan's objects live in that no object of the plan creates
	// (the charts and Kargo create them in a real install); created here first.
	createdNamespaces []string
	pkoMissing        string
	crds              []*unstructured.Unstructured
}

var (
	installOnce sync.Once
	installed   *installation
	installErr  string
)

// install brings the shared server up once per test binary, applies the CRDs, then every object of the
// plan's three projects in deployment order and the stacks/ Stack manifests (what Argo CD applies from
// the stage branches), twice.
func install(t *testing.T) *installation {
	t.Helper()
	installOnce.Do(func() {
		in, err := doInstall(t)
		if err != "" {
			installErr = err
			return
		}
		installed = in
	})
	if installErr != "" {
		t.Fatal(installErr)
	}
	if installed == nil {
		t.Fatal("installing the plan failed in an earlier test (see its output)")
	}
	return installed
}

func doInstall(t *testing.T) (*installation, string) {
	s := apiserver.Shared(t)
	ctx := context.Background()
	in := &installation{server: s}
	sources, pkoMissing := crdSources(t)
	in.pkoMissing = pkoMissing
	in.crds = readCRDs(t, sources)
	crdResource := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, crd := range in.crds {
		if _, err := applyOne(ctx, s.Dynamic.Resource(crdResource), crd); err != nil {
			return nil, fmt.Sprintf("the upstream CRD %s was refused: %v", crd.GetName(), err)
		}
	}
	if err := waitEstablished(ctx, s, crdResource, in.crds); err != nil {
		return nil, err.Error()
	}
	s.Mapper.Reset()

	for _, project := range plan.Projects {
		for _, o := range plan.Load(t, project).Objects {
			in.objects = append(in.objects, source{project, unredacted(o)})
		}
	}
	if pkoMissing == "" {
		// Each as the Application that includes it from its stage branch applies it.
		apps := applicationsByFile(plan.Load(t, "kargo"))
		files, _ := filepath.Glob(filepath.Join(plan.RepoRoot(), "stacks", "*.yaml"))
		sort.Strings(files)
		for _, f := range files {
			app, ok := apps[filepath.Base(f)]
			if !ok {
				return nil, fmt.Sprintf("no Application of the plan deploys stacks/%s", filepath.Base(f))
			}
			for _, o := range readYAML(t, f) {
				in.objects = append(in.objects, source{"stacks/" + filepath.Base(f), asArgoCDApplies(app.name, app.destination, o)})
			}
		}
	}
	if err := in.createNamespaces(ctx); err != nil {
		return nil, err.Error()
	}

	versions := map[string]string{}
	firsts := map[string]*unstructured.Unstructured{}
	for _, o := range in.objects {
		applied, err := in.apply(ctx, o.object)
		if err != nil {
			in.rejected = append(in.rejected, fmt.Sprintf("%s: %v", o.id(), err))
			continue
		}
		versions[o.id()] = applied.GetResourceVersion()
		firsts[o.id()] = applied
	}
	for _, o := range in.objects {
		if _, ok := versions[o.id()]; !ok {
			continue
		}
		applied, err := in.apply(ctx, o.object)
		if err != nil {
			in.changed = append(in.changed, fmt.Sprintf("%s: refused the second time: %v", o.id(), err))
		} else if v := applied.GetResourceVersion(); v != versions[o.id()] && !sameContent(firsts[o.id()], applied) {
			in.changed = append(in.changed, fmt.Sprintf("%s: resourceVersion %s became %s", o.id(), versions[o.id()], v))
		}
	}
	return in, ""
}

// createNamespaces creates each namespace an object lives in that no Namespace of the plan declares.
func (in *installation) createNamespaces(ctx context.Context) error {
	declared := map[string]bool{}
	for _, o := range in.objects {
		if o.object.GetKind() == "Namespace" && o.object.GetAPIVersion() == "v1" {
			declared[o.object.GetName()] = true
		}
	}
	seen := map[string]bool{}
	for _, o := range in.objects {
		ns := o.object.GetNamespace()
		if ns == "" || declared[ns] || seen[ns] {
			continue
		}
		seen[ns] = true
		_, err := in.server.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		in.createdNamespaces = append(in.createdNamespaces, ns)
	}
	sort.Strings(in.createdNamespaces)
	return nil
}

// resource is the dynamic client for an object's kind, through the server's discovery.
func (in *installation) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	mapping, err := in.server.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("the server serves no %s: %w", gvk, err)
	}
	r := in.server.Dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == "namespace" {
		return r.Namespace(o.GetNamespace()), nil
	}
	return r, nil
}

func (in *installation) apply(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := in.resource(o)
	if err != nil {
		return nil, err
	}
	return applyOne(ctx, r, o)
}

// applyOne is a server-side apply with strict field validation: an unknown or duplicate field is refused
// rather than dropped with a warning.
// sameContent is whether two reads of an object hold the same fields, whatever their resourceVersion and the
// time of their last apply. A PersistentVolumeClaim's second apply writes an unchanged object: the server
// stores it without status.phase and defaults Pending on every read (kubernetes/kubernetes
// pkg/apis/core/v1/defaults.go SetDefaults_PersistentVolumeClaim), so the applied object differs from the
// stored bytes once.
func sameContent(a, b *unstructured.Unstructured) bool {
	strip := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		c := o.DeepCopy()
		c.SetResourceVersion("")
		fields := c.GetManagedFields()
		for i := range fields {
			fields[i].Time = nil
		}
		c.SetManagedFields(fields)
		return c
	}
	return equality.Semantic.DeepEqual(strip(a).Object, strip(b).Object)
}

func applyOne(ctx context.Context, r dynamic.ResourceInterface, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	raw, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	force := true
	return r.Patch(ctx, o.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{
		FieldManager: fieldManager, Force: &force, FieldValidation: metav1.FieldValidationStrict,
	})
}

func waitEstablished(ctx context.Context, s *apiserver.Server, crds schema.GroupVersionResource, want []*unstructured.Unstructured) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, crd := range want {
		for {
			got, err := s.Dynamic.Resource(crds).Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && condition(got, "Established") == "True" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the CRD %s is not Established after 30 s (NamesAccepted: %s): %v", crd.GetName(), condition(got, "NamesAccepted"), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func condition(o *unstructured.Unstructured, kind string) string {
	if o == nil {
		return ""
	}
	conditions, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == kind {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// redacted is what the offline plan writes for a secret value (lib/cli/plan/harness.ts SECRET).
const redacted = "[secret]"

// unredacted gives a Secret whose data the plan redacted as a whole (the plan does not say which keys it
// holds) one key, so the server checks the rest of it; the keys a Secret holds are not the server's concern.
func unredacted(o *unstructured.Unstructured) *unstructured.Unstructured {
	if o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" {
		return o
	}
	c := o.DeepCopy()
	for _, field := range []string{"stringData", "data"} {
		if c.Object[field] == redacted {
			value := redacted
			if field == "data" {
				value = "W3NlY3JldF0=" // base64 of the same text
			}
			c.Object[field] = map[string]any{"redacted": value}
		}
	}
	return c
}
