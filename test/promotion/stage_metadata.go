package promotion

import (
	"fmt"

	"infra-change-platform/test/internal/plan"
)

// Stage metadata, as the API server stores a Stage's status.metadata (akuity/kargo v1.11.2
// api/v1alpha1/stage_types.go): the same JSON values per key as Freight's, one entry per Stage of the plan,
// so set-metadata on a Stage the project does not hold fails as Kargo's Get does.
func stageStore(kargo *plan.Project) *FreightStore {
	s := NewFreightStore()
	for _, o := range kargo.OfKind("Stage") {
		s.metadata[o.GetName()] = nil
	}
	return s
}

// stageMetadata is functions.go stageMetadata(): the Stage's status.metadata, each value decoded from JSON;
// nil for a Stage without metadata or that does not exist.
func (f *functions) stageMetadata(a ...any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("expected 1 argument, got %d", len(a))
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be string, got %T", a[0])
	}
	if name == "" {
		return nil, fmt.Errorf("stage name must not be empty")
	}
	metadata, _, err := f.stages.Metadata(name)
	if err != nil || metadata == nil {
		return nil, err
	}
	return metadata, nil
}
