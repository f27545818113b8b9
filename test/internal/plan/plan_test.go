package plan

import "testing"

// The harness stands on the plan: every project must load, with the kinds the engines read.
func TestEveryProjectLoads(t *testing.T) {
	for _, name := range Projects {
		p := Load(t, name)
		if len(p.Resources) == 0 {
			t.Errorf("%s: no resources in the plan", name)
		}
	}
	kargo := Load(t, "kargo")
	for _, kind := range []string{"AnalysisTemplate", "PromotionTask", "Stage", "Warehouse", "ProjectConfig"} {
		if len(kargo.OfKind(kind)) == 0 {
			t.Errorf("the kargo plan has no %s", kind)
		}
	}
}
