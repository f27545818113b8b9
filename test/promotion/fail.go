package promotion

import (
	"context"
	"fmt"

	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
)

// fail, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/failer.go runs it: always Failed, a terminal
// error saying "failed", with the config's message when it has one.
func init() { register("fail", fail) }

func fail(_ context.Context, _ *StepContext, cfg builtin.FailConfig) (StepResult, error) {
	if cfg.Message != "" {
		return StepResult{Status: StatusFailed}, fmt.Errorf("failed: %s", cfg.Message)
	}
	return StepResult{Status: StatusFailed}, fmt.Errorf("failed")
}
