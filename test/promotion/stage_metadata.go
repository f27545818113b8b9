package promotion

import (
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
	return metadataOf(f.stages, a, "argument must be string", "stage name must not be empty")
}
