package promotion

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// A whole rollback of one environment from Freight B back to A, as `npm run rollback` takes it, through
// Kargo's promotion engine and the promote-stack task of the plan: for the example pipeline and for a
// generated fork whose four programs form a diamond in several runtimes. The steps and their order come
// from the TypeScript model (lib/pipeline/rollback.ts, through test/promotion/rollback-scenario.ts); the
// expectations from the pipeline's program dependencies.

// rollbackScenario is what rollback-scenario.ts prints for one pipeline.
type rollbackScenario struct {
	Environment string         `json:"environment"`
	Steps       []rollbackStep `json:"steps"`
	Programs    []struct {
		Name      string   `json:"name"`
		DependsOn []string `json:"dependsOn"`
	} `json:"programs"`
	Request   string            `json:"request"`
	StacksDir string            `json:"stacksDir"`
	Runtimes  []string          `json:"runtimes"`
	Objects   []map[string]any  `json:"objects"`
	Stacks    map[string]string `json:"stacks"`
}

func scenarioScript(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(plan.Node(), append([]string{"--import", "tsx", "test/promotion/rollback-scenario.ts"}, args...)...)
	cmd.Dir = plan.RepoRoot()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rollback-scenario.ts %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// loadScenario is the pipeline's rollback, its kargo project and a repository whose main holds its Stack
// templates at A and, changed, at B. The example is the offline plan and this repository; the fork's objects
// are the ones its definition renders, beside the example's kargo release (the controller's git identity).
func loadScenario(t *testing.T, which string) (*rollbackScenario, *plan.Project, *Remote) {
	t.Helper()
	example := kargoPlan(t)
	var namespace, argocdProject string
	vars, _, _ := unstructured.NestedSlice(example.OfKind("PromotionTask")[0].Object, "spec", "vars")
	for _, v := range vars {
		if v := v.(map[string]any); v["name"] == "argocdNamespace" {
			namespace, _ = v["value"].(string)
		}
	}
	argocdProject, _, _ = unstructured.NestedString(example.OfKind("Application")[0].Object, "spec", "project")
	var s rollbackScenario
	if err := json.Unmarshal(scenarioScript(t, "plan", which, namespace, argocdProject), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) == 0 {
		t.Skipf("%s: no environment has a guarded preview and update stage for each program to take back", which)
	}
	if s.Objects == nil {
		return &s, example, newRemote(t)
	}
	project := &plan.Project{Name: "kargo", Resources: example.Resources}
	for _, o := range s.Objects {
		project.Objects = append(project.Objects, &unstructured.Unstructured{Object: o})
	}
	subs, _, _ := unstructured.NestedSlice(project.OfKind("Warehouse")[0].Object, "spec", "subscriptions")
	url, _, _ := unstructured.NestedString(subs[0].(map[string]any), "git", "repoURL")
	r := &Remote{Dir: filepath.Join(t.TempDir(), "remote.git"), URL: url}
	work := filepath.Join(t.TempDir(), "main")
	gitRun(t, filepath.Dir(r.Dir), "init", "--quiet", "--bare", "-b", "main", r.Dir)
	gitRun(t, filepath.Dir(work), "init", "--quiet", "-b", "main", work)
	commit := func(msg string, change func(file, text string) string) string {
		for file, text := range s.Stacks {
			p := filepath.Join(work, s.StacksDir, file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(change(file, text)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitRun(t, work, "add", "-A")
		gitRun(t, work, "commit", "--quiet", "-m", msg)
		return gitRun(t, work, "rev-parse", "HEAD")
	}
	r.A = commit("A", func(_, text string) string { return text })
	// As buildTemplate's B: every template changes.
	r.B = commit("B", func(file, text string) string {
		changed := strings.Replace(text, "workspaceReclaimPolicy: Delete", "workspaceReclaimPolicy: Retain", 1)
		if changed == text {
			t.Fatalf("%s: no workspaceReclaimPolicy to change for Freight B", file)
		}
		return changed
	})
	gitRun(t, work, "push", "--quiet", r.Dir, "main")
	return &s, project, r
}

// stackOn is the Stack a stage branch holds at its head: its spec.commit and PKO's reconcile request.
func stackOn(t *testing.T, r *Remote, app stageApp) (commit, request string) {
	t.Helper()
	text, ok := r.File(t, r.Ref(t, app.Branch), app.Manifest)
	var stack map[string]any
	if err := yaml.Unmarshal([]byte(text), &stack); !ok || err != nil {
		t.Fatalf("%s holds no Stack %s: %v", app.Branch, app.Manifest, err)
	}
	commit, _, _ = unstructured.NestedString(stack, "spec", "commit")
	request, _, _ = unstructured.NestedString(stack, "metadata", "annotations", reconcileRequest)
	return commit, request
}

// dependents is, for each program, every program that depends on it, directly or through others.
func dependents(s *rollbackScenario) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, x := range s.Programs {
		out[x.Name] = map[string]bool{}
	}
	for grew := true; grew; {
		grew = false
		for _, x := range s.Programs {
			for _, d := range x.DependsOn {
				for _, y := range append([]string{x.Name}, keysOf(out[x.Name])...) {
					if !out[d][y] {
						out[d][y], grew = true, true
					}
				}
			}
		}
	}
	return out
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestARollbackOfAnEnvironmentThroughTheEngineInTheModelsOrder(t *testing.T) {
	t.Parallel()
	for _, which := range []string{"example", "diamond"} {
		t.Run(which, func(t *testing.T) {
			t.Parallel()
			rollbackThroughTheEngine(t, which)
		})
		// `npm run rollback -- <environment> --to A --program <p>` (rollback_program_test.go).
		t.Run(which+"-one-program", func(t *testing.T) {
			t.Parallel()
			rollbackOfOneProgram(t, which)
		})
	}
}

func rollbackThroughTheEngine(t *testing.T, which string) {
	s, project, r := loadScenario(t, which)
	if which == "diamond" && (len(s.Programs) < 4 || len(s.Runtimes) < 3) {
		t.Fatalf("the fork runs %d programs in %v: the scenario wants a diamond of four in three runtimes", len(s.Programs), s.Runtimes)
	}
	sr := newScenarioRun(t, s, project, r)
	a, b := sr.a, sr.b
	from, updates := map[string]string{}, []string{}
	for _, step := range s.Steps {
		from[step.Update] = b.Name
		updates = append(updates, step.Update)
	}
	request := rollbackRequest(t, "rollback", a.Name, from, updates)
	sr.e.ConfigMaps = map[string]map[string]string{s.Request: request}
	const person = "email:carol@example.com"

	// Out of order once: the update of the model's last program before its preview took A is refused.
	last := s.Steps[len(s.Steps)-1]
	before := r.Ref(t, appIn(t, project, last.Update).Branch)
	res, err := sr.run(last.Update, a, person)
	refused(t, res, err, a, last.Preview, "Freight "+b.Name)
	if r.Ref(t, appIn(t, project, last.Update).Branch) != before {
		t.Errorf("the refused update moved %s", appIn(t, project, last.Update).Branch)
	}

	want := map[string]any{"kind": "rollback", "to": a.Name, "from": b.Name, "by": request["by"], "message": request["message"], "at": request["at"]}
	order := sr.takeBack(s.Steps, person, want)

	// Every program of the environment, once, each after every program that depends on it.
	at := map[string]bool{}
	for _, p := range order {
		at[p] = true
	}
	if len(at) != len(order) || len(order) != len(s.Programs) {
		t.Errorf("the rollback updated %v, want each of the %d programs once", order, len(s.Programs))
	}
	dependentsFirst(t, s, order)
	checkHistory(t, which, s, r, a, b, request)
}

// checkHistory runs `npm run history` of the environment on the stage branches: each update stage shows the
// rollback once, from B to A by whom and why; no preview shows one.
func checkHistory(t *testing.T, which string, s *rollbackScenario, r *Remote, a, b *Freight, request map[string]string) {
	t.Helper()
	var out []byte
	if which == "example" {
		cmd := exec.Command(plan.Node(), "--import", "tsx", "lib/cli/history.ts", s.Environment, "--repository", r.Dir, "--ref-prefix", "refs/heads/")
		cmd.Dir = plan.RepoRoot()
		var err error
		if out, err = cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm run history -- %s: %v\n%s", s.Environment, err, out)
		}
	} else {
		out = scenarioScript(t, "history", which, s.Environment, r.Dir)
	}
	q := func(v string) string { j, _ := json.Marshal(v); return string(j) }
	line := fmt.Sprintf("rollback from %s to %s by %s at %s: %s", q(b.Name), q(a.Name), q(request["by"]), q(request["at"]), q(request["message"]))
	var blocks []string
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			blocks = append(blocks, "")
		}
		if len(blocks) > 0 {
			blocks[len(blocks)-1] += l + "\n"
		}
	}
	for _, step := range s.Steps {
		for _, stage := range []string{step.Preview, step.Update} {
			head := fmt.Sprintf(" %s (", stage)
			rollbacks, promotions := 0, 0
			for _, bl := range blocks {
				if strings.Contains(strings.SplitN(bl, "\n", 2)[0], head) {
					promotions++
					if strings.Contains(bl, "rollback from") {
						rollbacks++
						if !strings.Contains(bl, line) {
							t.Errorf("history of %s: %s's rollback is not %q:\n%s", s.Environment, stage, line, bl)
						}
					}
				}
			}
			wantRollbacks := 1
			if stage == step.Preview {
				wantRollbacks = 0
			}
			if promotions < 2 || rollbacks != wantRollbacks {
				t.Errorf("history of %s: %s shows %d promotions, %d of them rollbacks, want B's and A's, %d a rollback:\n%s", s.Environment, stage, promotions, rollbacks, wantRollbacks, out)
			}
		}
	}
}
