package promotion

import (
	"context"
	"fmt"

	"github.com/akuity/kargo/pkg/controller/git"
	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
)

// git-commit, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/git_commiter.go runs it: stage
// everything, commit only if anything changed (Skipped otherwise), output the HEAD commit either way.
func init() { register("git-commit", gitCommit) }

func gitCommit(ctx context.Context, s *StepContext, cfg builtin.GitCommitConfig) (StepResult, error) {
	wt, err := loadWorkTree(ctx, s, cfg.Path)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	if err := wt.AddAll(ctx); err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("error adding all changes to working tree: %w", err)
	}
	hasDiffs, err := wt.HasDiffs(ctx)
	if err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("error checking for diffs in working tree: %w", err)
	}
	if hasDiffs {
		opts := &git.CommitOptions{}
		if cfg.Author != nil {
			opts.Author = &git.User{Name: cfg.Author.Name, Email: cfg.Author.Email, SigningKey: cfg.Author.SigningKey}
		}
		if err := wt.Commit(ctx, cfg.Message, opts); err != nil {
			return StepResult{Status: StatusErrored}, fmt.Errorf("error committing to working tree: %w", err)
		}
	}
	id, err := wt.LastCommitID(ctx)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	status := StatusSucceeded
	if !hasDiffs {
		status = StatusSkipped
	}
	return StepResult{Status: status, Output: map[string]any{"commit": id}}, nil
}
