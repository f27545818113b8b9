package pulumiengine

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// step is one resource operation of the Job's record (compare.mjs recordOf).
type step struct {
	URN     string   `json:"urn"`
	Type    string   `json:"type"`
	Op      string   `json:"op"`
	Classes []string `json:"classes"`
	Diffs   []string `json:"diffs"`
	Why     string   `json:"why"`
	// LessThan says how a matched update step did less than its preview step.
	LessThan string `json:"lessThan"`
	Line     string `json:"line"`
}

// verdict is what the verification Job decides of one preview (under each STOP_ON asked) and of the update
// after it (verdicts.mjs). Error is the Job's reason when it cannot read the events (not complete).
type verdict struct {
	Preview struct {
		Error      string `json:"error"`
		Operations []step `json:"operations"`
		// Policies is each STOP_ON's stopped steps, each with its line of the Job's reason.
		Policies map[string]struct {
			Stopped []step `json:"stopped"`
		} `json:"policies"`
	} `json:"preview"`
	Update *struct {
		Error      string `json:"error"`
		Matched    []step `json:"matched"`
		Unexpected []step `json:"unexpected"`
	} `json:"update"`
}

type verdictCase struct {
	Preview []json.RawMessage `json:"preview"`
	Update  []json.RawMessage `json:"update,omitempty"`
	StopOn  []string          `json:"stopOn"`
}

// judge runs the verification Job's verdict code (kargo/verification, in node) over each case.
func judge(t *testing.T, cases ...verdictCase) []verdict {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node(), "verdicts.mjs")
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node verdicts.mjs: %v\n%s", err, stderr.String())
	}
	var out []verdict
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("verdicts.mjs answered %q: %v", stdout.String(), err)
	}
	return out
}

func node() string {
	if n := os.Getenv("NODE"); n != "" {
		return n
	}
	return "node"
}

// policy is one environment's STOP_ON, as its preview stages pass it to the pulumi-preview template.
type policy struct {
	environment string
	stopOn      string
}

var (
	policiesOnce sync.Once
	policies     []policy
	policiesErr  error
)

// environmentPolicies reads each environment's STOP_ON from the offline plan's kargo project: the stop-on
// arg of its preview Stages' verification, else the AnalysisTemplate's default (Kargo leaves an arg out when
// it is empty, lib/pipeline/verification.ts policyArgValues). $PLAN_DIR is the plan npm test wrote.
func environmentPolicies(t *testing.T) []policy {
	t.Helper()
	policiesOnce.Do(func() {
		dir := os.Getenv("PLAN_DIR")
		if dir == "" {
			dir, policiesErr = os.MkdirTemp("", "pulumiengine-plan-")
			if policiesErr != nil {
				return
			}
			cmd := exec.Command(node(), "--import", "tsx", "lib/cli/plan.ts", "--out", dir)
			cmd.Dir = filepath.Join("..", "..")
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Run(); err != nil {
				policiesErr = err
				return
			}
		}
		policies, policiesErr = readPolicies(filepath.Join(dir, "kargo", "manifests.yaml"))
	})
	if policiesErr != nil {
		t.Fatalf("the environments' policies from the offline plan: %v", policiesErr)
	}
	return policies
}

func readPolicies(path string) ([]policy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	type arg struct{ Name, Value string }
	type object struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			Args         []arg
			Verification struct {
				AnalysisRunMetadata struct{ Annotations map[string]string } `yaml:"analysisRunMetadata"`
				AnalysisTemplates   []struct{ Name string }                 `yaml:"analysisTemplates"`
				Args                []arg
			}
		}
	}
	var objects []object
	decoder := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var o object
		if err := decoder.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		objects = append(objects, o)
	}
	defaults := map[string]string{}
	for _, o := range objects {
		if o.Kind == "AnalysisTemplate" {
			for _, a := range o.Spec.Args {
				if a.Name == "stop-on" {
					defaults[o.Metadata.Name] = a.Value
				}
			}
		}
	}
	byEnv := map[string]string{}
	for _, o := range objects {
		v := o.Spec.Verification
		if o.Kind != "Stage" || len(v.AnalysisTemplates) == 0 {
			continue
		}
		stopOn, ok := defaults[v.AnalysisTemplates[0].Name]
		if !ok {
			continue // an update stage's template: no policy
		}
		for _, a := range v.Args {
			if a.Name == "stop-on" {
				stopOn = a.Value
			}
		}
		byEnv[v.AnalysisRunMetadata.Annotations["notifications.pipeline/environment"]] = stopOn
	}
	var out []policy
	for env, stopOn := range byEnv {
		out = append(out, policy{env, stopOn})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].environment < out[j].environment })
	if len(out) == 0 {
		return nil, os.ErrNotExist
	}
	return out, nil
}

// stopOnValues is every distinct STOP_ON of the plan's environments, and "all" (stopEveryPreview, the
// production environment docs/make-it-yours.md describes), and "" (an ephemeral one).
func stopOnValues(t *testing.T) []string {
	seen := map[string]bool{"all": true, "": true}
	for _, p := range environmentPolicies(t) {
		seen[p.stopOn] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// urnsOfSteps lists the steps as "op name" for messages and comparisons.
func urnsOfSteps(steps []step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Op+" "+s.URN[strings.LastIndex(s.URN, "::")+2:])
	}
	sort.Strings(out)
	return out
}
