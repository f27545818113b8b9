package promotion

import (
	"context"
	"fmt"

	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
)

// set-metadata, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/metadata_setter.go runs it: for each
// update, every key of its values upserted into the Freight's (or Stage's) status.metadata, the other keys
// left as they were.
func init() { register("set-metadata", setMetadata) }

func setMetadata(_ context.Context, s *StepContext, cfg builtin.SetMetadataConfig) (StepResult, error) {
	for _, u := range cfg.Updates {
		switch u.Kind {
		case builtin.Freight:
			for k, v := range u.Values {
				if err := s.Engine.Freight.Upsert(u.Name, k, v); err != nil {
					return StepResult{Status: StatusErrored}, fmt.Errorf("error updating metadata for Freight %q in namespace %q: %w", u.Name, s.Project, err)
				}
			}
		case builtin.Stage:
			for k, v := range u.Values {
				if err := s.Engine.Stages.Upsert(u.Name, k, v); err != nil {
					return StepResult{Status: StatusErrored}, fmt.Errorf("error updating metadata for Stage %q in namespace %q: %w", u.Name, s.Project, err)
				}
			}
		default:
			return StepResult{Status: StatusErrored}, fmt.Errorf("the harness records metadata on Freight and Stages only, not on a %s", u.Kind)
		}
	}
	return StepResult{Status: StatusSucceeded}, nil
}
