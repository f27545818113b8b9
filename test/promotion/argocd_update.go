package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	argocd "github.com/akuity/kargo/pkg/controller/argocd/api/v1alpha1"
	"github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
)

// argocd-update, up to the sync it asks Argo CD for, as akuity/kargo v1.11.2
// pkg/promotion/runner/builtin/argocd_updater.go runs it: the Application by name in its namespace (here:
// the one the plan declares, read into Kargo's own Application type), refused unless its
// kargo.akuity.io/authorized-stage annotation names this Stage (pkg/api/stage.go AuthorizedStages), and
// the revision each source is synced to and then awaited at (argocd_revisions.go getDesiredRevisions:
// the update whose repoURL and chart equal the source's exactly). The output carries those revisions,
// the health check the real step hands the Stage.
func init() { register("argocd-update", argocdUpdate) }

// AppRevisions is one Application's desired revisions, as the step's health check holds them.
type AppRevisions struct {
	Name, Namespace  string
	DesiredRevisions []string
}

func argocdUpdate(_ context.Context, s *StepContext, cfg builtin.ArgoCDUpdateConfig) (StepResult, error) {
	var checks []AppRevisions
	for i := range cfg.Apps {
		update := &cfg.Apps[i]
		if update.Selector != nil {
			return StepResult{Status: StatusErrored}, fmt.Errorf("the harness finds Applications by name only")
		}
		namespace := update.Namespace
		if namespace == "" {
			namespace = "argocd" // libargocd.Namespace(): ARGOCD_NAMESPACE, "argocd" when unset
		}
		app, err := s.Engine.application(namespace, update.Name)
		if err != nil {
			return StepResult{Status: StatusErrored}, err
		}
		if err := authorized(s, app); err != nil {
			return StepResult{Status: StatusErrored}, err
		}
		sources := app.Spec.Sources
		if len(sources) == 0 && app.Spec.Source != nil {
			sources = []argocd.ApplicationSource{*app.Spec.Source}
		}
		revisions := make([]string, len(sources))
		for j, src := range sources {
			for k := range update.Sources {
				if u := update.Sources[k]; u.RepoURL == src.RepoURL && u.Chart == src.Chart {
					revisions[j] = u.DesiredRevision
					break
				}
			}
		}
		checks = append(checks, AppRevisions{Name: app.Name, Namespace: app.Namespace, DesiredRevisions: revisions})
	}
	return StepResult{
		Status:      StatusSucceeded,
		HealthCheck: map[string]any{"kind": "argocd-update", "apps": checks},
	}, nil
}

func authorized(s *StepContext, app *argocd.Application) error {
	denied := fmt.Errorf("Argo CD Application %q in namespace %q does not permit mutation by Kargo Stage %s in namespace %s",
		app.Name, app.Namespace, s.Stage, s.Project)
	value, ok := app.Annotations["kargo.akuity.io/authorized-stage"]
	if !ok {
		return denied
	}
	for _, entry := range strings.Split(value, ",") {
		project, stage, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || strings.Contains(entry, "*") {
			return fmt.Errorf("invalid authorized Stage %q: expected format %q", entry, "<project>:<stage>")
		}
		if strings.TrimSpace(project) == s.Project && strings.TrimSpace(stage) == s.Stage {
			return nil
		}
	}
	return denied
}

// application is the Application the kargo project declares with that name and namespace.
func (e *Engine) application(namespace, name string) (*argocd.Application, error) {
	for _, o := range e.Kargo.OfKind("Application") {
		if o.GetName() == name && o.GetNamespace() == namespace {
			raw, err := json.Marshal(o.Object)
			if err != nil {
				return nil, err
			}
			app := &argocd.Application{}
			if err := json.Unmarshal(raw, app); err != nil {
				return nil, fmt.Errorf("Application %s/%s: %w", namespace, name, err)
			}
			return app, nil
		}
	}
	return nil, fmt.Errorf("unable to find Argo CD Application %q in namespace %q", name, namespace)
}
