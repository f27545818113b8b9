package admissioncost

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"

	"infra-change-platform/test/internal/plan"
)

// policy is one compiled ValidatingAdmissionPolicy: its match conditions and validations, as the API server
// compiles them (strict cost enforcement, the default since Kubernetes v1.32).
type policy struct {
	match, validations cel.ConditionEvaluator
}

func compile(t *testing.T, o map[string]any) policy {
	raw, _ := json.Marshal(o)
	var p admissionregistrationv1.ValidatingAdmissionPolicy
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewCompositionEnv(cel.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion(), true))
	if err != nil {
		t.Fatal(err)
	}
	compiler := cel.NewCompositedCompilerFromTemplate(env)
	opts := cel.OptionalVariableDeclarations{HasAuthorizer: true, StrictCost: true}
	var variables []cel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		variables = append(variables, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, opts, environment.StoredExpressions)
	var matches, validations []cel.ExpressionAccessor
	for i := range p.Spec.MatchConditions {
		matches = append(matches, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
	}
	for _, v := range p.Spec.Validations {
		validations = append(validations, &validating.ValidationCondition{Expression: v.Expression, Message: v.Message})
	}
	return policy{
		match:       compiler.CompileCondition(matches, opts, environment.StoredExpressions),
		validations: compiler.CompileCondition(validations, opts, environment.StoredExpressions),
	}
}

// cost evaluates conditions for a request and returns what they cost, failing on any evaluation error (a cost
// over the per-expression limit is one).
func cost(t *testing.T, c cel.ConditionEvaluator, attr *admission.VersionedAttributes, budget int64) (int64, []cel.EvaluationResult) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "pulumi.com", Version: "v1", Resource: "stacks"}
	request := cel.CreateAdmissionRequest(attr.Attributes, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(attr.VersionedKind))
	ns := cel.CreateNamespaceObject(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: attr.GetNamespace()}})
	results, remaining, err := c.ForInput(context.Background(), attr, request, cel.OptionalVariableBindings{}, ns, budget)
	if err != nil {
		t.Fatalf("evaluating: %v", err)
	}
	for _, r := range results {
		if r.Error != nil {
			t.Fatalf("%s: %v", r.ExpressionAccessor.GetExpression(), r.Error)
		}
	}
	return budget - remaining, results
}

func request(o, old *unstructured.Unstructured, op admission.Operation) *admission.VersionedAttributes {
	gvk := o.GroupVersionKind()
	gvr := schema.GroupVersionResource{Group: "pulumi.com", Version: "v1", Resource: "stacks"}
	var oldObject = old
	attrs := admission.NewAttributesRecord(o, nil, gvk, o.GetNamespace(), o.GetName(), gvr, "", op, nil, false, &user.DefaultInfo{Name: "argocd"})
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: o}
	if oldObject != nil {
		va.VersionedOldObject = oldObject
	}
	return va
}

// sampled is how many of the largest pipeline's policies are measured, the longest first.
const sampled = 25

// The largest pipeline's policies holding the longest Stacks, each run on its own planned Stack as Argo CD
// creates it and on an update that leaves its spec as it was: every expression evaluates within the
// per-expression limit, the Stack is admitted, and what a policy costs per request is far within the runtime
// budget of one policy and binding (k8s.io/apiserver v0.34.3 pkg/apis/cel/config.go) and of match conditions.
func TestAdmissionCostsStayWithinTheAPIServersBudgets(t *testing.T) {
	cmd := exec.Command("npx", "--no-install", "tsx", "test/kube/largest.ts")
	cmd.Dir = plan.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("test/kube/largest.ts: %v\n%s", err, stderr.String())
	}
	var largest struct {
		Admission []map[string]any `json:"admission"`
		Stacks    []struct {
			Application string         `json:"application"`
			Manifest    map[string]any `json:"manifest"`
		} `json:"stacks"`
	}
	if err := json.Unmarshal(out, &largest); err != nil {
		t.Fatal(err)
	}
	stacks := map[string]*unstructured.Unstructured{}
	for _, s := range largest.Stacks {
		o := &unstructured.Unstructured{Object: s.Manifest}
		o.SetAnnotations(map[string]string{"argocd.argoproj.io/tracking-id": s.Application + ":pulumi.com/Stack:" + o.GetNamespace() + "/" + o.GetName()})
		_ = unstructured.SetNestedField(o.Object, "0123456789012345678901234567890123456789", "spec", "commit")
		stacks[o.GetName()] = o
	}
	// The stages' policies differ only in the Stack they hold, and what one costs grows with its Stack: the
	// policies holding the longest Stacks are measured (compiling all takes minutes on a busy machine).
	var policies []map[string]any
	for _, o := range largest.Admission {
		// A stage's policy is bound to its Stack by name; the policy for every other name evaluates `false`.
		if o["kind"] == "ValidatingAdmissionPolicy" && stacks[strings.TrimSuffix((&unstructured.Unstructured{Object: o}).GetName(), ".bound-to-stage")] != nil {
			policies = append(policies, o)
		}
	}
	if len(policies) != len(stacks) {
		t.Fatalf("%d policies of a stage for %d planned Stacks", len(policies), len(stacks))
	}
	size := func(o map[string]any) int { raw, _ := json.Marshal(o); return len(raw) }
	sort.SliceStable(policies, func(i, j int) bool { return size(policies[i]) > size(policies[j]) })
	policies = policies[:min(len(policies), sampled)]
	var most, mostMatch int64
	measured := 0
	for _, o := range policies {
		name := (&unstructured.Unstructured{Object: o}).GetName()
		stack := stacks[strings.TrimSuffix(name, ".bound-to-stage")]
		p := compile(t, o)
		c, results := cost(t, p.validations, request(stack, nil, admission.Create), celconfig.RuntimeCELCostBudget)
		for _, r := range results {
			if r.EvalResult.Value() != true {
				t.Errorf("%s refuses its planned Stack: %s", name, r.ExpressionAccessor.GetExpression())
			}
		}
		m, _ := cost(t, p.match, request(stack, stack.DeepCopy(), admission.Update), celconfig.RuntimeCELCostBudgetMatchConditions)
		most, mostMatch = max(most, c), max(mostMatch, m)
		measured++
	}
	t.Logf("the %d policies holding the longest of %d Stacks: at most %d of the %d runtime budget per policy and binding, %d of the %d for match conditions",
		measured, len(stacks), most, celconfig.RuntimeCELCostBudget, mostMatch, celconfig.RuntimeCELCostBudgetMatchConditions)
	if most > celconfig.RuntimeCELCostBudget/10 || mostMatch > celconfig.RuntimeCELCostBudgetMatchConditions/10 {
		t.Errorf("a policy costs %d (validations) and %d (match conditions): within a tenth of the budgets no more", most, mostMatch)
	}
}
