package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Command is what a user runs to fetch the snapshots (lib/cli/upstream.ts).
const Command = "npm run upstream"

// MirrorDir is where Command keeps the snapshots, as lib/cli/upstream/mirror.ts names it: $UPSTREAM_MIRROR_DIR,
// else infra-change-platform/upstream in the user's cache folder; "" when there is neither.
func MirrorDir() string {
	if dir := os.Getenv("UPSTREAM_MIRROR_DIR"); dir != "" {
		return dir
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "infra-change-platform", "upstream")
}

// Absent says why no snapshot on this machine holds a file: the check that needs it is skipped, saying so.
type Absent struct{ Why string }

func (a *Absent) Error() string { return a.Why }

// Show is repo's file at tag, read from its snapshot (owner/name.git under MirrorDir). An *Absent error when
// the snapshot or the tag is not there (Command was not run, or not since the pin changed); any other error
// when the tag is there and the file is not, which is an upstream change the caller must report.
func Show(repo, tag, path string) ([]byte, error) {
	base := MirrorDir()
	if base == "" {
		return nil, &Absent{fmt.Sprintf("no snapshot of %s: this user has no cache folder; set $UPSTREAM_MIRROR_DIR and run `%s`", repo, Command)}
	}
	dir := filepath.Join(base, filepath.FromSlash(repo)+".git")
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return nil, &Absent{fmt.Sprintf("no snapshot of %s in %s: run `%s` to fetch it", repo, base, Command)}
	}
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		return cmd.Output()
	}
	if _, err := git("rev-parse", "--verify", "--quiet", "refs/tags/"+tag+"^{commit}"); err != nil {
		return nil, &Absent{fmt.Sprintf("the snapshot %s has no tag %s: run `%s` again", dir, tag, Command)}
	}
	if _, err := git("rev-parse", "--verify", "--quiet", tag+":"+path); err != nil {
		return nil, fmt.Errorf("%s has no %s at %s: it moved or went away upstream", repo, path, tag)
	}
	// A file the snapshot has not fetched yet is fetched now (a partial clone), which needs the network.
	out, err := git("show", tag+":"+path)
	if err != nil {
		return nil, &Absent{fmt.Sprintf("the snapshot %s could not read %s at %s (%v): run `%s` again", dir, path, tag, err, Command)}
	}
	return out, nil
}
