package promotion

import (
	"context"
	"encoding/json"
	"reflect"
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

// approvalKey is the Freight metadata key a gate's promotion records its approvals under: the one key of
// its set-metadata step's values.
func approvalKey(t *testing.T, gate string) string {
	t.Helper()
	steps, _, _ := unstructured.NestedSlice(kargoPlan(t).Object(t, "Stage", gate).Object, "spec", "promotionTemplate", "spec", "steps")
	for _, st := range steps {
		updates, _, _ := unstructured.NestedSlice(st.(map[string]any), "config", "updates")
		for _, u := range updates {
			values, _, _ := unstructured.NestedMap(u.(map[string]any), "values")
			if len(values) == 1 {
				for k := range values {
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
	want := map[string]any{
		// Each approver by email address alone, as Kargo hands the step its actor.
		approvalKey(t, gates[0]): []any{"dave@example.com", "alice@example.com", "carol@example.com"},
		approvalKey(t, gates[1]): []any{"bob@example.com"},
	}
	if !reflect.DeepEqual(metadata, want) {
		got, _ := json.MarshalIndent(metadata, "", "  ")
		t.Errorf("after approvals at both gates %s waits for, the Freight's metadata is\n%s\nwant every approval of each gate, in order", stage, got)
	}
}

// The actor a step records is Kargo's CreateActorAnnotationValue of the Promotion's create-actor annotation.
func TestPromotionActorIsTheAnnotationWithoutItsClaim(t *testing.T) {
	for annotation, want := range map[string]string{
		"email:alice@example.com":    "alice@example.com",
		"subject:0a1b2c":             "0a1b2c",
		"admin":                      "admin",
		"unknown actor":              "",
		"email:odd:name@example.com": "email:odd:name@example.com", // more than one ":" is kept whole
	} {
		if got := promotionActor(annotation); got != want {
			t.Errorf("actor of %q is %q, want %q", annotation, got, want)
		}
	}
}
