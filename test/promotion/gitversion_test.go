package promotion

// Which git this machine has, and what that means for the scenarios in which Kargo creates a stage branch:
// with git older than 2.42 they are skipped saying so, or the branch is seeded as Kargo would leave it.

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var gitVersion = regexp.MustCompile(`git version (\d+)\.(\d+)`)

// orphanWorktrees says whether this machine's git has `git worktree add --orphan` (2.42 and newer), with
// which Kargo's git-clone creates a missing branch.
func orphanWorktrees() (bool, string) {
	out, err := exec.Command("git", "version").Output()
	if err != nil {
		return false, "no git"
	}
	m := gitVersion.FindStringSubmatch(string(out))
	if m == nil {
		return false, strings.TrimSpace(string(out))
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 2 || (major == 2 && minor >= 42), strings.TrimSpace(string(out))
}

// needsOrphanWorktrees stops a scenario that needs Kargo to create a stage branch when this machine's git
// cannot, saying why (README, Testing: the scenarios this machine cannot run).
func needsOrphanWorktrees(t *testing.T) {
	t.Helper()
	if ok, version := orphanWorktrees(); !ok {
		t.Skipf("NOT RUN: needs git 2.42 or newer (Kargo's git-clone creates a missing branch with "+
			"`git worktree add --orphan`, akuity/kargo v1.11.2 pkg/controller/git/bare_repo.go); this machine has %s", version)
	}
}

// kargoCreatedBranch leaves a stage branch as Kargo's git-clone creates a missing one
// (pkg/promotion/runner/builtin/git_cloner.go ensureRemoteBranch: an orphan holding one empty commit,
// "Initial commit", by the controller's git user). With git 2.42 or newer the first promotion creates it
// through Kargo's own code instead, so this only seeds it on an older git.
func kargoCreatedBranch(t *testing.T, r *Remote, branch string) {
	t.Helper()
	if ok, _ := orphanWorktrees(); ok || r.Ref(t, branch) != "" {
		return
	}
	empty := gitRun(t, r.Dir, "hash-object", "-t", "tree", "-w", "--stdin")
	cmd := exec.Command("git", "commit-tree", empty, "-m", "Initial commit")
	cmd.Dir = r.Dir
	user, err := controllerGitUser(kargoPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME="+user.Name, "GIT_AUTHOR_EMAIL="+user.Email,
		"GIT_COMMITTER_NAME="+user.Name, "GIT_COMMITTER_EMAIL="+user.Email, "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	gitRun(t, r.Dir, "update-ref", "refs/heads/"+branch, strings.TrimSpace(string(out)))
}
