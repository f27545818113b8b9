package promotion

import (
	"reflect"
	"testing"
)

func TestSetMetadataUpsertsKeysAndKeepsTheOthers(t *testing.T) {
	t.Parallel()
	store := NewFreightStore(&Freight{Name: "f1"})
	e := NewEngine(kargoPlan(t), nil, store)
	if err := store.Upsert("f1", "kept", "k"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{"first", []any{"a", "b"}} {
		if _, err := runStep(t, e, t.TempDir(), "set-metadata", map[string]any{"updates": []any{
			map[string]any{"kind": "Freight", "name": "f1", "values": map[string]any{"key": v}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	got, _, _ := store.Metadata("f1")
	if want := map[string]any{"kept": "k", "key": []any{"a", "b"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("metadata %v, want %v", got, want)
	}
	if res, err := runStep(t, e, t.TempDir(), "set-metadata", map[string]any{"updates": []any{
		map[string]any{"kind": "Freight", "name": "missing", "values": map[string]any{"key": "v"}},
	}}); err == nil || res.Status != StatusErrored {
		t.Errorf("metadata on missing Freight: %s, %v", res.Status, err)
	}
}
