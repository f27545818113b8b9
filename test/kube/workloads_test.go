package kube

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"infra-change-platform/test/internal/plan"
)

// holdsPodSpec says whether a Go type holds a core/v1 PodSpec anywhere in its fields: the kinds whose objects
// run a pod (or a template of one) under the ServiceAccount the spec names.
func holdsPodSpec(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t == reflect.TypeOf(corev1.PodSpec{}) {
		return true
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return false
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		if holdsPodSpec(t.Field(i).Type, seen) {
			return true
		}
	}
	return false
}

// podRunningResources are derived, not listed: every built-in kind client-go v0.34.3 registers whose type
// holds a PodSpec (by reflection over k8s.io/api), and every resource of the upstream CRDs at our pins whose
// schema names a serviceAccountName. Each is group/resource.
func podRunningResources(t *testing.T) ([]schema.GroupResource, string) {
	found := map[schema.GroupResource]bool{}
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == "__internal" || !holdsPodSpec(typ, map[reflect.Type]bool{}) {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		found[plural.GroupResource()] = true
	}
	sources, pkoMissing := crdSources(t)
	for _, crd := range readCRDs(t, sources) {
		raw, err := json.Marshal(crd.Object["spec"])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"serviceAccountName"`)) {
			continue
		}
		group, _, _ := unstructuredString(crd.Object, "spec", "group")
		plural, _, _ := unstructuredString(crd.Object, "spec", "names", "plural")
		found[schema.GroupResource{Group: group, Resource: plural}] = true
	}
	out := make([]schema.GroupResource, 0, len(found))
	for gr := range found {
		out = append(out, gr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, pkoMissing
}

func unstructuredString(obj map[string]interface{}, fields ...string) (string, bool, error) {
	var cur interface{} = obj
	for _, f := range fields {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// TestEscalationRefusesEveryPodRunningResource: cluster-setup's stackRbacRules check (cluster-setup/escalation.ts)
// refuses create, update and patch on every resource whose objects run a pod under a ServiceAccount they
// name, built-in or custom, as derived above; reading them stays allowed. No API server is started.
func TestEscalationRefusesEveryPodRunningResource(t *testing.T) {
	resources, pkoMissing := podRunningResources(t)
	wanted := []string{"pods", "jobs.batch", "cronjobs.batch", "deployments.apps", "rollouts.argoproj.io"}
	// PKO's CRDs come only from ../shared/crds (no module the proxy serves holds them); a fork without it
	// checks every other derived resource, and says so.
	if pkoMissing == "" {
		wanted = append(wanted, "stacks.pulumi.com", "workspaces.auto.pulumi.com")
	} else {
		t.Logf("PKO's resources not derived: %s", pkoMissing)
	}
	for _, want := range wanted {
		if !containsGroupResource(resources, want) {
			t.Fatalf("the derivation found no %s (it found %v): it is broken, not the check", want, resources)
		}
	}
	type rule struct {
		APIGroups []string `json:"apiGroups"`
		Resources []string `json:"resources"`
		Verbs     []string `json:"verbs"`
	}
	var rules []rule
	for _, gr := range resources {
		for _, verb := range []string{"create", "update", "patch", "get"} {
			rules = append(rules, rule{[]string{gr.Group}, []string{gr.Resource}, []string{verb}})
		}
	}
	raw, err := json.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npx", "--no-install", "tsx", "test/kube/escalation.ts")
	cmd.Dir = plan.RepoRoot()
	cmd.Stdin = bytes.NewReader(raw)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/kube/escalation.ts: %v\n%s", err, stderr.String())
	}
	var verdicts []string
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(rules) {
		t.Fatalf("test/kube/escalation.ts answered %d verdicts for %d rules: %v", len(verdicts), len(rules), err)
	}
	for i, r := range rules {
		refused := verdicts[i] != ""
		if r.Verbs[0] == "get" && refused {
			t.Errorf("%s on %s: refused (%s), but reading it runs nothing", r.Verbs[0], r.Resources[0], verdicts[i])
		}
		if r.Verbs[0] != "get" && (!refused || !strings.Contains(verdicts[i], " on "+r.Resources[0])) {
			t.Errorf("%s on %s (group %q): granted or refused for another reason (%q); its objects run a pod under a ServiceAccount they name",
				r.Verbs[0], r.Resources[0], r.APIGroups[0], verdicts[i])
		}
	}
	t.Logf("%d pod-running resources checked: %v", len(resources), resources)
}

func containsGroupResource(list []schema.GroupResource, want string) bool {
	for _, gr := range list {
		if gr.String() == want {
			return true
		}
	}
	return false
}
