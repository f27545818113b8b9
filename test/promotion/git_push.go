package promotion

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/akuity/kargo/pkg/controller/git"
	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// git-push, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/git_pusher.go runs it: integrate remote
// changes with the controller's policy (GIT_PUSH_INTEGRATION_POLICY, the chart's
// controller.gitClient.pushIntegrationPolicy, AlwaysRebase by default), retry a non-fast-forward up to 10
// times, one push per repository and branch at a time in the controller.
func init() { register("git-push", gitPush) }

// pushIntegrationPolicy is the chart default we install with (kargo/kargoInstall.ts sets none).
const pushIntegrationPolicy = git.PushIntegrationPolicyAlwaysRebase

var (
	branchMu  sync.Mutex
	branchMus = map[string]*sync.Mutex{}
)

func gitPush(ctx context.Context, s *StepContext, cfg builtin.GitPushConfig) (StepResult, error) {
	wt, err := loadWorkTree(ctx, s, cfg.Path)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	opts := &git.PushOptions{TargetBranch: cfg.TargetBranch, IntegrationPolicy: pushIntegrationPolicy, Force: cfg.Force}
	if cfg.GenerateTargetBranch {
		opts.TargetBranch = fmt.Sprintf("kargo/promotion/%s", s.Promotion)
		opts.Force = true
	}
	if cfg.Tag != "" {
		opts.Tag = cfg.Tag
		opts.IntegrationPolicy = git.PushIntegrationPolicyNone
	}
	if opts.Force {
		opts.IntegrationPolicy = git.PushIntegrationPolicyNone
	}
	if opts.TargetBranch == "" {
		if opts.TargetBranch, err = wt.CurrentBranch(ctx); err != nil {
			return StepResult{Status: StatusErrored}, err
		}
	}
	backoff := wait.Backoff{Steps: 10, Duration: time.Second, Factor: 1.5, Jitter: 0.5, Cap: 30 * time.Second}
	if cfg.MaxAttempts != nil {
		backoff.Steps = int(*cfg.MaxAttempts)
	}
	key := wt.URL() + ":" + opts.TargetBranch
	branchMu.Lock()
	if branchMus[key] == nil {
		branchMus[key] = &sync.Mutex{}
	}
	mu := branchMus[key]
	branchMu.Unlock()
	err = retry.OnError(backoff, git.IsNonFastForward, func() error {
		mu.Lock()
		defer mu.Unlock()
		return wt.Push(ctx, opts)
	})
	if err != nil {
		if git.IsMergeConflict(err) || errors.Is(err, git.ErrRebaseUnsafe) {
			return StepResult{Status: StatusFailed}, err
		}
		return StepResult{Status: StatusErrored}, fmt.Errorf("error pushing commits to remote: %w", err)
	}
	id, err := wt.LastCommitID(ctx)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	// The real step also outputs commitURL, from the Git provider the URL names (GitHub here); a bare
	// repository on disk has none.
	return StepResult{Status: StatusSucceeded, Output: map[string]any{"commit": id, "branch": opts.TargetBranch}}, nil
}
