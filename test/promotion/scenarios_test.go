package promotion

import (
	"context"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The promotion scenarios: each runs Stages' promotions as the plan emits them against a bare repository
// shaped like the pipeline's, and checks the branches they leave.

// stacksDir is where the Freight's commit holds the Stack templates: the PromotionTask's stacksDir var.
func stacksDir(t testing.TB) string {
	t.Helper()
	vars, _, _ := unstructured.NestedSlice(kargoPlan(t).OfKind("PromotionTask")[0].Object, "spec", "vars")
	for _, v := range vars {
		if v.(map[string]any)["name"] == "stacksDir" {
			return v.(map[string]any)["value"].(string)
		}
	}
	t.Fatal("the PromotionTask has no stacksDir var")
	return ""
}

// stageFiles is what a stage branch must hold: the manifest its Application deploys and the file the
// promotion's file-write step writes beside it (its evaluated path, relative to the stage checkout).
func stageFiles(t testing.TB, stage string, res *Result) []string {
	t.Helper()
	app := appOf(t, stage)
	write := res.Step("file-write")
	clear := res.Step("git-clear")
	if write == nil || clear == nil {
		t.Fatalf("%s: the promotion ran no file-write or git-clear", stage)
	}
	rel := strings.TrimPrefix(path.Clean(write.Config["path"].(string)), path.Clean(clear.Config["path"].(string))+"/")
	files := []string{app.Manifest, rel}
	if app.Drift != "" {
		files = append(files, app.Drift)
	}
	sort.Strings(files)
	return files
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkPromoted asserts what a successful promotion of the Freight's commit into the stage leaves: the
// stage's branch (the one its Application tracks) holds exactly the manifest, the Freight's template with
// spec.commit set to that commit as a string and PKO's reconcile request to the promotion's name, running the stage's own program and stack, and the stage's
// readme naming it; its newest commit is
// the promotion's, by Kargo, and is what git-push output and argocd-update waits for.
func checkPromoted(t *testing.T, r *Remote, stage, commit string, res *Result) {
	t.Helper()
	app := appOf(t, stage)
	head := r.Ref(t, app.Branch)
	if head == "" {
		t.Fatalf("%s: branch %s does not exist", stage, app.Branch)
	}
	tree := r.Tree(t, head)
	if got, want := keys(tree), stageFiles(t, stage, res); !slices.Equal(got, want) {
		t.Errorf("%s: branch %s holds %v, want exactly %v", stage, app.Branch, got, want)
	}
	var want, got map[string]any
	template, _ := r.File(t, commit, path.Join(stacksDir(t), app.Manifest))
	if err := yaml.Unmarshal([]byte(template), &want); err != nil || want == nil {
		t.Fatalf("%s: the template at %s: %v", stage, commit, err)
	}
	if err := unstructured.SetNestedField(want, commit, "spec", "commit"); err != nil {
		t.Fatal(err)
	}
	// And PKO's reconcile request, the promotion's name, so PKO runs the Stack again even at the same commit.
	if err := unstructured.SetNestedField(want, res.Promotion, "metadata", "annotations", reconcileRequest); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(tree[app.Manifest]), &got); err != nil {
		t.Fatalf("%s: %s on %s: %v", stage, app.Manifest, app.Branch, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %s on %s is\n%s\nwant the template of %s with spec.commit %q", stage, app.Manifest, app.Branch, tree[app.Manifest], commit, commit)
	}
	checkRunsItsProgram(t, r, stage, commit, got)
	if app.Drift != "" {
		checkDriftCheck(t, r, stage, commit, tree[app.Drift], res)
	}
	readme := tree[strings.TrimPrefix(path.Clean(res.Step("file-write").Config["path"].(string)),
		path.Clean(res.Step("git-clear").Config["path"].(string))+"/")]
	if !strings.Contains(readme, "stage "+stage) || !strings.Contains(readme, commit) || strings.Contains(readme, "${{") {
		t.Errorf("%s: the stage's readme does not name the stage and the commit:\n%s", stage, readme)
	}
	history := r.History(t, app.Branch)
	// Whoever reads the branch's history sees what was promoted where; the author is the controller's.
	if s := history[0].Subject; !strings.Contains(s, stage) || !strings.Contains(s, commit) || history[0].Author != kargoAuthor(t) {
		t.Errorf("%s: newest commit %q by %s, want one naming the stage and %s, by the controller %s", stage, s, history[0].Author, commit, kargoAuthor(t))
	}
	if pushed := res.Step("git-push").Result.Output["commit"]; pushed != head {
		t.Errorf("%s: git-push output commit %v, the branch is at %s", stage, pushed, head)
	}
	checks, _ := res.Step("argocd-update").Result.HealthCheck["apps"].([]AppRevisions)
	wantChecks := []AppRevisions{{Name: app.Name, Namespace: app.Namespace, DesiredRevisions: []string{head}}}
	if !reflect.DeepEqual(checks, wantChecks) {
		t.Errorf("%s: argocd-update waits for %+v, want %+v", stage, checks, wantChecks)
	}
}

// checkOnlyKargo asserts that every commit of the stage's branch changed nothing but the stage's files
// (hand-made commits aside), the first is the empty one Kargo creates the branch with, and no commit's
// diff touches a workflow file, which GitHub refuses to take without the Workflows permission.
func checkOnlyKargo(t *testing.T, r *Remote, stage string, res *Result) {
	t.Helper()
	app := appOf(t, stage)
	history := r.History(t, app.Branch)
	root := history[len(history)-1]
	if root.Author != kargoAuthor(t) || len(root.Changed) != 0 {
		t.Errorf("%s: branch %s starts at %q by %s changing %d files, want the empty commit Kargo creates a branch with", stage, app.Branch, root.Subject, root.Author, len(root.Changed))
	}
	for _, c := range history {
		for _, p := range c.Changed {
			if strings.HasPrefix(p, ".github/workflows/") {
				t.Errorf("%s: commit %q changes %s: GitHub refuses such a push without the Workflows permission", stage, c.Subject, p)
			}
			if !slices.Contains(stageFiles(t, stage, res), p) && c.Author == kargoAuthor(t) && c.ID != root.ID {
				if _, handMade := r.handMade[p]; !handMade {
					t.Errorf("%s: promotion commit %q changes %s, which is not the stage's", stage, c.Subject, p)
				}
			}
		}
	}
}

// checkBranches asserts the remote holds main, unchanged, and exactly the stage branches promoted into.
func checkBranches(t *testing.T, r *Remote, stages ...string) {
	t.Helper()
	if got := r.Ref(t, "main"); got != r.B {
		t.Errorf("main moved to %s: promotions must never write to it", got)
	}
	want := []string{"main"}
	for _, s := range stages {
		want = append(want, appOf(t, s).Branch)
	}
	sort.Strings(want)
	got := strings.Fields(gitRun(t, r.Dir, "for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/tags"))
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("the repository's branches are %v, want %v", got, want)
	}
}

func mustPromote(t *testing.T, r *Remote, stage, commit string) *Result {
	t.Helper()
	res, err := promote(t, r, stage, freightAt(t, r, commit))
	if err != nil {
		t.Fatalf("promoting %s into %s: %v", commit, stage, err)
	}
	return res
}

func TestPulumiUpCreatesNoStageBranch(t *testing.T) {
	t.Parallel()
	r := newRemote(t)
	pulumiUp(t, r)
	checkBranches(t, r)
}

func TestFirstPromotionIntoEachStage(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	r := newRemote(t)
	pulumiUp(t, r)
	if ok, version := orphanWorktrees(); !ok && r.Ref(t, appOf(t, envs[0]).Branch) == "" {
		// What this machine's git does with the first promotion: the orphan branch cannot be made.
		_, err := promote(t, r, envs[0], freightAt(t, r, r.A))
		if err == nil || !strings.Contains(err.Error(), "git-clone") || !strings.Contains(err.Error(), "orphan") {
			t.Fatalf("with %s, the first promotion should stop at git-clone's `worktree add --orphan`, got %v", version, err)
		}
		checkBranches(t, r)
		needsOrphanWorktrees(t)
	}
	for _, stage := range envs {
		res := mustPromote(t, r, stage, r.A)
		checkPromoted(t, r, stage, r.A, res)
		checkOnlyKargo(t, r, stage, res)
		if n := len(r.History(t, appOf(t, stage).Branch)); n != 2 {
			t.Errorf("%s: %d commits, want Kargo's initial commit and the promotion", stage, n)
		}
	}
	checkBranches(t, r, envs...)
}

func TestSecondPromotion(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	stage := envs[0]
	r := remoteWithStageBranch(t, stage)
	mustPromote(t, r, stage, r.A)
	res := mustPromote(t, r, stage, r.B)
	checkPromoted(t, r, stage, r.B, res)
	checkOnlyKargo(t, r, stage, res)
	// Newest first: the second promotion's commit, the first's, the branch's empty root.
	history := r.History(t, appOf(t, stage).Branch)
	if len(history) != 3 || !strings.Contains(history[0].Subject, r.B) || !strings.Contains(history[1].Subject, r.A) || len(history[2].Changed) != 0 {
		t.Errorf("history %+v, want the promotion of %s over that of %s over the empty root", history, r.B, r.A)
	}
	checkBranches(t, r, stage)
}

func TestGoingBackToOlderFreight(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	// The last stage of another program than the other scenarios promote (envs[0]'s).
	others := otherProgramStages(t, envs[0])
	stage := others[len(others)-1]
	r := remoteWithStageBranch(t, stage)
	mustPromote(t, r, stage, r.B)
	res := mustPromote(t, r, stage, r.A)
	// The template comes back as it was at the older commit, not only spec.commit.
	checkPromoted(t, r, stage, r.A, res)
	checkOnlyKargo(t, r, stage, res)
	checkBranches(t, r, stage)
}

// The same Freight again is a new run of the Stack (a rollback's reconcile, or drift brought home): the one
// change the push carries is PKO's reconcile request, the new promotion's name (checkPromoted).
func TestPromotingTheSameFreightAgain(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	stage := envs[0]
	r := remoteWithStageBranch(t, stage)
	mustPromote(t, r, stage, r.A)
	before := r.Ref(t, appOf(t, stage).Branch)
	res := mustPromote(t, r, stage, r.A)
	if s := res.Step("git-commit").Result.Status; s != StatusSucceeded {
		t.Errorf("git-commit %s with a new reconcile request, want Succeeded", s)
	}
	// The Stack, and an update stage's drift check (drift_test.go), each get a new reconcile request.
	want := []string{appOf(t, stage).Manifest}
	if drift := appOf(t, stage).Drift; drift != "" {
		want = append(want, drift)
	}
	slices.Sort(want)
	after := r.Ref(t, appOf(t, stage).Branch)
	changed := slices.Sorted(slices.Values(r.History(t, appOf(t, stage).Branch)[0].Changed))
	if after == before || !slices.Equal(changed, want) {
		t.Errorf("the branch moved from %s to %s changing %v, want a new commit of %v alone", before, after, changed, want)
	}
	checkPromoted(t, r, stage, r.A, res)
}

func TestTwoStagesAtOnce(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	if len(envs) < 2 {
		t.Fatal("the pipeline has fewer than two environment stages")
	}
	stages := envs[:2]
	r := newRemote(t)
	for _, s := range stages {
		kargoCreatedBranch(t, r, appOf(t, s).Branch)
	}
	var wg sync.WaitGroup
	results := make([]*Result, len(stages))
	errs := make([]error, len(stages))
	for i, s := range stages {
		e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore())
		p := Promotion{Name: s + ".at-once", Stage: s, Freight: freightAt(t, r, r.B), Actor: "controller:kargo", WorkDir: t.TempDir()}
		previewedEverywhere(t, e, p.Freight)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			results[i], errs[i] = e.Promote(ctx, p)
		}()
	}
	wg.Wait()
	for i, s := range stages {
		if errs[i] != nil {
			t.Fatalf("%s: %v", s, errs[i])
		}
		checkPromoted(t, r, s, r.B, results[i])
		checkOnlyKargo(t, r, s, results[i])
	}
	checkBranches(t, r, stages...)
}

func TestFreightWhoseCommitDoesNotExist(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	stage := envs[0]
	r := remoteWithStageBranch(t, stage)
	mustPromote(t, r, stage, r.A)
	before := r.Ref(t, appOf(t, stage).Branch)
	missing := "0123456789abcdef0123456789abcdef01234567"
	res, err := promote(t, r, stage, freightAt(t, r, missing))
	if err == nil {
		t.Fatal("a Freight whose commit does not exist was promoted")
	}
	last := res.Steps[len(res.Steps)-1]
	if last.Uses != "git-clone" || !strings.Contains(err.Error(), missing) {
		t.Errorf("the promotion stopped at %s with %v; want git-clone, naming the commit", last.Uses, err)
	}
	if after := r.Ref(t, appOf(t, stage).Branch); after != before {
		t.Errorf("the stage branch moved from %s to %s", before, after)
	}
	checkBranches(t, r, stage)
}

func TestStageBranchCommittedToByHand(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	// A stage of another program than envs[0]'s, which the scenarios around it promote.
	stage := otherProgramStages(t, envs[0])[0]
	app := appOf(t, stage)
	r := newRemote(t)
	kargoCreatedBranch(t, r, app.Branch)
	mustPromote(t, r, stage, r.A)
	r.commitByHand(t, app.Branch, map[string]string{
		"notes.md":   "someone's notes\n",
		app.Manifest: "apiVersion: pulumi.com/v1\nkind: Stack\nspec:\n  commit: edited-by-hand\n",
	})
	res := mustPromote(t, r, stage, r.B)
	// The next promotion puts the branch back to exactly the stage's files.
	checkPromoted(t, r, stage, r.B, res)
	checkOnlyKargo(t, r, stage, res)
	checkBranches(t, r, stage)

	// A workflow file committed by hand is removed by the next promotion too, in a push GitHub refuses
	// without the Workflows permission (README: Troubleshooting).
	r.commitByHand(t, app.Branch, map[string]string{".github/workflows/x.yml": "on: push\n"})
	res = mustPromote(t, r, stage, r.A)
	checkPromoted(t, r, stage, r.A, res)
	if c := r.History(t, app.Branch)[0]; !slices.Contains(c.Changed, ".github/workflows/x.yml") {
		t.Errorf("the promotion after a hand-made workflow changes %v, want the workflow's removal", c.Changed)
	}
}

// remoteWithStageBranch is a fresh remote on which the stage's branch already exists as Kargo creates it.
func remoteWithStageBranch(t *testing.T, stage string) *Remote {
	t.Helper()
	r := newRemote(t)
	kargoCreatedBranch(t, r, appOf(t, stage).Branch)
	return r
}
