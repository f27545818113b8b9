package kube

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// Everything the three projects emit, and every Stack manifest Argo CD applies from the stage branches, is
// accepted by the API server against the upstream CRDs (schemas and CEL rules, unknown fields refused),
// server-side; applied again unchanged, nothing changes.
func TestEveryObjectApplies(t *testing.T) {
	in := install(t)
	t.Logf("applied %d objects over %d upstream CRDs; namespaces a real install creates outside the plan, created first: %v",
		len(in.objects), len(in.crds), in.createdNamespaces)
	for _, r := range in.rejected {
		t.Errorf("rejected: %s", r)
	}
	for _, c := range in.changed {
		t.Errorf("the second apply changed %s", c)
	}
	kinds := map[string]bool{}
	for _, o := range in.objects {
		kinds[o.object.GetKind()] = true
	}
	for _, kind := range []string{"Stage", "Warehouse", "PromotionTask", "AnalysisTemplate", "Application", "Role", "RoleBinding", "StorageClass"} {
		if !kinds[kind] {
			t.Errorf("nothing of kind %s was applied: the plan did not load", kind)
		}
	}
	// Said as a skipped test, so npm run test:engines lists it: a fork without ../shared applies no Stack.
	t.Run("Stacks", func(t *testing.T) {
		if in.pkoMissing != "" {
			t.Skip(in.pkoMissing)
		}
		if !kinds["Stack"] {
			t.Error("PKO's CRDs are present but no Stack from stacks/ was applied")
		}
	})
	// Each program's Stages: every Stage (the joins, with no promotion template, too) and every Application
	// was admitted, and so was the Stack each Application deploys from its stage branch (the manifest the
	// promotion copies from stacks/), in the namespace the Application deploys to.
	t.Run("program stages", func(t *testing.T) {
		admitted := map[string]*unstructured.Unstructured{}
		for _, o := range in.objects {
			if !slices.ContainsFunc(in.rejected, func(r string) bool { return strings.HasPrefix(r, o.id()+": ") }) {
				admitted[o.id()] = o.object
			}
		}
		kargo := plan.Load(t, "kargo")
		joins := 0
		for _, kind := range []string{"Stage", "Application", "Role", "RoleBinding", "ServiceAccount"} {
			for _, o := range kargo.OfKind(kind) {
				if admitted[(source{"kargo", o}).id()] == nil {
					t.Errorf("%s %s was not admitted", kind, o.GetName())
				}
				if _, found, _ := unstructured.NestedMap(o.Object, "spec", "promotionTemplate"); kind == "Stage" && !found {
					joins++
				}
			}
		}
		if joins == 0 {
			t.Error("no join (a Stage without a promotion template) was applied")
		}
		if in.pkoMissing != "" {
			t.Skip(in.pkoMissing)
		}
		for _, app := range kargo.OfKind("Application") {
			include, _, _ := unstructured.NestedString(app.Object, "spec", "source", "directory", "include")
			namespace, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace")
			// Each file it includes (an update stage's Stack and its drift check) holds one Stack.
			for _, file := range plan.IncludedFiles(include) {
				var stacks []*unstructured.Unstructured
				for id, o := range admitted {
					if strings.HasPrefix(id, "stacks/"+file+": ") && o.GetKind() == "Stack" {
						stacks = append(stacks, o)
					}
				}
				if len(stacks) != 1 || stacks[0].GetNamespace() != namespace {
					t.Errorf("Application %s deploys %s into %s; admitted from it: %d Stack(s)", app.GetName(), file, namespace, len(stacks))
				}
			}
		}
	})
}
