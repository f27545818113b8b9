package promotion

import (
	"context"
	"errors"
	"fmt"
	"strings"

	libargocd "github.com/akuity/kargo/pkg/argocd"
	argocd "github.com/akuity/kargo/pkg/controller/argocd/api/v1alpha1"
	"github.com/akuity/kargo/pkg/urls"
	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
)

// argocd-update, OUR model of akuity/kargo v1.11.2 pkg/promotion/runner/builtin/argocd_updater.go (that
// package imports Kargo's API module, which is not served): the Application by name (getAuthorizedApplications),
// skipped unless its kargo.akuity.io/authorized-stage annotation names this Stage (authorizeArgoCDAppUpdate,
// pkg/api/stage.go AuthorizedStages), then mustPerformUpdate and processApplication: a sync is started with
// an operation carrying the Promotion's name, the step is Running until Argo CD completes it, Succeeded once
// it did at the desired revisions, Errored when it Failed or Errored. The desired revisions are
// argocd_revisions.go getDesiredRevisions; the phases are ordered by Kargo's own pkg/argocd ByOperationPhase.
func init() { register("argocd-update", argocdUpdate) }

// AppRevisions is one Application's desired revisions, as the step's health check holds them.
type AppRevisions struct {
	Name, Namespace  string
	DesiredRevisions []string
}

const (
	authorizedStageAnnotation = "kargo.akuity.io/authorized-stage" // kargoapi.AnnotationKeyAuthorizedStage
	promotionInfoKey          = "kargo.akuity.io/promotion"
	operationInitiator        = "kargo-controller"
)

func argocdUpdate(_ context.Context, s *StepContext, cfg builtin.ArgoCDUpdateConfig) (StepResult, error) {
	apps, err := s.Engine.Applications()
	if err != nil {
		return StepResult{Status: StatusErrored}, err
	}
	var phases []argocd.OperationPhase
	var checks []AppRevisions
	for i := range cfg.Apps {
		update := &cfg.Apps[i]
		app, err := authorizedApplication(s, apps, update)
		if err != nil {
			return StepResult{Status: StatusErrored}, err
		}
		desired := desiredRevisions(update, app)
		checks = append(checks, AppRevisions{Name: app.Name, Namespace: app.Namespace, DesiredRevisions: desired})
		phase, err := processApplication(s, apps, update, app, desired)
		if err != nil {
			return StepResult{Status: StatusErrored}, err
		}
		if phase.Failed() {
			return StepResult{Status: StatusErrored}, nil
		}
		if phase != "" {
			phases = append(phases, phase)
		}
	}
	status := stepStatusOf(phases)
	if status == "" {
		return StepResult{Status: StatusErrored}, fmt.Errorf("could not determine promotion step status from operation phases: %v", phases)
	}
	return StepResult{Status: status, HealthCheck: map[string]any{"kind": "argocd-update", "apps": checks}}, nil
}

// authorizedApplication is getAuthorizedApplications for an update by name: an Application the Stage may not
// mutate is skipped, which leaves none.
func authorizedApplication(s *StepContext, apps *Applications, update *builtin.ArgoCDAppUpdate) (*argocd.Application, error) {
	if update.Selector != nil {
		return nil, errors.New("the harness finds Applications by name only")
	}
	namespace := update.Namespace
	if namespace == "" {
		namespace = "argocd" // libargocd.Namespace(): ARGOCD_NAMESPACE, "argocd" when unset
	}
	app := apps.Get(namespace, update.Name)
	if app == nil {
		return nil, fmt.Errorf("unable to find Argo CD Application %q in namespace %q", update.Name, namespace)
	}
	if authorize(s, app) != nil {
		return nil, fmt.Errorf("Argo CD Application %q in namespace %q is not authorized", update.Name, namespace)
	}
	return app, nil
}

// authorize is authorizeArgoCDAppUpdate with pkg/api/stage.go AuthorizedStages: a comma-separated list of
// <project>:<stage>, no globs; a value that does not parse authorizes nobody.
func authorize(s *StepContext, app *argocd.Application) error {
	denied := fmt.Errorf("Argo CD Application %q in namespace %q does not permit mutation by Kargo Stage %s in namespace %s",
		app.Name, app.Namespace, s.Stage, s.Project)
	value, ok := app.Annotations[authorizedStageAnnotation]
	if !ok {
		return denied
	}
	var matched bool
	parsed := 0
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		project, stage, ok := strings.Cut(entry, ":")
		project, stage = strings.TrimSpace(project), strings.TrimSpace(stage)
		if !ok || project == "" || stage == "" {
			return fmt.Errorf("invalid authorized Stage %q: expected format %q", entry, "<project>:<stage>")
		}
		if strings.Contains(project, "*") || strings.Contains(stage, "*") {
			return fmt.Errorf("invalid authorized Stage %q: deprecated glob expressions are no longer supported", entry)
		}
		parsed++
		matched = matched || (project == s.Project && stage == s.Stage)
	}
	if parsed == 0 {
		return fmt.Errorf("no authorized Stages found in %q", value)
	}
	if !matched {
		return denied
	}
	return nil
}

// desiredRevisions is getDesiredRevisions: per source of the Application, the desiredRevision of the update
// whose repoURL and chart equal the source's exactly ("" for a source no update names).
func desiredRevisions(update *builtin.ArgoCDAppUpdate, app *argocd.Application) []string {
	sources := app.Spec.Sources
	if len(sources) == 0 && app.Spec.Source != nil {
		sources = []argocd.ApplicationSource{*app.Spec.Source}
	}
	if len(sources) == 0 {
		return nil
	}
	revisions := make([]string, len(sources))
	for i, src := range sources {
		for j := range update.Sources {
			if u := update.Sources[j]; u.RepoURL == src.RepoURL && u.Chart == src.Chart {
				revisions[i] = u.DesiredRevision
				break
			}
		}
	}
	return revisions
}

// processApplication: when no update is due, the phase the current operation is in (an error when it Failed
// or Errored); otherwise a new sync, after which the step waits (Running).
func processApplication(s *StepContext, apps *Applications, update *builtin.ArgoCDAppUpdate, app *argocd.Application, desired []string) (argocd.OperationPhase, error) {
	phase, mustUpdate, err := mustPerformUpdate(s, app, desired)
	if !mustUpdate {
		if err != nil && phase == "" {
			return "", err
		}
		if phase.Failed() && app.Status.OperationState != nil {
			return "", fmt.Errorf("Argo CD Application %q in namespace %q failed with: %s",
				app.Name, app.Namespace, app.Status.OperationState.Message)
		}
		return phase, nil
	}
	if err := sourcesMatch(update, app); err != nil {
		return "", fmt.Errorf("error building desired sources for Argo CD Application %q in namespace %q: %w",
			app.Name, app.Namespace, err)
	}
	syncApplication(s, apps, app)
	return argocd.OperationRunning, nil
}

// sourcesMatch is the part of buildDesiredSources the harness runs: every source update applies to one of
// the Application's sources (a chart by repoURL and chart exactly, a git repository by its normalized URL,
// applyArgoCDSourceUpdate). Changing the sources (updateTargetRevision, kustomize, helm) is refused: the
// plan does not ask for it, and the stand-in would not apply it.
func sourcesMatch(update *builtin.ArgoCDAppUpdate, app *argocd.Application) error {
	sources := app.Spec.Sources
	if len(sources) == 0 && app.Spec.Source != nil {
		sources = []argocd.ApplicationSource{*app.Spec.Source}
	}
	for i := range update.Sources {
		u := &update.Sources[i]
		if u.UpdateTargetRevision || u.Kustomize != nil || u.Helm != nil {
			return fmt.Errorf("the harness does not change an Application's sources (source %s)", u.RepoURL)
		}
		matched := false
		for _, src := range sources {
			if src.Chart != "" || u.Chart != "" {
				matched = matched || (src.RepoURL == u.RepoURL && src.Chart == u.Chart)
			} else {
				matched = matched || urls.NormalizeGit(src.RepoURL) == urls.NormalizeGit(u.RepoURL)
			}
		}
		if !matched {
			return fmt.Errorf("no source of Argo CD Application %q in namespace %q matched update for source with repoURL %s",
				app.Name, app.Namespace, u.RepoURL)
		}
	}
	return nil
}

// mustPerformUpdate: whether Kargo starts a sync, and the phase of the operation it waits on otherwise.
func mustPerformUpdate(s *StepContext, app *argocd.Application, desired []string) (argocd.OperationPhase, bool, error) {
	status := app.Status.OperationState
	if status == nil {
		return "", true, nil
	}
	kargoInitiated, ours := false, false
	for _, info := range status.Operation.Info {
		if info != nil && info.Name == promotionInfoKey {
			kargoInitiated, ours = true, info.Value == s.Promotion
			break
		}
	}
	if !kargoInitiated && !status.Phase.Completed() {
		return status.Phase, false, fmt.Errorf("current operation was initiated by %q: waiting for operation to complete",
			status.Operation.InitiatedBy.Username)
	}
	if kargoInitiated && !ours && !status.Phase.Completed() {
		return status.Phase, false, fmt.Errorf("current operation was not initiated for Promotion %s: waiting for operation to complete", s.Promotion)
	}
	if !ours {
		return "", true, nil // the other operation is complete: start our own
	}
	if !status.Phase.Completed() {
		return status.Phase, false, nil
	}
	if status.SyncResult == nil {
		return "", true, errors.New("operation completed without a sync result")
	}
	if len(desired) == 0 {
		return status.Phase, false, nil
	}
	observed := status.SyncResult.Revisions
	if len(observed) == 0 {
		observed = []string{status.SyncResult.Revision}
	}
	for i, rev := range observed {
		if i < len(desired) && desired[i] != "" && rev != desired[i] {
			return "", true, fmt.Errorf("sync result revisions %v do not match desired revisions %v", observed, desired)
		}
	}
	return status.Phase, false, nil
}

// syncApplication is the patch Kargo applies: a hard refresh, an operation naming the Promotion (initiated
// by the Promotion's actor when it has one, otherwise automated by kargo-controller), no operation state.
func syncApplication(s *StepContext, apps *Applications, app *argocd.Application) {
	if app.Annotations == nil {
		app.Annotations = map[string]string{}
	}
	app.Annotations[argocd.AnnotationKeyRefresh] = string(argocd.RefreshTypeHard)
	initiator := argocd.OperationInitiator{Username: operationInitiator, Automated: true}
	if s.Actor != "" {
		initiator = argocd.OperationInitiator{Username: s.Actor}
	}
	app.Operation = &argocd.Operation{
		InitiatedBy: initiator,
		Info: []*argocd.Info{
			{Name: "Reason", Value: "Promotion triggered a sync of this Application resource."},
			{Name: promotionInfoKey, Value: s.Promotion},
		},
		Sync: &argocd.SyncOperation{Revisions: []string{}},
	}
	if p := app.Spec.SyncPolicy; p != nil {
		if p.Retry != nil {
			app.Operation.Retry = *p.Retry
		}
		app.Operation.Sync.SyncOptions = p.SyncOptions
	}
	app.Status.OperationState = nil
	apps.Update(app)
}

// stepStatusOf is operationPhaseToPromotionStepStatus: the most important phase decides, in Kargo's order.
func stepStatusOf(phases []argocd.OperationPhase) string {
	if len(phases) == 0 {
		return ""
	}
	libargocd.ByOperationPhase(phases).Sort()
	switch phases[0] {
	case argocd.OperationRunning, argocd.OperationTerminating:
		return StatusRunning
	case argocd.OperationFailed, argocd.OperationError:
		return StatusErrored
	case argocd.OperationSucceeded:
		return StatusSucceeded
	}
	return ""
}
