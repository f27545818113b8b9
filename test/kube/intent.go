package kube

// What the pipeline and cluster-setup declare about who may reach what, read once through test/kube/intent.ts;
// reach.go asks the API server's authorizer about each identity it names.

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// intent is what test/kube/intent.ts prints: the pipeline as the programs read it and the stack identities'
// config as the offline plan configures cluster-setup.
type intent struct {
	Pipeline struct {
		Project  string `json:"project"`
		Programs []struct {
			Name string `json:"name"`
		} `json:"programs"`
		Stages []struct {
			Name        string   `json:"name"`
			Kind        string   `json:"kind"`
			Environment string   `json:"environment"`
			Approvers   []string `json:"approvers"`
			From        any      `json:"from"` // "warehouse", or the stages it takes Freight from
		} `json:"stages"`
	} `json:"pipeline"`
	// kargoStages is what each declared stage is in Kargo, and kargoOrder every Stage of the plan, declared
	// stage by declared stage (kargoStagesOf).
	kargoStages map[string]kargoStage
	kargoOrder  []string
	// Deciders are, per environment, the groups that decide its stops (none when it stops for nothing).
	Deciders map[string][]string `json:"deciders"`
	Stacks   struct {
		Namespace      string   `json:"namespace"`
		ServiceAccount string   `json:"serviceAccount"`
		Environments   []string `json:"environments"`
		RBACScope      string   `json:"rbacScope"`
		RBACRules      []struct {
			APIGroups     []string `json:"apiGroups"`
			Resources     []string `json:"resources"`
			Verbs         []string `json:"verbs"`
			ResourceNames []string `json:"resourceNames"`
		} `json:"rbacRules"`
	} `json:"stacks"`
}

func readIntent(t testing.TB) intent {
	t.Helper()
	cmd := exec.Command("npx", "--no-install", "tsx", "test/kube/intent.ts")
	cmd.Dir = plan.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/kube/intent.ts: %v\n%s", err, stderr.String())
	}
	var in intent
	if err := json.Unmarshal(out, &in); err != nil {
		t.Fatalf("test/kube/intent.ts: %v", err)
	}
	kargoStagesOf(t, &in)
	return in
}

// kargoStage is a declared stage in Kargo: the Stages that promote into it (itself, for a gate; one per
// program, for a preview or update stage) and its join, if any.
type kargoStage struct {
	Promoted []string
	Join     string
}

// kargoStagesOf reads, for each declared stage, its Stages in the kargo plan: a gate is the Stage of its
// name; a preview or update stage S is one Stage per program, S-<program> (lib/pipeline/graph.ts
// programStageName), and, when others take Freight from S, a join of the name S: a control-flow Stage, with
// no promotion steps (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go IsControlFlow). Every Stage of the
// plan must be one of them.
func kargoStagesOf(t testing.TB, w *intent) {
	t.Helper()
	steps := map[string]int{}
	for _, s := range plan.Load(t, "kargo").OfKind("Stage") {
		list, _, _ := unstructured.NestedSlice(s.Object, "spec", "promotionTemplate", "spec", "steps")
		steps[s.GetName()] = len(list)
	}
	w.kargoStages = map[string]kargoStage{}
	for _, d := range w.Pipeline.Stages {
		var k kargoStage
		if d.Kind == "gate" {
			k.Promoted = []string{d.Name}
		} else {
			for _, p := range w.Pipeline.Programs {
				k.Promoted = append(k.Promoted, d.Name+"-"+p.Name)
			}
			if n, ok := steps[d.Name]; ok {
				if n != 0 {
					t.Fatalf("Stage %s has the name of declared stage %s and promotion steps: no join", d.Name, d.Name)
				}
				k.Join = d.Name
			}
		}
		for _, s := range k.Promoted {
			if n, ok := steps[s]; !ok || n == 0 {
				t.Fatalf("declared stage %s: the kargo plan has no Stage %s that promotes", d.Name, s)
			}
		}
		w.kargoStages[d.Name] = k
		w.kargoOrder = append(w.kargoOrder, k.Promoted...)
		if k.Join != "" {
			w.kargoOrder = append(w.kargoOrder, k.Join)
		}
	}
	for s := range steps {
		if !slices.Contains(w.kargoOrder, s) {
			t.Fatalf("Stage %s of the kargo plan is no declared stage's", s)
		}
	}
}
