package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/akuity/kargo/pkg/controller/git"
	"github.com/akuity/kargo/pkg/expressions"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// Engine runs promotions of the kargo project's Stages as Kargo's local engine would
// (akuity/kargo v1.11.2 pkg/promotion/local_orchestrator.go): steps in order, each config evaluated right
// before its step runs, each step's output kept under its alias for the steps after it.
type Engine struct {
	Kargo *plan.Project
	// Remotes is where each repository URL the steps name lives on this machine (a bare repository).
	Remotes map[string]string
	// Freight is the API server's view of the project's Freight metadata.
	Freight *FreightStore
	// GitUser is the controller's git identity (controllerGitUser); an error finding it fails git-clone.
	GitUser    git.User
	gitUserErr error
	// ArgoCD acts on Applications between reconciles of a Running step; nil is SyncSucceeds.
	ArgoCD ArgoCD
	// ConfigMaps are the project namespace's ConfigMaps by name, each its data: what configMap() reads.
	ConfigMaps map[string]map[string]string

	apps     *Applications
	appsOnce sync.Once
	appsErr  error
}

func NewEngine(kargo *plan.Project, remotes map[string]string, freight *FreightStore) *Engine {
	user, err := controllerGitUser(kargo)
	return &Engine{Kargo: kargo, Remotes: remotes, Freight: freight, GitUser: user, gitUserErr: err}
}

// Promotion is what a Promotion object tells the engine: into which Stage, which Freight, created by whom.
type Promotion struct {
	Name    string
	Stage   string
	Freight *Freight
	// Actor is the Promotion's create-actor annotation, e.g. "email:alice@example.com" (pkg/api/event.go
	// FormatEventUserActor); steps see it as ctx.meta.promotion.actor without its claim prefix (promotionActor).
	Actor string
	// WorkDir is where the steps work (Kargo makes one per Promotion and removes it afterwards).
	WorkDir string
	// UIBaseURL is ctx.uiBaseUrl: the controller's API_SERVER_BASE_URL (akuity/kargo v1.11.2
	// pkg/controller/promotions/promotions.go), Kargo's own address; empty unless a scenario sets it.
	UIBaseURL string
}

// StepRecord is one step as it ran: its evaluated config and what it returned.
type StepRecord struct {
	Alias  string
	Uses   string
	Config map[string]any
	Result StepResult
	Err    error
	// Statuses is the status of each run of the step: a Running step runs again at the next reconcile.
	Statuses []string
}

// Result is a finished promotion: every step that ran, and the shared state (outputs by alias).
type Result struct {
	Steps []StepRecord
	State map[string]any
}

// Step is the record of the step with that alias (or kind), nil if it did not run.
func (r *Result) Step(aliasOrKind string) *StepRecord {
	for i := range r.Steps {
		s := &r.Steps[i]
		if s.Alias == aliasOrKind || s.Uses == aliasOrKind {
			return s
		}
	}
	return nil
}

type variable struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

type taskRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// step is a PromotionStep as the plan emits it. Fields the harness does not run (retry, continueOnError) are
// refused rather than ignored; `if` is step_if.go's.
type step struct {
	If     string         `json:"if,omitempty"`
	Uses   string         `json:"uses,omitempty"`
	As     string         `json:"as,omitempty"`
	Task   *taskRef       `json:"task,omitempty"`
	Vars   []variable     `json:"vars,omitempty"`
	Config map[string]any `json:"config,omitempty"`
}

// alias is PromotionStep.GetAlias (akuity/kargo v1.11.2 api/v1alpha1/promotion_types.go).
func (s step) alias(i int) string {
	switch {
	case s.As != "":
		return s.As
	case s.Task != nil:
		return fmt.Sprintf("task-%d", i+1)
	default:
		return fmt.Sprintf("step-%d", i+1)
	}
}

// aliasSeparator is api.PromotionAliasSeparator: a task's steps are "<task alias>::<step alias>".
const aliasSeparator = "::"

func decodeStrict(from any, into any) error {
	raw, err := json.Marshal(from)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func (e *Engine) object(kind, name string) (*unstructured.Unstructured, error) {
	for _, o := range e.Kargo.OfKind(kind) {
		if o.GetName() == name {
			return o, nil
		}
	}
	return nil, fmt.Errorf("the kargo plan has no %s %q", kind, name)
}

// inflate turns a promotion template's steps into the steps that run, as pkg/api/promotion.go
// InflateSteps does: a task step becomes the task's steps, aliased "<task alias>::<step alias>", each
// with the task's variables that have a value (unless the Promotion sets them) followed by the task
// step's own.
func (e *Engine) inflate(steps []step, promoVars []variable) ([]step, error) {
	var out []step
	for i, s := range steps {
		if s.Task == nil {
			s.As = s.alias(i)
			out = append(out, s)
			continue
		}
		if s.Task.Kind != "PromotionTask" && s.Task.Kind != "" {
			return nil, fmt.Errorf("task %q: the harness runs PromotionTasks of the project, not %s", s.Task.Name, s.Task.Kind)
		}
		taskAlias := s.alias(i)
		obj, err := e.object("PromotionTask", s.Task.Name)
		if err != nil {
			return nil, err
		}
		var spec struct {
			Vars  []variable `json:"vars,omitempty"`
			Steps []step     `json:"steps"`
		}
		if err := decodeStrict(obj.Object["spec"], &spec); err != nil {
			return nil, fmt.Errorf("PromotionTask %q: %w", s.Task.Name, err)
		}
		set := map[string]bool{}
		for _, v := range promoVars {
			if v.Value != "" {
				set[v.Name] = true
			}
		}
		stepSet := map[string]bool{}
		for _, v := range s.Vars {
			if v.Value != "" {
				stepSet[v.Name] = true
			}
		}
		var vars []variable
		for _, v := range spec.Vars {
			switch {
			case set[v.Name]:
			case v.Value != "":
				vars = append(vars, v)
			case !stepSet[v.Name]:
				return nil, fmt.Errorf("missing value for variable %q", v.Name)
			}
		}
		vars = append(vars, s.Vars...)
		for j, ts := range spec.Steps {
			if ts.Task != nil {
				return nil, fmt.Errorf("PromotionTask %q: a task step cannot use another task", s.Task.Name)
			}
			ts.As = taskAlias + aliasSeparator + ts.alias(j)
			ts.Vars = append(append([]variable{}, vars...), ts.Vars...)
			out = append(out, ts)
		}
	}
	return out, nil
}

// Steps is the Stage's promotion as it runs: its template's steps inflated, and the Promotion's vars.
func (e *Engine) Steps(stage string) ([]step, []variable, error) {
	obj, err := e.object("Stage", stage)
	if err != nil {
		return nil, nil, err
	}
	var template struct {
		Vars  []variable `json:"vars,omitempty"`
		Steps []step     `json:"steps"`
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec", "promotionTemplate", "spec")
	if err := decodeStrict(spec, &template); err != nil {
		return nil, nil, fmt.Errorf("Stage %q promotionTemplate: %w", stage, err)
	}
	steps, err := e.inflate(template.Steps, template.Vars)
	return steps, template.Vars, err
}

func (e *Engine) functions(stage string) (*functions, error) {
	obj, err := e.object("Stage", stage)
	if err != nil {
		return nil, err
	}
	f := &functions{project: e.Kargo.OfKind("Project")[0].GetName(), warehouses: map[string][]string{}, store: e.Freight, configMaps: e.ConfigMaps}
	requested, _, _ := unstructured.NestedSlice(obj.Object, "spec", "requestedFreight")
	for _, r := range requested {
		var req struct {
			Origin  FreightOrigin  `json:"origin"`
			Sources map[string]any `json:"sources"`
		}
		if err := decodeStrict(r, &req); err != nil {
			return nil, fmt.Errorf("Stage %q requestedFreight: %w", stage, err)
		}
		f.requested = append(f.requested, requestedFreight{Origin: req.Origin})
	}
	for _, w := range e.Kargo.OfKind("Warehouse") {
		subs, _, _ := unstructured.NestedSlice(w.Object, "spec", "subscriptions")
		f.warehouses[w.GetName()] = []string{}
		for _, s := range subs {
			if url, ok, _ := unstructured.NestedString(s.(map[string]any), "git", "repoURL"); ok {
				f.warehouses[w.GetName()] = append(f.warehouses[w.GetName()], url)
			}
		}
	}
	return f, nil
}

// env is the expression environment of one step: pkg/promotion/evaluator.go BuildExprEnv with vars,
// outputs and, for a step of a task, task.outputs (the outputs of the task's steps by their own alias).
func env(p Promotion, project, alias string, vars map[string]any, state map[string]any) map[string]any {
	freightName, freightAlias, origin := "", "", ""
	if p.Freight != nil {
		freightName, freightAlias, origin = p.Freight.Name, p.Freight.Alias, p.Freight.Origin.Name
	}
	env := map[string]any{
		"ctx": map[string]any{
			"uiBaseUrl": p.UIBaseURL,
			"project":   project,
			"promotion": p.Name,
			"stage":     p.Stage,
			"targetFreight": map[string]any{
				"name":   freightName,
				"alias":  freightAlias,
				"origin": map[string]any{"name": origin},
			},
			"meta": map[string]any{
				"promotion": map[string]any{"actor": promotionActor(p.Actor), "rollback": false},
				"step":      map[string]any{"alias": alias},
			},
		},
		"vars":    vars,
		"outputs": state,
	}
	if i := strings.Index(alias, aliasSeparator); i > 0 && strings.Count(alias, aliasSeparator) == 1 {
		namespace := alias[:i]
		task := map[string]any{}
		for k, v := range state {
			if strings.HasPrefix(k, namespace+aliasSeparator) {
				task[k[len(namespace)+len(aliasSeparator):]] = v
			}
		}
		env["task"] = map[string]any{"outputs": task}
	}
	return env
}

// Promote runs the Stage's promotion of the Freight. A step that says Running (argocd-update waiting on
// Argo CD) runs again at the next reconcile, after the Argo CD stand-in acted (runUntilDone). It stops at
// the first step that errors or fails, as a Promotion does when no step says otherwise, and returns that
// step's error.
func (e *Engine) Promote(ctx context.Context, p Promotion) (*Result, error) {
	if p.WorkDir == "" {
		dir, err := os.MkdirTemp("", "promotion-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		p.WorkDir = dir
	}
	steps, promoVars, err := e.Steps(p.Stage)
	if err != nil {
		return nil, err
	}
	fns, err := e.functions(p.Stage)
	if err != nil {
		return nil, err
	}
	if p.Freight != nil {
		fns.freight = []*Freight{p.Freight}
	}
	project := fns.project
	result := &Result{State: map[string]any{}}
	for _, s := range steps {
		if skipped, err := e.skip(p, project, s, promoVars, result.State, fns); skipped != nil || err != nil {
			if err != nil {
				return result, fmt.Errorf("step %q (%s): %w", s.As, s.Uses, err)
			}
			result.Steps = append(result.Steps, *skipped)
			continue
		}
		rec := StepRecord{Alias: s.As, Uses: s.Uses}
		config, err := e.evaluate(p, project, s, promoVars, result.State, fns)
		rec.Config = config
		if err == nil {
			rec.Result, rec.Statuses, err = e.runUntilDone(ctx, s.Uses, &StepContext{
				WorkDir:   p.WorkDir,
				Project:   project,
				Stage:     p.Stage,
				Promotion: p.Name,
				Alias:     s.As,
				Actor:     promotionActor(p.Actor),
				Engine:    e,
			}, config)
		}
		result.State[s.As] = rec.Result.Output
		rec.Err = err
		result.Steps = append(result.Steps, rec)
		if err != nil {
			return result, fmt.Errorf("step %q (%s): %w", s.As, s.Uses, err)
		}
		if rec.Result.Status == StatusErrored || rec.Result.Status == StatusFailed {
			return result, fmt.Errorf("step %q (%s): %s", s.As, s.Uses, rec.Result.Status)
		}
	}
	return result, nil
}

// evaluate is pkg/promotion/evaluator.go Vars and Config: the Promotion's vars, then the step's (which see
// the outputs so far), then the config as a JSON template over ctx, vars, outputs and task.outputs, read
// back with go.yaml.in/yaml/v3 as Kargo reads it.
func (e *Engine) evaluate(p Promotion, project string, s step, promoVars []variable, state map[string]any, fns *functions) (map[string]any, error) {
	opts := fns.options()
	vars, err := stepVars(p, project, s, promoVars, state, fns)
	if err != nil {
		return nil, err
	}
	if s.Config == nil {
		return nil, nil
	}
	raw, err := json.Marshal(s.Config)
	if err != nil {
		return nil, err
	}
	evaluated, err := expressions.EvaluateJSONTemplate(raw, env(p, project, s.As, vars, state), opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to get step config: %w", err)
	}
	var config map[string]any
	if err := yaml.Unmarshal(evaluated, &config); err != nil {
		return nil, fmt.Errorf("failed to get step config: %w", err)
	}
	return config, nil
}

// promotionActor is what Kargo hands steps as ctx.meta.promotion.actor: the create-actor annotation with its
// "<claim>:" prefix cut when it has exactly one, and nothing for an unknown actor (akuity/kargo v1.11.2
// pkg/api/annotations.go CreateActorAnnotationValue). A signed-in user is recorded by email address alone.
func promotionActor(annotation string) string {
	if annotation == "unknown actor" {
		return ""
	}
	if parts := strings.Split(annotation, ":"); len(parts) == 2 {
		return parts[1]
	}
	return annotation
}
