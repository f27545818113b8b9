package promotion

import (
	"context"
	"fmt"

	"github.com/akuity/kargo/pkg/controller/git"
	securejoin "github.com/cyphar/filepath-securejoin"
)

// loadWorkTree opens the work tree a git step names, inside the promotion's work directory, as Kargo's git
// runners each do (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/git_{tree_clearer,commiter,pusher}.go).
func loadWorkTree(ctx context.Context, s *StepContext, rel string) (git.WorkTree, error) {
	path, err := securejoin.SecureJoin(s.WorkDir, rel)
	if err != nil {
		return nil, err
	}
	wt, err := git.LoadWorkTree(ctx, path, nil)
	if err != nil {
		return nil, fmt.Errorf("error loading working tree from %s: %w", rel, err)
	}
	return wt, nil
}
