package promotion

import (
	"context"
	"fmt"
	"strings"

	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
	"github.com/akuity/kargo/pkg/yaml"
	securejoin "github.com/cyphar/filepath-securejoin"
)

// yaml-update, as akuity/kargo v1.11.2 pkg/promotion/runner/builtin/yaml_updater.go runs it: pkg/yaml's
// SetValuesInFile, and the commit message it offers as output.
func init() { register("yaml-update", yamlUpdate) }

func yamlUpdate(_ context.Context, s *StepContext, cfg builtin.YAMLUpdateConfig) (StepResult, error) {
	result := StepResult{Status: StatusSucceeded}
	if len(cfg.Updates) == 0 {
		return result, nil
	}
	updates := make([]yaml.Update, len(cfg.Updates))
	for i, u := range cfg.Updates {
		updates[i] = yaml.Update{Key: u.Key, Value: u.Value}
	}
	path, err := securejoin.SecureJoin(s.WorkDir, cfg.Path)
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	if err := yaml.SetValuesInFile(path, updates); err != nil {
		return StepResult{Status: StatusErrored}, fmt.Errorf("values file update failed: %w", err)
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "Updated %s\n", cfg.Path)
	for _, u := range cfg.Updates {
		fmt.Fprintf(&msg, "\n- %s: %v", u.Key, yaml.QuoteIfNecessary(u.Value))
	}
	result.Output = map[string]any{"commitMessage": msg.String()}
	return result, nil
}
