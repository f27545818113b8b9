// Package climetadata runs the Pulumi CLI's own metadata code (pulumi/pulumi pkg/v3 v3.274.1
// cmd/pulumi/metadata, cmd/pulumi/cmd) on what a drift check's workspace holds. A package of its own: the CLI's
// packages link some 600 more packages than the engine's, which the rest of test/pulumiengine never needs.
package climetadata

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/backend"
	"github.com/pulumi/pulumi/pkg/v3/backend/backenderr"
	pulumicmd "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi/cmd"
	"github.com/pulumi/pulumi/pkg/v3/cmd/pulumi/metadata"
	"gopkg.in/yaml.v3"
)

// A failed drift check is the CLI's NoChangesExpectedError, which it exits with its own code for: PKO's
// Update records the run as failed (test/pulumiengine TestDriftFoundByTheCheck finds the drift itself).
func TestDriftCheckExitCode(t *testing.T) {
	err := backenderr.NoChangesExpectedError{Operation: "preview"}
	if code := pulumicmd.ExitCodeFor(err); code != pulumicmd.ExitNoChanges || code == 0 {
		t.Errorf("the CLI exits %d on %q, want ExitNoChanges (%d)", code, err, pulumicmd.ExitNoChanges)
	}
}

// The drift check's workspace carries a variable (stacks/*-drift.yaml) that the CLI records into the
// update's `environment`, which Pulumi Cloud lists with every preview; the verification Job leaves such
// previews out (kargo/verification/cloud.mjs isDriftCheck). pulumi v3.274.1 cmd/pulumi/metadata
// GetUpdateMetadata, which `pulumi preview` calls for every operation, records each PULUMI_* variable by
// name: "set", or its truth for one of Pulumi's declared booleans.
func TestDriftCheckMark(t *testing.T) {
	name := driftVariable(t)
	if !strings.HasPrefix(name, "PULUMI_") {
		t.Fatalf("the drift Stacks mark their workspaces with %s, which the CLI would not record", name)
	}
	t.Setenv(name, "true")
	m, err := metadata.GetUpdateMetadata("", t.TempDir(), "", "", false, backend.StackConfiguration{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "pulumi.env." + name
	if got := m.Environment[key]; got != "set" && got != "true" {
		t.Errorf("environment[%q] = %q, want it recorded; environment: %v", key, got, m.Environment)
	}
	if want := driftKeyOfVerification(t); key != want {
		t.Errorf("the CLI records %q, the verification Job leaves out %q", key, want)
	}
	// A promotion's workspace has no such variable: nothing marks its previews.
	os.Unsetenv(name)
	m, err = metadata.GetUpdateMetadata("", t.TempDir(), "", "", false, backend.StackConfiguration{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Environment[key]; ok {
		t.Errorf("environment[%q] recorded without the variable", key)
	}
}

// driftVariable is the one variable the drift Stack templates add to their update stage's workspace.
func driftVariable(t *testing.T) string {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	drift, _ := filepath.Glob(filepath.Join(root, "stacks", "*-drift.yaml"))
	if len(drift) == 0 {
		t.Fatal("no drift Stack templates in stacks/ (npm run stacks)")
	}
	env := func(file string) map[string]bool {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Spec struct {
				WorkspaceTemplate struct {
					Spec struct {
						Env []struct {
							Name string `yaml:"name"`
						} `yaml:"env"`
					} `yaml:"spec"`
				} `yaml:"workspaceTemplate"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range s.Spec.WorkspaceTemplate.Spec.Env {
			out[e.Name] = true
		}
		return out
	}
	var added []string
	for _, f := range drift {
		own := env(strings.TrimSuffix(f, "-drift.yaml") + ".yaml")
		for name := range env(f) {
			if !own[name] && !slices.Contains(added, name) {
				added = append(added, name)
			}
		}
	}
	if len(added) != 1 {
		t.Fatalf("the drift Stack templates add %v to their stage's workspace, want one variable", added)
	}
	return added[0]
}

// driftKeyOfVerification is the key kargo/verification/cloud.mjs leaves out, as the Job's code spells it.
func driftKeyOfVerification(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "kargo", "verification", "cloud.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	const decl = `export const DRIFT_CHECK_KEY = "`
	text := string(raw)
	i := strings.Index(text, decl)
	if i < 0 {
		t.Fatal("kargo/verification/cloud.mjs declares no DRIFT_CHECK_KEY")
	}
	rest := text[i+len(decl):]
	return rest[:strings.Index(rest, `"`)]
}
