package promotion

import (
	"reflect"
	"testing"
)

// Metadata holds values as the API server stores them, JSON, and hands them back decoded; a Freight that
// does not exist takes none.
func TestFreightMetadataRoundTripsThroughJSON(t *testing.T) {
	t.Parallel()
	s := NewFreightStore(&Freight{Name: "f"})
	if md, ok, err := s.Metadata("f"); md != nil || !ok || err != nil {
		t.Errorf("new Freight: %v %v %v", md, ok, err)
	}
	if err := s.Upsert("f", "n", 3); err != nil {
		t.Fatal(err)
	}
	if md, _, _ := s.Metadata("f"); !reflect.DeepEqual(md, map[string]any{"n": float64(3)}) {
		t.Errorf("metadata %#v", md)
	}
	if err := s.Upsert("g", "n", 1); err == nil {
		t.Error("metadata stored on Freight that does not exist")
	}
	if err := s.Upsert("f", "", 1); err == nil {
		t.Error("an empty key was accepted")
	}
}
