package analysis

import (
	"fmt"
	"testing"

	"github.com/akuity/kargo/pkg/expressions"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	analysisutil "github.com/argoproj/argo-rollouts/utils/analysis"
	"github.com/expr-lang/expr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// gitCommit is the part of Kargo's GitCommit (api/v1alpha1, `commitFrom()`'s result type, named in
// akuity/kargo v1.11.2 pkg/expressions/function/functions.go, CommitFromFreight) an expression can read.
// Kargo's API module cannot be built here, so the Freight's commit comes from the test.
type gitCommit struct {
	RepoURL string `json:"repoURL,omitempty"`
	ID      string `json:"id,omitempty"`
	Branch  string `json:"branch,omitempty"`
	Message string `json:"message,omitempty"`
}

// commitFrom answers `commitFrom(repoURL)` with the Freight's one commit, and fails for any other repository,
// as Kargo does when the Freight holds no commit from it.
func commitFrom(freight gitCommit) expr.Option {
	return expr.Function("commitFrom", func(a ...any) (any, error) {
		if len(a) != 1 {
			return nil, fmt.Errorf("expected 1 argument, got %d", len(a))
		}
		if url, _ := a[0].(string); url != freight.RepoURL {
			return nil, fmt.Errorf("commit from repo %v not found in referenced Freight", a[0])
		}
		return freight, nil
	}, new(func(repoURL string) gitCommit))
}

// verification is a Stage's spec.verification as the plan emits it.
type verification struct {
	AnalysisTemplates []struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"analysisTemplates"`
	Args []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"args"`
	// AnalysisRunMetadata is copied onto every run Kargo builds (pkg/rollouts/analysis_run_builder.go).
	AnalysisRunMetadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"analysisRunMetadata"`
}

func stageVerification(t testing.TB, stage *unstructured.Unstructured) verification {
	t.Helper()
	raw, found, err := unstructured.NestedMap(stage.Object, "spec", "verification")
	if err != nil || !found {
		t.Fatalf("Stage %s has no spec.verification", stage.GetName())
	}
	var v verification
	plan.Into(t, raw, &v)
	return v
}

// newRun is the AnalysisRun Kargo creates when it verifies `stage` with Freight holding `freight`: each
// argument evaluated as an expression with the stage's context (akuity/kargo v1.11.2
// pkg/rollouts/analysis_run_builder.go, buildArgs; the env from pkg/controller/stages/regular_stages.go),
// refused unless it is a string, then merged into the templates' own as Argo Rollouts merges them.
func newRun(t testing.TB, kargo *plan.Project, stage *unstructured.Unstructured, freight gitCommit) *v1alpha1.AnalysisRun {
	t.Helper()
	v := stageVerification(t, stage)
	env := map[string]any{"ctx": map[string]any{"project": stage.GetNamespace(), "stage": stage.GetName()}}
	var args []v1alpha1.Argument
	for _, a := range v.Args {
		arg := v1alpha1.Argument{Name: a.Name}
		if a.Value != "" {
			value, err := expressions.EvaluateTemplate(a.Value, env, commitFrom(freight))
			if err != nil {
				t.Fatalf("Stage %s: evaluate argument %q: %v", stage.GetName(), a.Name, err)
			}
			s, ok := value.(string)
			if !ok {
				t.Fatalf("Stage %s: evaluated argument %q value is not a string but %T", stage.GetName(), a.Name, value)
			}
			arg.Value = &s
		}
		args = append(args, arg)
	}
	var templates []*v1alpha1.AnalysisTemplate
	for _, ref := range v.AnalysisTemplates {
		if ref.Kind != "AnalysisTemplate" {
			t.Fatalf("Stage %s: verification uses a %s; the plan emits AnalysisTemplates", stage.GetName(), ref.Kind)
		}
		var tpl v1alpha1.AnalysisTemplate
		plan.Into(t, kargo.Object(t, "AnalysisTemplate", ref.Name).Object, &tpl)
		templates = append(templates, &tpl)
	}
	labels := map[string]string{"kargo.akuity.io/stage": stage.GetName()}
	for k, val := range v.AnalysisRunMetadata.Labels {
		labels[k] = val
	}
	run, err := analysisutil.NewAnalysisRunFromTemplates(templates, nil, args, nil, nil,
		labels, v.AnalysisRunMetadata.Annotations,
		stage.GetName()+"-verification", "", stage.GetNamespace())
	if err != nil {
		t.Fatalf("Stage %s: building the AnalysisRun: %v", stage.GetName(), err)
	}
	// Owned by the Freight it verifies, as Kargo makes it (regular_stages.go, WithOwner): a stop names it.
	run.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kargo.akuity.io/v1alpha1", Kind: "Freight", Name: freightName, UID: "0b8c5f5e-freight"}}
	return run
}

// freightName is the Freight every run of the harness verifies (Kargo names Freight by a SHA-1 digest).
const freightName = "5e3f9a1c7b2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f"

// argValue is the run's value of one argument (nil when it comes from a Secret).
func argValue(run *v1alpha1.AnalysisRun, name string) *string {
	for _, a := range run.Spec.Args {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

// against is the run pointed at the stand-in instead of the emitted Pulumi Cloud URL; everything else
// stays as emitted.
func against(run *v1alpha1.AnalysisRun, apiURL string) *v1alpha1.AnalysisRun {
	run = run.DeepCopy()
	for i := range run.Spec.Args {
		if run.Spec.Args[i].Name == "api-url" {
			run.Spec.Args[i].Value = &apiURL
		}
	}
	return run
}
