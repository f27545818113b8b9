package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
)

// The one-program case, `npm run rollback -- <environment> --to A --program <p>`: the program and every program
// depending on it go back from B to A through Kargo's promotion engine, dependents first, and the rest of the
// environment keeps running B; the request's stages, as lib/rollback.ts writes them, decide whose records
// carry the rollback.

// rollbackStep is one program's preview and update stage, as lib/pipeline/rollback.ts names them.
type rollbackStep struct {
	Program string `json:"program"`
	Preview string `json:"preview"`
	Update  string `json:"update"`
}

// scenarioRun promotes the scenario's stages through the engine, with Freight A and B of its repository.
type scenarioRun struct {
	t       *testing.T
	e       *Engine
	project *plan.Project
	r       *Remote
	a, b    *Freight
	n       int
}

// newScenarioRun is the premise of every rollback: the environment runs B, released dependencies first, with
// no request on record.
func newScenarioRun(t *testing.T, s *rollbackScenario, project *plan.Project, r *Remote) *scenarioRun {
	t.Helper()
	a, b := freightAt(t, r, r.A), freightAt(t, r, r.B)
	sr := &scenarioRun{t: t, e: NewEngine(project, map[string]string{r.URL: r.Dir}, NewFreightStore(a, b)), project: project, r: r, a: a, b: b}
	for _, step := range s.Steps {
		for _, stage := range []string{step.Preview, step.Update} {
			kargoCreatedBranch(t, r, appIn(t, project, stage).Branch)
		}
	}
	for i := len(s.Steps) - 1; i >= 0; i-- {
		sr.promoted(s.Steps[i].Preview, b, "controller:kargo-controller")
		sr.promoted(s.Steps[i].Update, b, "controller:kargo-controller")
	}
	return sr
}

func (sr *scenarioRun) run(stage string, f *Freight, actor string) (*Result, error) {
	sr.n++
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return sr.e.Promote(ctx, Promotion{Name: fmt.Sprintf("%s.%d", stage, sr.n), Stage: stage, Freight: f, Actor: actor, WorkDir: sr.t.TempDir()})
}

func (sr *scenarioRun) promoted(stage string, f *Freight, actor string) *Result {
	sr.t.Helper()
	res, err := sr.run(stage, f, actor)
	if err != nil {
		sr.t.Fatalf("promoting %s into %s: %v", f.Name, stage, err)
	}
	return res
}

// takeBack promotes A into each step's preview, then its update, in the steps' order, as `npm run rollback`
// does: each push a fresh reconcile request, the preview's Stage previewing A, the update's record carrying
// `want` (no preview's record carries one: the request covers update stages only). It returns the programs
// in the order they went back.
func (sr *scenarioRun) takeBack(steps []rollbackStep, person string, want map[string]any) []string {
	t, r := sr.t, sr.r
	t.Helper()
	var order []string
	for _, step := range steps {
		for _, stage := range []string{step.Preview, step.Update} {
			app := appIn(t, sr.project, stage)
			_, earlier := stackOn(t, r, app)
			res := sr.promoted(stage, sr.a, person)
			commit, again := stackOn(t, r, app)
			if commit != r.A || again != res.Promotion || again == earlier {
				t.Errorf("%s: the Stack runs %s with reconcile request %q (before %q), want %s with a fresh one, %q", stage, commit, again, earlier, r.A, res.Promotion)
			}
			got := recordOf(t, r, r.Ref(t, app.Branch))["rollback"]
			if stage == step.Preview {
				if md, _, _ := sr.e.Stages.Metadata(stage); fmt.Sprint(md[previewingKey].(map[string]any)["freight"]) != sr.a.Name {
					t.Errorf("%s: previewing %v after the rollback's preview of %s", stage, md[previewingKey], sr.a.Name)
				}
				if got != nil {
					t.Errorf("the preview %s's record carries rollback %v: the request covers update stages only", stage, got)
				}
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("the record of %s carries rollback %#v, want %#v", stage, got, want)
			}
		}
		order = append(order, step.Program)
	}
	return order
}

// dependentsFirst reports each program that went back before one depending on it.
func dependentsFirst(t *testing.T, s *rollbackScenario, order []string) {
	t.Helper()
	at := map[string]int{}
	for i, p := range order {
		at[p] = i
	}
	for p, deps := range dependents(s) {
		for d := range deps {
			if _, ok := at[p]; ok && at[d] > at[p] {
				t.Errorf("%s was updated before %s, which depends on it (order %v)", p, d, order)
			}
		}
	}
}

// takenBack is the program the one-program rollback names, from the programs' dependencies alone: of those
// whose rollback leaves some program of the environment running B, the one the most programs depend on
// (pipeline order breaks ties), with every program its rollback covers; "" when each takes them all.
func takenBack(s *rollbackScenario) (string, map[string]bool) {
	deps := dependents(s)
	best, most := "", -1
	for _, x := range s.Programs {
		if n := len(deps[x.Name]); n+1 < len(s.Programs) && n > most {
			best, most = x.Name, n
		}
	}
	covered := map[string]bool{}
	if best != "" {
		covered[best] = true
	}
	for d := range deps[best] {
		covered[d] = true
	}
	return best, covered
}

func rollbackOfOneProgram(t *testing.T, which string) {
	s, project, r := loadScenario(t, which)
	program, covered := takenBack(s)
	if program == "" {
		t.Skipf("%s: every program's rollback takes the whole environment back", which)
	}
	// In the diamond, a program with a dependent, beside one its rollback leaves alone.
	if which == "diamond" && len(covered) < 2 {
		t.Fatalf("the diamond's %s has no dependent: the scenario wants a program and what depends on it", program)
	}
	sr := newScenarioRun(t, s, project, r)
	a, b := sr.a, sr.b
	var one struct {
		Steps   []rollbackStep    `json:"steps"`
		Request map[string]string `json:"request"`
	}
	if err := json.Unmarshal(scenarioScript(t, "program", which, s.Environment, program, a.Name, b.Name), &one); err != nil {
		t.Fatal(err)
	}

	// The model's steps: each covered program once, with its stages as the whole rollback names them; the
	// request's stages exactly their update stages.
	whole := map[string]rollbackStep{}
	for _, step := range s.Steps {
		whole[step.Program] = step
	}
	var got, want, stages []string
	for _, step := range one.Steps {
		got = append(got, step.Program)
		if step != whole[step.Program] {
			t.Errorf("--program %s: step %+v, the environment's stages of %s are %+v", program, step, step.Program, whole[step.Program])
		}
	}
	var wantStages []string
	for p := range covered {
		want = append(want, p)
		wantStages = append(wantStages, whole[p].Update)
	}
	if err := json.Unmarshal([]byte(one.Request["stages"]), &stages); err != nil {
		t.Fatalf("the request's stages %q: %v", one.Request["stages"], err)
	}
	for _, l := range [][]string{got, want, stages, wantStages} {
		sort.Strings(l)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("--program %s takes back %v, want it and every program depending on it, %v", program, got, want)
	}
	if !reflect.DeepEqual(stages, wantStages) {
		t.Errorf("--program %s: the request covers stages %v, want the update stages %v", program, stages, wantStages)
	}

	// Every stage of the programs left alone, as it stood on B.
	before := map[string]string{}
	for _, step := range s.Steps {
		if !covered[step.Program] {
			for _, stage := range []string{step.Preview, step.Update} {
				before[stage] = r.Ref(t, appIn(t, project, stage).Branch)
			}
		}
	}
	sr.e.ConfigMaps = map[string]map[string]string{s.Request: one.Request}
	record := map[string]any{"kind": "rollback", "to": a.Name, "from": b.Name, "by": one.Request["by"], "message": one.Request["message"], "at": one.Request["at"]}
	dependentsFirst(t, s, sr.takeBack(one.Steps, "email:carol@example.com", record))
	for stage, ref := range before {
		app := appIn(t, project, stage)
		commit, _ := stackOn(t, r, app)
		if r.Ref(t, app.Branch) != ref || commit != r.B {
			t.Errorf("--program %s moved %s, which it does not cover: %s runs %s, want %s", program, stage, app.Branch, commit, r.B)
		}
		if rb := recordOf(t, r, ref)["rollback"]; rb != nil {
			t.Errorf("%s's record carries rollback %v", stage, rb)
		}
	}

	// A stage outside the request carries no rollback even when promoted with A: a program left alone,
	// previewed then updated to A after the rollback.
	for _, step := range s.Steps {
		if covered[step.Program] {
			continue
		}
		for _, stage := range []string{step.Preview, step.Update} {
			sr.promoted(stage, a, "email:carol@example.com")
			app := appIn(t, project, stage)
			if commit, _ := stackOn(t, r, app); commit != r.A {
				t.Errorf("%s runs %s after its promotion of A", stage, commit)
			}
			if rb := recordOf(t, r, r.Ref(t, app.Branch))["rollback"]; rb != nil {
				t.Errorf("%s is not among the request's stages %v, yet its promotion of A carries rollback %v", stage, stages, rb)
			}
		}
		break
	}
}
