package promotion

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/otiai10/copy"
)

// copy, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/file_copier.go runs it: otiai10/copy, symlinks
// skipped, .git and the config's ignore rules (gitignore syntax) left out.
func init() { register("copy", copyStep) }

func copyStep(_ context.Context, s *StepContext, cfg builtin.CopyConfig) (StepResult, error) {
	inPath, err := securejoin.SecureJoin(s.WorkDir, cfg.InPath)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	outPath, err := securejoin.SecureJoin(s.WorkDir, cfg.OutPath)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	matcher, err := ignoreRules(inPath, cfg.Ignore)
	if err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("failed to load ignore rules: %w", err)
	}
	opts := copy.Options{
		OnSymlink: func(string) copy.SymlinkAction { return copy.Skip },
		Skip: func(f os.FileInfo, src, _ string) (bool, error) {
			return matcher.Match(strings.Split(src, string(filepath.Separator)), f.IsDir()), nil
		},
	}
	if err := copy.Copy(inPath, outPath, opts); err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("failed to copy %q to %q: %w", cfg.InPath, cfg.OutPath, err)
	}
	return StepResult{Status: StatusSucceeded}, nil
}

// ignoreRules is file_copier.go loadIgnoreRules: rooted at the directory copied (or the file's folder).
func ignoreRules(inPath, rules string) (gitignore.Matcher, error) {
	fi, err := os.Lstat(inPath)
	if errors.Is(err, os.ErrNotExist) {
		return gitignore.NewMatcher(nil), nil
	} else if err != nil {
		return nil, err
	}
	domain := strings.Split(filepath.Dir(inPath), string(filepath.Separator))
	if fi.IsDir() {
		domain = strings.Split(inPath, string(filepath.Separator))
	}
	patterns := []gitignore.Pattern{gitignore.ParsePattern(".git", domain)}
	scanner := bufio.NewScanner(strings.NewReader(rules))
	for scanner.Scan() {
		if line := scanner.Text(); !strings.HasPrefix(line, "#") && strings.TrimSpace(line) != "" {
			patterns = append(patterns, gitignore.ParsePattern(line, domain))
		}
	}
	return gitignore.NewMatcher(patterns), nil
}
