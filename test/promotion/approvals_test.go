package promotion

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// gatesBefore are the gates a stage with requireAll waits on: the Stages its requestedFreight takes from
// with availabilityStrategy All, when every one of them is a gate.
func dualApproval(t *testing.T) (stage string, gates []string) {
	t.Helper()
	_, allGates := environmentStages(t)
	isGate := map[string]bool{}
	for _, g := range allGates {
		isGate[g] = true
	}
	for _, s := range kargoPlan(t).OfKind("Stage") {
		requested, _, _ := unstructured.NestedSlice(s.Object, "spec", "requestedFreight")
		for _, r := range requested {
			strategy, _, _ := unstructured.NestedString(r.(map[string]any), "sources", "availabilityStrategy")
			from, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "sources", "stages")
			if strategy != "All" || len(from) < 2 {
				continue
			}
			all := true
			for _, f := range from {
				all = all && isGate[f]
			}
			if all {
				return s.GetName(), from
			}
		}
	}
	t.Fatal("no stage waits for all of two or more gates")
	return "", nil
}

// approvalKey is the Freight metadata key a gate's promotion records its approvals under: the key of its
// set-metadata step's values that appends the promotion's actor (the other appends each approval's time).
func approvalKey(t *testing.T, gate string) string {
	t.Helper()
	steps, _, _ := unstructured.NestedSlice(kargoPlan(t).Object(t, "Stage", gate).Object, "spec", "promotionTemplate", "spec", "steps")
	for _, st := range steps {
		updates, _, _ := unstructured.NestedSlice(st.(map[string]any), "config", "updates")
		for _, u := range updates {
			values, _, _ := unstructured.NestedMap(u.(map[string]any), "values")
			for k, v := range values {
				if s, _ := v.(string); strings.Contains(s, "ctx.meta.promotion.actor") {
					return k
				}
			}
		}
	}
	t.Fatalf("gate %s records no approval", gate)
	return ""
}

func TestDualApprovalKeepsEveryApproval(t *testing.T) {
	t.Parallel()
	stage, gates := dualApproval(t)
	f := &Freight{Name: "f0e1d2c3b4a5f0e1d2c3b4a5f0e1d2c3b4a5f0e1", Origin: FreightOrigin{Kind: "Warehouse", Name: kargoPlan(t).OfKind("Warehouse")[0].GetName()}}
	store := NewFreightStore(f)
	e := NewEngine(kargoPlan(t), nil, store)
	approve := func(gate, actor string) {
		t.Helper()
		if _, err := e.Promote(context.Background(), Promotion{Name: gate + "." + actor, Stage: gate, Freight: f, Actor: actor, WorkDir: t.TempDir()}); err != nil {
			t.Fatalf("%s approving at %s: %v", actor, gate, err)
		}
	}
	// Freight approved at the first gate before approvals were lists holds a single string there.
	if err := store.Upsert(f.Name, approvalKey(t, gates[0]), "dave@example.com"); err != nil {
		t.Fatal(err)
	}
	approve(gates[0], "email:alice@example.com")
	approve(gates[1], "email:bob@example.com")
	// Someone else approves at the first gate again (a second Promotion of the same Freight).
	approve(gates[0], "email:carol@example.com")
	metadata, _, err := store.Metadata(f.Name)
	if err != nil {
		t.Fatal(err)
	}
	// What the stage waiting on both gates reads: at each gate, one entry per approval, in order, each naming
	// its approver; the approval recorded as a single string before lists is kept as the first entry.
	approvals := map[string][]string{
		gates[0]: {"dave@example.com", "alice@example.com", "carol@example.com"},
		gates[1]: {"bob@example.com"},
	}
	for gate, who := range approvals {
		got, _ := metadata[approvalKey(t, gate)].([]any)
		if len(got) != len(who) {
			t.Errorf("%s waits on %s, which records %v after %d approvals", stage, gate, metadata[approvalKey(t, gate)], len(who))
			continue
		}
		for i, entry := range got {
			if s, _ := entry.(string); !strings.Contains(s, who[i]) {
				t.Errorf("%s's approval %d is %v, want %s's", gate, i+1, entry, who[i])
			}
		}
	}
	// Each gate's approvers and, under a key of its own, when each approved (test/promotion/record_test.go).
	if len(metadata) != 2*len(approvals) {
		t.Errorf("the Freight's metadata holds %v, want only the two gates' approvals and their times", metadata)
	}
}
