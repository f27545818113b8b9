// A gate after joins, and the model of Kargo's availability rule the joins rest on.
package promotion

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

func promoteWith(t *testing.T, e *Engine, stage string, f *Freight) (*Result, error) {
	t.Helper()
	return e.Promote(t.Context(), Promotion{
		Name: stage + "." + f.Alias, Stage: stage, Freight: f, Actor: "email:alice@example.com", WorkDir: t.TempDir(),
	})
}

// pass moves the Freight through the stages in order, as far as the model goes: each verifies it, after a
// `kargo approve` where it is not available otherwise (how a Freight skips a Stage); joins verify by
// themselves.
func pass(t *testing.T, v *Verifications, freight string, stages ...string) {
	t.Helper()
	for _, s := range stages {
		if v.Pipeline.Stage(s).ControlFlow {
			continue
		}
		if v.Promotable(freight, s) != nil {
			if err := v.Approve(freight, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Verified(freight, s); err != nil {
			t.Fatal(err)
		}
	}
}

// A gate downstream of joins is available to Freight only once every program stage of each upstream
// environment verified that same Freight: a program stage short (even one skipped by approvals downstream
// of it), or the stages of one join split between two Freight, keep it closed.
func TestGateAfterJoinsWaitsForEveryProgramStage(t *testing.T) {
	t.Parallel()
	p := pipelineOf(t)
	programs, gates, _ := stageKinds(t)
	origin := FreightOrigin{Kind: "Warehouse", Name: kargoPlan(t).OfKind("Warehouse")[0].GetName()}
	f1 := &Freight{Name: strings.Repeat("1", 40), Origin: origin}
	f2 := &Freight{Name: strings.Repeat("2", 40), Origin: origin}
	tested := 0
	for _, g := range gates {
		joins := p.Stage(g).Upstream()
		if len(joins) == 0 || slices.ContainsFunc(joins, func(s string) bool { return !p.Stage(s).ControlFlow }) {
			continue
		}
		tested++
		route := p.Order(p.Ancestors(g))
		// memberOf: each program stage of an upstream environment, and its join.
		memberOf := map[string]string{}
		for _, j := range joins {
			for _, m := range p.Stage(j).Upstream() {
				if !slices.Contains(programs, m) {
					t.Errorf("join %s takes Freight from %s, which is no program stage", j, m)
				}
				memberOf[m] = j
			}
		}
		except := func(skip string) []string {
			return slices.DeleteFunc(slices.Clone(route), func(s string) bool { return s == skip })
		}
		t.Run(g+"/every program stage verified it", func(t *testing.T) {
			v := p.NewVerifications(f1)
			pass(t, v, f1.Name, route...)
			if !v.Available(f1.Name, g) {
				t.Errorf("after %v verified the Freight, %s is not available to it", route, g)
			}
			for _, j := range joins {
				if !v.VerifiedIn(f1.Name, j) {
					t.Errorf("join %s did not verify it", j)
				}
			}
		})
		members := slices.Sorted(maps.Keys(memberOf))
		for _, m := range members {
			j := memberOf[m]
			t.Run(g+"/all but "+m, func(t *testing.T) {
				v := p.NewVerifications(f1, f2)
				pass(t, v, f1.Name, except(m)...)
				if v.VerifiedIn(f1.Name, j) {
					t.Errorf("join %s verified the Freight without %s", j, m)
				}
				for _, other := range joins {
					if other != j && !v.VerifiedIn(f1.Name, other) {
						t.Errorf("join %s did not verify the Freight every one of its stages verified", other)
					}
				}
				if v.Available(f1.Name, g) {
					t.Errorf("%s is available to Freight %s did not verify", g, m)
				}
				// Another Freight verified only there does not complete the join either (where the join has other
				// stages: a join of one program's stage is complete once that stage verified it).
				pass(t, v, f2.Name, m)
				split := len(p.Stage(j).Upstream()) > 1
				if split && (v.VerifiedIn(f2.Name, j) || v.VerifiedIn(f1.Name, j) || v.Available(f1.Name, g) || v.Available(f2.Name, g)) {
					t.Errorf("the stages of join %s verified different Freight, and the join or %s let one through", j, g)
				}
				pass(t, v, f1.Name, m)
				if !v.VerifiedIn(f1.Name, j) || !v.Available(f1.Name, g) {
					t.Errorf("once %s verified it too, %s is not available to the Freight", m, g)
				}
				if v.Available(f2.Name, g) {
					t.Errorf("%s is available to Freight verified in %s alone", g, m)
				}
			})
		}
		// Kargo makes Freight approved for a join verified there (ListFreightAvailableToStage lists approved
		// Freight too): which is why no role may promote (and so approve) into a join (test/kube, reach).
		t.Run(g+"/approved for a join", func(t *testing.T) {
			v := p.NewVerifications(f1)
			for _, j := range joins {
				if err := v.Approve(f1.Name, j); err != nil {
					t.Fatal(err)
				}
			}
			if !v.Available(f1.Name, g) {
				t.Errorf("Freight approved for %v is not available to %s", joins, g)
			}
		})
	}
	if tested == 0 {
		t.Fatal("no gate takes Freight from joins only")
	}
}

// The model follows Kargo's Stage.IsFreightAvailable on the request shapes Kargo knows, not only the plan's.
func TestAvailabilityFollowsKargo(t *testing.T) {
	t.Parallel()
	stage := func(name string, controlFlow bool, sources string) string {
		steps := "\n  promotionTemplate:\n    spec:\n      steps:\n      - uses: fake"
		if controlFlow {
			steps = ""
		}
		return fmt.Sprintf("apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:%s\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: %s\n", name, steps, sources)
	}
	docs := strings.Join([]string{
		stage("a", false, "{direct: true}"),
		stage("b", false, "{direct: true}"),
		stage("oneof", false, "{stages: [a, b]}"),
		stage("all", false, "{stages: [a, b], availabilityStrategy: All}"),
		stage("join", true, "{stages: [a, b], availabilityStrategy: All}"),
		stage("after", false, "{stages: [join]}"),
	}, "---\n")
	objects, err := plan.Documents([]byte(docs))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPipeline(&plan.Project{Name: "synthetic", Objects: objects})
	if err != nil {
		t.Fatal(err)
	}
	f := &Freight{Name: "f", Origin: FreightOrigin{Kind: "Warehouse", Name: "w"}}
	elsewhere := &Freight{Name: "g", Origin: FreightOrigin{Kind: "Warehouse", Name: "other"}}
	v := p.NewVerifications(f, elsewhere)
	check := func(when string, want map[string]bool) {
		t.Helper()
		for s, w := range want {
			if got := v.Available(f.Name, s); got != w {
				t.Errorf("%s: available to %s: %v, want %v", when, s, got, w)
			}
		}
	}
	check("nothing verified", map[string]bool{"a": true, "oneof": false, "all": false, "join": false, "after": false})
	if v.Available(elsewhere.Name, "a") {
		t.Error("Freight of another origin is available")
	}
	if err := v.Verified(f.Name, "a"); err != nil {
		t.Fatal(err)
	}
	check("verified in a", map[string]bool{"oneof": true, "all": false, "join": false, "after": false})
	if err := v.Approve(f.Name, "all"); err != nil {
		t.Fatal(err)
	}
	check("approved for all", map[string]bool{"all": true, "join": false})
	if err := v.Verified(f.Name, "b"); err != nil {
		t.Fatal(err)
	}
	check("verified in a and b", map[string]bool{"join": true, "after": true})
	if !v.VerifiedIn(f.Name, "join") {
		t.Error("the control-flow Stage did not verify Freight available to it")
	}
	if err := v.Promotable(f.Name, "join"); err == nil {
		t.Error("a control-flow Stage is promotable")
	}
	if err := v.Verified(f.Name, "join"); err != nil {
		t.Errorf("verifying Freight a join already verified: %v", err)
	}
	if err := v.Verified(elsewhere.Name, "oneof"); err == nil {
		t.Error("Freight not available to a Stage was verified there")
	}
	if _, err := NewPipeline(&plan.Project{Objects: mustDocs(t, stage("x", false, "{stages: [a], requiredSoakTime: 1h}"))}); err == nil {
		t.Error("a request with a field the model does not follow was read")
	}
}

func mustDocs(t *testing.T, raw string) []*unstructured.Unstructured {
	t.Helper()
	objects, err := plan.Documents([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return objects
}
