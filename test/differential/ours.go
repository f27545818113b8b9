package differential

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"infra-change-platform/test/internal/plan"
)

type input struct {
	Selectors []string `json:"selectors"`
	Regexps   []string `json:"regexps"`
	Files     []string `json:"files"`
	Branches  []string `json:"branches"`
}

type verdict struct {
	Error string `json:"error"`
	// Stricter: ours refuses on purpose what upstream accepts (a narrower rule, said in the message).
	Stricter bool   `json:"stricter"`
	Matches  []bool `json:"matches"`
}

type output struct {
	Selectors []verdict `json:"selectors"`
	Regexps   []verdict `json:"regexps"`
	Branches  []struct {
		Problems []string `json:"problems"`
	} `json:"branches"`
}

// ours runs lib/pipeline/selectors.ts and check-values.ts over every input in one Node process.
func ours(t *testing.T, in input) output {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "inputs.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plan.Node(), "--import", "tsx", "test/differential/ours.ts", file)
	cmd.Dir = plan.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/differential/ours.ts: %v\n%s", err, stderr.String())
	}
	var verdicts output
	if err := json.Unmarshal(out, &verdicts); err != nil {
		t.Fatalf("test/differential/ours.ts: %v", err)
	}
	return verdicts
}
