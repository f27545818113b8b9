package kube

import (
	"testing"
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
}
