package kube

// What the pipeline and cluster-setup declare about who may reach what, read once through test/kube/intent.ts;
// reach.go asks the API server's authorizer about each identity it names.

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"

	"infra-change-platform/test/internal/plan"
)

// intent is what test/kube/intent.ts prints: the pipeline as the programs read it and the stack identities'
// config as the offline plan configures cluster-setup.
type intent struct {
	Pipeline struct {
		Project      string `json:"project"`
		Environments map[string]struct {
			DestructiveChangeApprovers []string `json:"destructiveChangeApprovers"`
		} `json:"environments"`
		Stages []struct {
			Name        string   `json:"name"`
			Kind        string   `json:"kind"`
			Environment string   `json:"environment"`
			Approvers   []string `json:"approvers"`
		} `json:"stages"`
	} `json:"pipeline"`
	ProtectedEnvironments []string `json:"protectedEnvironments"`
	Stacks                struct {
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
	return in
}
