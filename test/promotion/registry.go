package promotion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/xeipuuv/gojsonschema"
)

// Step statuses, as kargoapi.PromotionStepStatus spells them.
const (
	StatusSucceeded = "Succeeded"
	StatusRunning   = "Running"
	StatusSkipped   = "Skipped"
	StatusErrored   = "Errored"
	StatusFailed    = "Failed"
)

// StepContext is what a runner gets besides its config (pkg/promotion StepContext, the fields we use).
type StepContext struct {
	WorkDir   string
	Project   string
	Stage     string
	Promotion string
	Alias     string
	// Actor is the Promotion's actor as steps see it (PromotionActor: the create-actor without its claim).
	Actor  string
	Engine *Engine
}

// StepResult is pkg/promotion StepResult: a status, the output later steps read, and what the step asks
// the Stage's health checks to watch.
type StepResult struct {
	Status      string
	Output      map[string]any
	HealthCheck map[string]any
}

type registration struct {
	convert func(map[string]any) (any, error)
	run     func(context.Context, *StepContext, any) (StepResult, error)
}

var runners = map[string]registration{}

// register adds a step runner under its step kind, like promotion.DefaultStepRunnerRegistry: its config
// is validated against the kind's own JSON schema and decoded into T, refusing fields T does not have.
func register[T any](kind string, run func(context.Context, *StepContext, T) (StepResult, error)) {
	runners[kind] = registration{
		convert: func(config map[string]any) (any, error) { return convert[T](kind, config) },
		run:     func(ctx context.Context, s *StepContext, cfg any) (StepResult, error) { return run(ctx, s, cfg.(T)) },
	}
}

// Kinds are the step kinds the harness runs.
func Kinds() []string {
	var out []string
	for k := range runners {
		out = append(out, k)
	}
	return out
}

func run(ctx context.Context, kind string, s *StepContext, config map[string]any) (StepResult, error) {
	reg, ok := runners[kind]
	if !ok {
		return StepResult{Status: StatusErrored}, fmt.Errorf("step kind %q is not registered", kind)
	}
	cfg, err := reg.convert(config)
	if err != nil {
		// A config the runner refuses is a terminal failure (every runner's Run, pkg/promotion/runner/builtin).
		return StepResult{Status: StatusFailed}, err
	}
	return reg.run(ctx, s, cfg)
}

// convert is validateAndConvert (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/validation.go): the
// config against the step's schema, embedded in that package from schemas/<kind>-config.json
// (schema_loader.go), read here from the module cache at the pinned version; then into T, strictly.
func convert[T any](kind string, config map[string]any) (T, error) {
	var zero T
	schemas, err := schemaDir()
	if err != nil {
		return zero, err
	}
	loader := gojsonschema.NewReferenceLoaderFileSystem(
		fmt.Sprintf("file:///schemas/%s-config.json", kind), http.Dir(schemas))
	result, err := gojsonschema.Validate(loader, gojsonschema.NewGoLoader(config))
	if err != nil {
		return zero, fmt.Errorf("could not validate %s config: %w", kind, err)
	}
	if !result.Valid() {
		errs := make([]error, len(result.Errors()))
		for i, e := range result.Errors() {
			errs[i] = errors.New(e.String())
		}
		return zero, fmt.Errorf("invalid %s config: %w", kind, errors.Join(errs...))
	}
	var typed T
	if err := decodeStrict(config, &typed); err != nil {
		return zero, fmt.Errorf("could not convert config into %s config: %w", kind, err)
	}
	return typed, nil
}

func decodeStrict(from any, into any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

var (
	kargoModOnce sync.Once
	kargoModDir  string
	kargoModErr  error
)

// kargoModuleDir is the Kargo module go.mod pins, in the module cache.
func kargoModuleDir() (string, error) {
	kargoModOnce.Do(func() {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/akuity/kargo").Output()
		if err != nil {
			kargoModErr = fmt.Errorf("locating the Kargo module (go list -m github.com/akuity/kargo): %w", err)
			return
		}
		kargoModDir = strings.TrimSpace(string(out))
	})
	return kargoModDir, kargoModErr
}

// schemaDir is pkg/promotion/runner/builtin of the Kargo module go.mod pins.
func schemaDir() (string, error) {
	dir, err := kargoModuleDir()
	return filepath.Join(dir, "pkg", "promotion", "runner", "builtin"), err
}
