package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	argocd "github.com/akuity/kargo/pkg/controller/argocd/api/v1alpha1"
)

// Applications are the Argo CD Applications as the API server holds them while promotions run: those the
// kargo plan declares, decoded into Kargo's own Application type, then changed by argocd-update's patches and
// by the Argo CD stand-in. Tests change one (an annotation, an operation) with Update.
type Applications struct {
	mu   sync.Mutex
	apps map[string]*argocd.Application // by namespace/name
}

// Applications is the engine's live Applications, read from the plan on first use.
func (e *Engine) Applications() (*Applications, error) {
	e.appsOnce.Do(func() {
		a := &Applications{apps: map[string]*argocd.Application{}}
		for _, o := range e.Kargo.OfKind("Application") {
			raw, err := json.Marshal(o.Object)
			if err != nil {
				e.appsErr = err
				return
			}
			app := &argocd.Application{}
			if err := json.Unmarshal(raw, app); err != nil {
				e.appsErr = fmt.Errorf("Application %s/%s: %w", o.GetNamespace(), o.GetName(), err)
				return
			}
			a.apps[o.GetNamespace()+"/"+o.GetName()] = app
		}
		e.apps = a
	})
	return e.apps, e.appsErr
}

// Get is a copy of the Application, nil when there is none of that name in that namespace.
func (a *Applications) Get(namespace, name string) *argocd.Application {
	a.mu.Lock()
	defer a.mu.Unlock()
	if app, ok := a.apps[namespace+"/"+name]; ok {
		return app.DeepCopy()
	}
	return nil
}

// Update stores the Application as given (a patch, or the stand-in recording an operation's state).
func (a *Applications) Update(app *argocd.Application) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.apps[app.Namespace+"/"+app.Name] = app.DeepCopy()
}

// pending is a copy of every Application carrying an operation Argo CD has not taken up yet.
func (a *Applications) pending() []*argocd.Application {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*argocd.Application
	for _, app := range a.apps {
		if app.Operation != nil || (app.Status.OperationState != nil && !app.Status.OperationState.Phase.Completed()) {
			out = append(out, app.DeepCopy())
		}
	}
	return out
}

// ArgoCD is OUR stand-in for Argo CD's application controller, acting once between two reconciles of a
// Promotion: given an Application that carries an operation (or one still running), it records how the
// operation went in status.operationState. Kargo's step reads nothing else of Argo CD. resolve answers
// which commit a source's targetRevision names in its repository, as Argo CD's repo server would.
type ArgoCD func(app *argocd.Application, resolve func(repoURL, revision string) (string, error))

// SyncSucceeds is the stand-in by default: every operation ends Succeeded at the commits the sources'
// targetRevisions name, or Error when one cannot be resolved.
func SyncSucceeds(app *argocd.Application, resolve func(repoURL, revision string) (string, error)) {
	EndOperation(app, argocd.OperationSucceeded, "successfully synced (all tasks run)", resolve)
}

// EndOperation is what Argo CD's application controller records when an operation ends in phase
// (argo-cd v3.4.4 controller/appcontroller.go setOperationState: the state keeps the operation it ran, its
// sync result the revisions it synced; a completed operation is removed from the Application). A revision it
// cannot resolve ends the operation in Error instead.
func EndOperation(app *argocd.Application, phase argocd.OperationPhase, message string,
	resolve func(repoURL, revision string) (string, error)) {
	op := app.Operation
	if op == nil && app.Status.OperationState != nil {
		op = &app.Status.OperationState.Operation
	}
	if op == nil {
		return
	}
	sources := app.Spec.Sources
	if len(sources) == 0 && app.Spec.Source != nil {
		sources = []argocd.ApplicationSource{*app.Spec.Source}
	}
	result := &argocd.SyncOperationResult{}
	for _, src := range sources {
		rev, err := resolve(src.RepoURL, src.TargetRevision)
		if err != nil {
			phase, message, result = argocd.OperationError, err.Error(), nil
			break
		}
		result.Revisions = append(result.Revisions, rev)
	}
	if result != nil && len(result.Revisions) == 1 && len(app.Spec.Sources) == 0 {
		result.Revision, result.Revisions = result.Revisions[0], nil
	}
	app.Status.OperationState = &argocd.OperationState{Operation: *op, Phase: phase, Message: message, SyncResult: result}
	if phase.Completed() {
		app.Operation = nil
	}
}

// reconcileArgoCD lets the stand-in act on every Application with an operation, once.
func (e *Engine) reconcileArgoCD() error {
	apps, err := e.Applications()
	if err != nil {
		return err
	}
	controller := e.ArgoCD
	if controller == nil {
		controller = SyncSucceeds
	}
	for _, app := range apps.pending() {
		controller(app, e.resolve)
		apps.Update(app)
	}
	return nil
}

// resolve is the commit revision names in the repository at repoURL (a branch, a tag or a commit).
func (e *Engine) resolve(repoURL, revision string) (string, error) {
	dir, ok := e.Remotes[repoURL]
	if !ok {
		return "", fmt.Errorf("repository not found: %s", repoURL)
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "--quiet", revision+"^{commit}").Output()
	if err != nil {
		return "", fmt.Errorf("unable to resolve '%s' to a commit SHA", revision)
	}
	return strings.TrimSpace(string(out)), nil
}

// maxReconciles bounds how often a Running step is run again. Kargo runs it again at each reconcile of the
// Promotion until its timeout (5 minutes for argocd-update, argocd_updater.go DefaultTimeout), then errors it.
const maxReconciles = 5

// runUntilDone runs a step as Kargo's local orchestrator does across reconciles (akuity/kargo v1.11.2
// pkg/promotion/local_orchestrator.go determineStepCompletion): a Running step is run again after Argo CD
// acted, until it is no longer Running; the statuses of each run are kept.
func (e *Engine) runUntilDone(ctx context.Context, kind string, s *StepContext, config map[string]any) (StepResult, []string, error) {
	var statuses []string
	for attempt := 1; ; attempt++ {
		res, err := run(ctx, kind, s, config)
		statuses = append(statuses, res.Status)
		if err != nil || res.Status != StatusRunning {
			return res, statuses, err
		}
		if attempt == maxReconciles {
			return StepResult{Status: StatusErrored}, statuses,
				fmt.Errorf("still Running after %d reconciles: Kargo errors the step once its timeout passes", attempt)
		}
		if err := e.reconcileArgoCD(); err != nil {
			return StepResult{Status: StatusErrored}, statuses, err
		}
	}
}
