package promotion

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// What a rollback relies on in every promotion: an update stage takes only the Freight its preview stage
// previews now (the preview's promotion records it on its Stage), and every promotion asks PKO to run the
// Stack again.

// previewingKey is the Stage metadata key a preview stage's promotion writes: {freight, commit, promotion}.
const previewingKey = "previewing"

// reconcileRequest is the annotation PKO v2.9.0 reads as a request to run a Stack again
// (pulumi-kubernetes-operator v2.9.0 operator/api/pulumi/shared/stack_types.go ReconcileRequestAnnotation).
const reconcileRequest = "pulumi.com/reconciliation-request"

// previewedEverywhere is the premise of a scenario about something else: every Stage previews f (the
// Freight came through each preview), so no update stage refuses it.
func previewedEverywhere(t testing.TB, e *Engine, f *Freight) {
	t.Helper()
	for _, s := range kargoPlan(t).OfKind("Stage") {
		if err := e.Stages.Upsert(s.GetName(), previewingKey, map[string]any{"freight": f.Name}); err != nil {
			t.Fatal(err)
		}
	}
}

// ownPreviews maps each update stage to its own preview stage, read from the plan alone: the program stage
// whose Stack template previews (spec.preview) the same Pulumi stack (spec.stack) and that Freight reaches
// the update through (its requested sources, followed upstream).
func ownPreviews(t testing.TB) map[string]string {
	t.Helper()
	programs, _, _ := stageKinds(t)
	type stack struct {
		Spec struct {
			Stack   string `json:"stack"`
			Preview bool   `json:"preview"`
		} `json:"spec"`
	}
	stacks := map[string]stack{}
	for _, s := range programs {
		raw, err := os.ReadFile(filepath.Join(plan.RepoRoot(), stacksDir(t), appOf(t, s).Manifest))
		if err != nil {
			t.Fatal(err)
		}
		var st stack
		if err := yaml.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		stacks[s] = st
	}
	from := map[string][]string{}
	for _, s := range kargoPlan(t).OfKind("Stage") {
		req, _, _ := unstructured.NestedSlice(s.Object, "spec", "requestedFreight")
		for _, r := range req {
			up, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "sources", "stages")
			from[s.GetName()] = append(from[s.GetName()], up...)
		}
	}
	var upstream func(s string, seen map[string]bool) map[string]bool
	upstream = func(s string, seen map[string]bool) map[string]bool {
		for _, u := range from[s] {
			if !seen[u] {
				seen[u] = true
				upstream(u, seen)
			}
		}
		return seen
	}
	out := map[string]string{}
	for _, u := range programs {
		if stacks[u].Spec.Preview {
			continue
		}
		before := upstream(u, map[string]bool{})
		for _, p := range programs {
			if stacks[p].Spec.Preview && stacks[p].Spec.Stack == stacks[u].Spec.Stack && before[p] {
				out[u] = p
			}
		}
	}
	return out
}

// attempt runs the stage's promotion of f with no repository behind it: what the first steps decide. A
// promotion the guard lets through goes on to git-clone, which fails for want of a remote.
func attempt(t *testing.T, e *Engine, stage string, f *Freight) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return e.Promote(ctx, Promotion{Name: stage + ".try", Stage: stage, Freight: f, Actor: "controller:kargo-controller", WorkDir: t.TempDir()})
}

// refused asserts the promotion stopped at its first step, a `fail` before anything was cloned, with a
// message naming the Freight, the preview stage, what that stage previews now, and the rollback command.
func refused(t *testing.T, res *Result, err error, f *Freight, preview, previews string) {
	t.Helper()
	if err == nil || len(res.Steps) == 0 || res.Steps[0].Uses != "fail" || res.Steps[0].Result.Status != StatusFailed {
		t.Fatalf("the promotion of %s was not refused by a first fail step: %v", f.Name, err)
	}
	if res.Step("git-clone") != nil || len(res.Steps) != 1 {
		t.Errorf("steps ran after the refusal: %d", len(res.Steps))
	}
	for _, want := range []string{f.Name, "stage " + preview, previews, "npm run rollback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
}

// admitted asserts the promotion went past any guard to git-clone.
func admitted(t *testing.T, res *Result, stage string) {
	t.Helper()
	if res == nil || res.Step("git-clone") == nil {
		t.Fatalf("%s: the promotion never reached git-clone", stage)
	}
	if g := res.Steps[0]; g.Uses == "fail" && g.Result.Status != StatusSkipped {
		t.Errorf("%s: the guard ran (%s) instead of being skipped", stage, g.Result.Status)
	}
}

// Every update stage with a preview refuses Freight its preview previews not (nothing, or other Freight,
// whatever other Stages preview) and takes what it previews; every other program stage takes any Freight.
func TestAnUpdateTakesOnlyWhatItsPreviewPreviewsNow(t *testing.T) {
	t.Parallel()
	previews := ownPreviews(t)
	if len(previews) == 0 {
		t.Skip("no update stage of this pipeline takes Freight through its own preview")
	}
	programs, _, _ := stageKinds(t)
	r := &Remote{URL: repoURL(t)}
	a, b := freightAt(t, r, strings.Repeat("a", 40)), freightAt(t, r, strings.Repeat("b", 40))
	for _, s := range programs {
		preview, guarded := previews[s]
		e := NewEngine(kargoPlan(t), nil, NewFreightStore(a, b))
		res, err := attempt(t, e, s, a)
		if !guarded {
			admitted(t, res, s)
			continue
		}
		refused(t, res, err, a, preview, "nothing")
		// Every other Stage previewing it counts for nothing; nor does other Freight in its own preview.
		previewedEverywhere(t, e, a)
		if err := e.Stages.Upsert(preview, previewingKey, map[string]any{"freight": b.Name}); err != nil {
			t.Fatal(err)
		}
		res, err = attempt(t, e, s, a)
		refused(t, res, err, a, preview, "Freight "+b.Name)
		if err := e.Stages.Upsert(preview, previewingKey, map[string]any{"freight": a.Name}); err != nil {
			t.Fatal(err)
		}
		res, _ = attempt(t, e, s, a)
		admitted(t, res, s)
	}
}

// guardedUpdates is ownPreviews with its update stages in order; a pipeline without one skips the test.
func guardedUpdates(t *testing.T) (map[string]string, []string) {
	t.Helper()
	previews := ownPreviews(t)
	if len(previews) == 0 {
		t.Skip("no update stage of this pipeline takes Freight through its own preview")
	}
	return previews, slices.Sorted(maps.Keys(previews))
}

// One update stage and its preview through the engine against the repository: the update refused before
// its preview ran and for other Freight, the preview recording what it previews, the update then pushed;
// each push carrying the promotion's name as PKO's reconcile request, so the same commit runs again.
func TestPreviewThenUpdateThroughTheEngine(t *testing.T) {
	t.Parallel()
	previews, updates := guardedUpdates(t)
	update, preview := updates[0], previews[updates[0]]
	r := newRemote(t)
	for _, s := range []string{preview, update} {
		kargoCreatedBranch(t, r, appOf(t, s).Branch)
	}
	a, b := freightAt(t, r, r.A), freightAt(t, r, r.B)
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(a, b))
	run := func(stage, name string, f *Freight) (*Result, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return e.Promote(ctx, Promotion{Name: name, Stage: stage, Freight: f, Actor: "controller:kargo-controller", WorkDir: t.TempDir()})
	}
	before := r.Ref(t, appOf(t, update).Branch)
	res, err := run(update, update+".1", a)
	refused(t, res, err, a, preview, "nothing")
	if r.Ref(t, appOf(t, update).Branch) != before {
		t.Errorf("the refused promotion moved %s", appOf(t, update).Branch)
	}

	res, err = run(preview, preview+".1", a)
	if err != nil {
		t.Fatalf("promoting into %s: %v", preview, err)
	}
	checkPromoted(t, r, preview, r.A, res)
	md, _, _ := e.Stages.Metadata(preview)
	want := map[string]any{"freight": a.Name, "commit": r.A, "promotion": preview + ".1"}
	if got, _ := md[previewingKey].(map[string]any); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s's metadata %s = %v, want %v", preview, previewingKey, md[previewingKey], want)
	}
	if md, _, _ := e.Stages.Metadata(update); md[previewingKey] != nil {
		t.Errorf("the update stage %s recorded %s %v: only preview stages do", update, previewingKey, md[previewingKey])
	}

	res, err = run(update, update+".2", b)
	refused(t, res, err, b, preview, "Freight "+a.Name)
	for _, name := range []string{update + ".3", update + ".4"} {
		res, err = run(update, name, a)
		if err != nil {
			t.Fatalf("promoting %s into %s after its preview: %v", a.Name, update, err)
		}
		// The same commit twice: only the reconcile request differs, and PKO runs the Stack again for it.
		checkPromoted(t, r, update, r.A, res)
	}
	if !slices.ContainsFunc(res.Steps, func(s StepRecord) bool { return s.Uses == "set-metadata" && s.Result.Status == StatusSkipped }) {
		t.Errorf("%s: no set-metadata step was skipped: an update stage must not record what it previews", update)
	}
}
