package promotion

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	argocd "github.com/akuity/kargo/pkg/controller/argocd/api/v1alpha1"
)

// promoteWithArgoCD promotes the Freight of commit into the stage with the Argo CD stand-in ending each
// operation in the next of phases (the last one repeated), and returns the Promotion's name with the result.
func promoteWithArgoCD(t *testing.T, r *Remote, stage, commit string, phases []argocd.OperationPhase,
	change func(*argocd.Application)) (*Engine, string, *Result, error) {
	t.Helper()
	f := freightAt(t, r, commit)
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(f))
	previewedEverywhere(t, e, f)
	apps, err := e.Applications()
	if err != nil {
		t.Fatal(err)
	}
	app := appOf(t, stage)
	if change != nil {
		live := apps.Get(app.Namespace, app.Name)
		change(live)
		apps.Update(live)
	}
	n := 0
	e.ArgoCD = func(a *argocd.Application, resolve func(string, string) (string, error)) {
		phase := phases[min(n, len(phases)-1)]
		n++
		EndOperation(a, phase, fmt.Sprintf("operation %d ended %s", n, phase), resolve)
	}
	name := fmt.Sprintf("%s.%d", stage, time.Now().UnixNano())
	res, err := e.Promote(t.Context(), Promotion{Name: name, Stage: stage, Freight: f, Actor: "email:alice@example.com", WorkDir: t.TempDir()})
	return e, name, res, err
}

// Kargo's argocd-update starts a sync and waits (Running) until Argo CD's operation completes: Succeeded at
// the pushed commit ends the promotion, Failed or Error fails it with Argo CD's message.
func TestArgoCDUpdateFollowsTheOperationPhase(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	stage := envs[0]
	app := appOf(t, stage)
	R, S, E := StatusRunning, StatusSucceeded, StatusErrored
	for _, tc := range []struct {
		name     string
		phases   []argocd.OperationPhase
		statuses []string
		ok       bool
	}{
		{"Succeeded", []argocd.OperationPhase{argocd.OperationSucceeded}, []string{R, S}, true},
		{"Running then Succeeded", []argocd.OperationPhase{argocd.OperationRunning, argocd.OperationRunning, argocd.OperationSucceeded}, []string{R, R, R, S}, true},
		{"Failed", []argocd.OperationPhase{argocd.OperationFailed}, []string{R, E}, false},
		{"Error", []argocd.OperationPhase{argocd.OperationError}, []string{R, E}, false},
		{"Running until the timeout", []argocd.OperationPhase{argocd.OperationRunning}, slices.Repeat([]string{R}, maxReconciles), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := remoteWithStageBranch(t, stage)
			e, name, res, err := promoteWithArgoCD(t, r, stage, r.A, tc.phases, nil)
			step := res.Step("argocd-update")
			if step == nil {
				t.Fatalf("argocd-update did not run: %v", err)
			}
			if !slices.Equal(step.Statuses, tc.statuses) {
				t.Errorf("argocd-update ran %v, want %v (%v)", step.Statuses, tc.statuses, err)
			}
			if tc.ok != (err == nil) {
				t.Errorf("the promotion ended with %v, want it to succeed: %v", err, tc.ok)
			}
			last := tc.phases[len(tc.phases)-1]
			if last.Failed() && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q in namespace %q failed with: operation", app.Name, app.Namespace))) {
				t.Errorf("a %s operation should fail the step with Argo CD's message, got %v", last, err)
			}
			live, _ := e.Applications()
			state := live.Get(app.Namespace, app.Name).Status.OperationState
			if state == nil {
				t.Fatal("Argo CD recorded no operation")
			}
			info := map[string]string{}
			for _, i := range state.Operation.Info {
				info[i.Name] = i.Value
			}
			if info[promotionInfoKey] != name || state.Operation.InitiatedBy.Username != "alice@example.com" {
				t.Errorf("the sync names promotion %q, initiated by %q; want %s by the Promotion's actor", info[promotionInfoKey], state.Operation.InitiatedBy.Username, name)
			}
			if tc.ok && state.SyncResult.Revision != r.Ref(t, app.Branch) {
				t.Errorf("Argo CD synced %s, the branch is at %s", state.SyncResult.Revision, r.Ref(t, app.Branch))
			}
		})
	}
}

// A sync someone else started (in the Argo CD UI, say) is waited for, not overridden: Kargo starts its own
// once that one completed.
func TestArgoCDUpdateWaitsForAnotherSyncToComplete(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	stage := envs[0]
	app := appOf(t, stage)
	r := remoteWithStageBranch(t, stage)
	e, name, res, err := promoteWithArgoCD(t, r, stage, r.A, []argocd.OperationPhase{argocd.OperationSucceeded}, func(a *argocd.Application) {
		a.Status.OperationState = &argocd.OperationState{
			Operation: argocd.Operation{InitiatedBy: argocd.OperationInitiator{Username: "bob@example.com"}, Sync: &argocd.SyncOperation{}},
			Phase:     argocd.OperationRunning,
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Step("argocd-update").Statuses, []string{StatusRunning, StatusRunning, StatusSucceeded}; !slices.Equal(got, want) {
		t.Errorf("argocd-update ran %v, want %v: wait for bob's sync, then start and wait for its own", got, want)
	}
	live, _ := e.Applications()
	state := live.Get(app.Namespace, app.Name).Status.OperationState
	if state.Operation.InitiatedBy.Username != "alice@example.com" || state.Operation.Info[1].Value != name {
		t.Errorf("the last sync was %+v, want the Promotion's own", state.Operation)
	}
}

// Kargo mutates only an Application whose kargo.akuity.io/authorized-stage annotation names the Stage as
// <project>:<stage>; any other is skipped, which leaves the update by name with nothing to update.
func TestArgoCDUpdateNeedsTheStagesAuthorization(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	stage, other := envs[0], envs[1]
	project := kargoPlan(t).OfKind("Project")[0].GetName()
	app := appOf(t, stage)
	otherValue := kargoPlan(t).Object(t, "Application", appOf(t, other).Name).GetAnnotations()[authorizedStageAnnotation]
	for name, tc := range map[string]struct {
		value      *string
		authorized bool
	}{
		"no annotation":                       {nil, false},
		"another stage's annotation":          {&otherValue, false},
		"the stage without its project":       {ptr(stage), false},
		"a glob":                              {ptr(project + ":*"), false},
		"a list naming the stage and another": {ptr(otherValue + ", " + project + ":" + stage), true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := remoteWithStageBranch(t, stage)
			e, _, _, err := promoteWithArgoCD(t, r, stage, r.A, []argocd.OperationPhase{argocd.OperationSucceeded}, func(a *argocd.Application) {
				delete(a.Annotations, authorizedStageAnnotation)
				if tc.value != nil {
					a.Annotations[authorizedStageAnnotation] = *tc.value
				}
			})
			want := fmt.Sprintf("Argo CD Application %q in namespace %q is not authorized", app.Name, app.Namespace)
			if tc.authorized && err != nil {
				t.Errorf("promotion failed: %v", err)
			}
			if !tc.authorized && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("promotion ended with %v, want %q", err, want)
			}
			live, _ := e.Applications()
			if synced := live.Get(app.Namespace, app.Name).Status.OperationState != nil; synced != tc.authorized {
				t.Errorf("the Application was synced: %v, want %v", synced, tc.authorized)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// The revision Kargo waits for is taken from the source update whose repoURL equals the Application's
// exactly; the same repository spelled without ".git" leaves the step waiting for nothing.
func TestArgoCDUpdateWaitsForTheRevisionOfTheMatchingSource(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	app := appOf(t, envs[0])
	update := func(repo string) (StepResult, error) {
		sc := &StepContext{WorkDir: t.TempDir(), Project: kargoPlan(t).OfKind("Project")[0].GetName(), Stage: envs[0],
			Promotion: "p1", Engine: NewEngine(kargoPlan(t), nil, NewFreightStore())}
		return run(t.Context(), "argocd-update", sc, map[string]any{"apps": []any{map[string]any{
			"name": app.Name, "namespace": app.Namespace,
			"sources": []any{map[string]any{"repoURL": repo, "desiredRevision": "abc123"}},
		}}})
	}
	res, err := update(repoURL(t))
	if err != nil || res.Status != StatusRunning {
		t.Fatalf("the first run starts a sync and waits: %s, %v", res.Status, err)
	}
	want := []AppRevisions{{Name: app.Name, Namespace: app.Namespace, DesiredRevisions: []string{"abc123"}}}
	if got := res.HealthCheck["apps"]; !reflect.DeepEqual(got, want) {
		t.Errorf("health check %+v, want %+v", got, want)
	}
	res, err = update(strings.TrimSuffix(repoURL(t), ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.HealthCheck["apps"].([]AppRevisions)[0].DesiredRevisions; !reflect.DeepEqual(got, []string{""}) {
		t.Errorf("desired revisions %q for a differently spelled repoURL", got)
	}
	// An update naming a repository the Application does not use errors before anything is synced.
	if res, err := update("https://github.com/someone-else/other.git"); err == nil || !strings.Contains(err.Error(), "matched update") {
		t.Errorf("an update of another repository: %s, %v", res.Status, err)
	}
}

// The keys the model writes into an Argo CD operation, and whom it names as initiator, are those of Kargo's
// runner at our pin (read from the module cache, not from the model).
func TestArgoCDUpdateMarksItsOperationsAsKargoDoes(t *testing.T) {
	dir, err := kargoModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "pkg", "promotion", "runner", "builtin", "argocd_updater.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, ours := range map[string]string{"promotionInfoKey": promotionInfoKey, "applicationOperationInitiator": operationInitiator} {
		m := regexp.MustCompile(name + `\s*=\s*"([^"]+)"`).FindSubmatch(raw)
		if m == nil {
			t.Errorf("Kargo's argocd_updater.go no longer declares %s: re-read it", name)
		} else if string(m[1]) != ours {
			t.Errorf("the model writes %q where Kargo's %s is %q", ours, name, m[1])
		}
	}
}
