package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// serverVerdict is "" when the API server accepts the object, else its reason. A dry-run create with
// strict field validation: the server validates (schema, CEL, unknown fields) before it looks for an
// existing object, so AlreadyExists means the object passed (k8s.io/apiserver v0.34.3
// pkg/registry/generic/registry/store.go Create: BeforeCreate, then the dry-run storage's existence check).
func serverVerdict(ctx context.Context, in *installation, o *unstructured.Unstructured) string {
	r, err := in.resource(o)
	if err != nil {
		return err.Error()
	}
	_, err = r.Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
	if err == nil || apierrors.IsAlreadyExists(err) {
		return ""
	}
	// The API server runs validating admission after the schema accepted the object (k8s.io/apiserver
	// v0.34.3 pkg/registry/generic/registry/store.go, Create: BeforeCreate, then createValidation): a refusal
	// by a ValidatingAdmissionPolicy (the Stacks' binding to their stage, TestStacksBoundToTheirStage's) is
	// the schema's yes.
	if strings.Contains(err.Error(), "ValidatingAdmissionPolicy '") {
		return ""
	}
	return err.Error()
}

// ourVerdicts runs the project's own validation (lib/crds/validate.ts, through test/kube/verdicts.ts) over
// every object at once: for each, the errors it reports.
func ourVerdicts(t *testing.T, objects []*unstructured.Unstructured) [][]string {
	t.Helper()
	raw, err := json.Marshal(objects)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npx", "--no-install", "tsx", "test/kube/verdicts.ts")
	cmd.Dir = plan.RepoRoot()
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/kube/verdicts.ts: %v\n%s", err, stderr.String())
	}
	var verdicts [][]string
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(objects) {
		t.Fatalf("test/kube/verdicts.ts answered %d verdicts for %d objects: %v", len(verdicts), len(objects), err)
	}
	return verdicts
}

// kargoOnly are our errors from Kargo's own schemas for step configs and Warehouse subscriptions, which
// the CRDs leave free-form: Kargo checks them when it runs a step or a subscription
// (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/schemas, pkg/subscription), never the API server.
var kargoOnly = regexp.MustCompile(`: /spec/(promotionTemplate/spec/)?steps/\d+/config\b|: /spec/(promotionTemplate/spec/)?steps/\d+/uses: "[^"]*" is not a built-in Kargo step|: /spec/subscriptions/\d+\b`)

// serverChecks are our errors of the kinds the API server checks too.
func serverChecks(errors []string) (server []string, kargo int) {
	for _, e := range errors {
		if kargoOnly.MatchString(e) {
			kargo++
		} else {
			server = append(server, e)
		}
	}
	return server, kargo
}

// For every custom resource we emit and each of its mutations, our validation (npm test's) and the API
// server agree on accept or reject. Where they differ, ours is wrong.
func TestOurValidationAgreesWithTheServer(t *testing.T) {
	in := install(t)
	if in.pkoMissing != "" {
		t.Log(in.pkoMissing)
	}
	ctx := context.Background()
	mutations := corpus(in.objects, crdSchemas(in.crds))
	objects := make([]*unstructured.Unstructured, len(mutations))
	for i, m := range mutations {
		objects[i] = m.object
	}
	ours := ourVerdicts(t, objects)
	counts := map[string][2]int{} // kind of mutation → [agreed, rejected by the server]
	kargoChecked := 0
	verdicts := make([]string, len(mutations))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, m := range mutations {
		wg.Add(1)
		sem <- struct{}{}
		go func() { defer func() { <-sem; wg.Done() }(); verdicts[i] = serverVerdict(ctx, in, m.object) }()
	}
	wg.Wait()
	for i, m := range mutations {
		server := verdicts[i]
		checks, kargo := serverChecks(ours[i])
		if kargo > 0 && len(checks) == 0 && server == "" {
			kargoChecked++
		}
		ourReject, serverReject := len(checks) > 0, server != ""
		c := counts[m.kind]
		if ourReject == serverReject {
			c[0]++
		}
		if serverReject {
			c[1]++
		}
		counts[m.kind] = c
		switch {
		case m.kind == "as emitted" && (ourReject || serverReject):
			t.Errorf("%s: refused as emitted; server: %q, ours: %q", m.from, server, ours[i])
		case ourReject && !serverReject:
			t.Errorf("%s: ours rejects what the server accepts: %q", m, checks)
		case serverReject && !ourReject:
			t.Errorf("%s: the server rejects what ours accepts: %s", m, server)
		}
	}
	t.Logf("%d mutations the server accepts are refused by Kargo's own step-config or subscription schema, which our validation also checks", kargoChecked)
	for _, kind := range sortedKeys(counts) {
		c := counts[kind]
		t.Logf("%-26s %4d agreed, %4d rejected by the server", kind, c[0], c[1])
	}
	rejected := map[string]int{}
	for kind, c := range counts {
		rejected[strings.SplitN(kind, ":", 2)[0]] += c[1]
	}
	if rejected["CEL"] == 0 || rejected["missing required"] == 0 || rejected["wrong type"] == 0 || rejected["unknown field"] == 0 {
		t.Errorf("the corpus has no mutation the server rejects of some kind: %v", rejected)
	}
}
