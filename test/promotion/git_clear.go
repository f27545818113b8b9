package promotion

import (
	"context"
	"fmt"

	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
)

// git-clear, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/git_tree_clearer.go runs it: stage every
// file (so untracked ones go too), then remove everything from the index and the work tree.
func init() { register("git-clear", gitClear) }

func gitClear(ctx context.Context, s *StepContext, cfg builtin.GitClearConfig) (StepResult, error) {
	wt, err := loadWorkTree(ctx, s, cfg.Path)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	if err := wt.AddAll(ctx); err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("error adding all files to working tree at %s: %w", cfg.Path, err)
	}
	if err := wt.Clear(ctx); err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("error clearing working tree at %s: %w", cfg.Path, err)
	}
	return StepResult{Status: StatusSucceeded}, nil
}
