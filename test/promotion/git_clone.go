package promotion

import (
	"context"
	"fmt"
	"os"

	"github.com/akuity/kargo/pkg/controller/git"
	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
	securejoin "github.com/cyphar/filepath-securejoin"
)

// git-clone, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/git_cloner.go runs it.
func init() { register("git-clone", gitClone) }

func gitClone(ctx context.Context, s *StepContext, cfg builtin.GitCloneConfig) (StepResult, error) {
	seen := map[string]bool{}
	for i, c := range cfg.Checkout {
		if c.As != "" && seen[c.As] {
			return StepResult{Status: StatusFailed}, fmt.Errorf("duplicate checkout alias %q at checkout[%d]", c.As, i)
		}
		seen[c.As] = c.As != ""
	}
	if s.Engine.gitUserErr != nil {
		return StepResult{Status: StatusErrored}, s.Engine.gitUserErr
	}
	user := s.Engine.GitUser
	if cfg.Author != nil {
		user = git.User{Name: cfg.Author.Name, Email: cfg.Author.Email, SigningKey: cfg.Author.SigningKey}
	}
	remote, ok := s.Engine.Remotes[cfg.RepoURL]
	if !ok {
		return StepResult{Status: StatusErrored}, fmt.Errorf("error cloning %s: no such repository on this machine", cfg.RepoURL)
	}
	repo, err := git.CloneBare(ctx, remote,
		&git.ClientOptions{User: &user, InsecureSkipTLSVerify: cfg.InsecureSkipTLSVerify},
		&git.BareCloneOptions{BaseDir: s.WorkDir, Blobless: cfg.Blobless},
	)
	if err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("error cloning %s: %w", cfg.RepoURL, err)
	}
	commits := map[string]any{}
	for _, c := range cfg.Checkout {
		var ref string
		switch {
		case c.Branch != "":
			ref = c.Branch
			if err := ensureRemoteBranch(ctx, repo, ref, c.Create); err != nil {
				return StepResult{Status: StatusErrored}, fmt.Errorf("error ensuring existence of remote branch %s: %w", ref, err)
			}
		case c.Commit != "":
			ref = c.Commit
		case c.Tag != "":
			ref = c.Tag
		}
		path, err := securejoin.SecureJoin(s.WorkDir, c.Path)
		if err != nil {
			return StepResult{Status: StatusErrored}, err
		}
		wt, err := repo.AddWorkTree(ctx, path, &git.AddWorkTreeOptions{Ref: ref, Sparse: c.Sparse})
		if err != nil {
			return StepResult{Status: StatusErrored}, fmt.Errorf("error adding work tree %s to repo %s: %w", c.Path, cfg.RepoURL, err)
		}
		if cfg.RecurseSubmodules {
			if err := wt.UpdateSubmodules(ctx); err != nil {
				return StepResult{Status: StatusErrored}, err
			}
		}
		key := c.Path
		if c.As != "" {
			key = c.As
		}
		if commits[key], err = wt.LastCommitID(ctx); err != nil {
			return StepResult{Status: StatusErrored}, fmt.Errorf("error resolving HEAD for worktree at %s: %w", path, err)
		}
	}
	return StepResult{Status: StatusSucceeded, Output: map[string]any{"commits": commits}}, nil
}

// ensureRemoteBranch is git_cloner.go's: a missing branch with create: true becomes an orphan with one
// empty "Initial commit", pushed before the checkout. `git worktree add --orphan` needs git 2.42 or newer.
func ensureRemoteBranch(ctx context.Context, repo git.BareRepo, branch string, create bool) error {
	exists, err := repo.RemoteBranchExists(ctx, branch)
	if err != nil {
		return fmt.Errorf("error checking if remote branch %q of repo %s exists: %w", branch, repo.URL(), err)
	}
	if exists {
		return nil
	}
	if !create {
		return fmt.Errorf("remote branch %q of repo %s does not exist; set create=true if you'd like a "+
			"non-existent remote branch to be automatically created at checkout", branch, repo.URL())
	}
	tmp, err := os.MkdirTemp("", "repo-")
	if err != nil {
		return err
	}
	wt, err := repo.AddWorkTree(ctx, tmp, &git.AddWorkTreeOptions{Orphan: true})
	if err != nil {
		return fmt.Errorf("error adding temporary working tree for branch %q of repo %s: %w", branch, repo.URL(), err)
	}
	defer wt.Close(ctx)
	if err := wt.CreateOrphanedBranch(ctx, branch); err != nil {
		return err
	}
	if err := wt.Commit(ctx, "Initial commit", &git.CommitOptions{AllowEmpty: true}); err != nil {
		return fmt.Errorf("error making initial commit to new branch %q of repo %s: %w", branch, repo.URL(), err)
	}
	if err := wt.Push(ctx, &git.PushOptions{TargetBranch: branch}); err != nil {
		return fmt.Errorf("error pushing initial commit to new branch %q to repo %s: %w", branch, repo.URL(), err)
	}
	return nil
}
