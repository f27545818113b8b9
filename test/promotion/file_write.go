package promotion

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
	securejoin "github.com/cyphar/filepath-securejoin"
)

// file-write, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/file_writer.go runs it: a relative path
// inside the work dir, never into .git or through a symlink, an existing file only with overwrite, mode
// 0600 unless the config says otherwise.
func init() { register("file-write", fileWrite) }

func fileWrite(_ context.Context, s *StepContext, cfg builtin.FileWriteConfig) (StepResult, error) {
	fail := func(format string, a ...any) (StepResult, error) {
		return StepResult{Status: StatusFailed}, fmt.Errorf(format, a...)
	}
	if filepath.IsAbs(cfg.Path) {
		return fail("path %q must be relative", cfg.Path)
	}
	clean := filepath.Clean(cfg.Path)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return fail("path %q attempts to traverse outside the working directory", cfg.Path)
	}
	if clean == ".git" || strings.HasPrefix(clean, ".git"+string(filepath.Separator)) {
		return fail("writing to the .git directory is forbidden: %q", cfg.Path)
	}
	mode := os.FileMode(0o600)
	if cfg.Permissions != "" {
		parsed, err := strconv.ParseUint(cfg.Permissions, 8, 32)
		if err != nil || os.FileMode(parsed) != os.FileMode(parsed).Perm() || parsed&0o113 != 0 {
			return fail("invalid permissions %q", cfg.Permissions)
		}
		mode = os.FileMode(parsed)
	}
	abs, err := securejoin.SecureJoin(s.WorkDir, cfg.Path)
	if err != nil {
		return fail("could not secure join path %q: %w", cfg.Path, err)
	}
	if rel, err := filepath.Rel(s.WorkDir, abs); err != nil || rel != clean {
		return fail("path %q resolves to a different path %q (symlinks are forbidden)", cfg.Path, rel)
	}
	if _, err := os.Stat(abs); err == nil && !cfg.Overwrite {
		return fail("file %q already exists; set overwrite to true to replace it", cfg.Path)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	if err := os.WriteFile(abs, []byte(cfg.Contents), mode); err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	if err := os.Chmod(abs, mode); err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	return StepResult{Status: StatusSucceeded}, nil
}
