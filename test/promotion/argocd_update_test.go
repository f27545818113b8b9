package promotion

import (
	"reflect"
	"strings"
	"testing"
)

// The revision Kargo waits for is taken from the source update whose repoURL equals the Application's
// exactly; the same repository spelled without ".git" leaves the step waiting for nothing.
func TestArgoCDUpdateWaitsForTheRevisionOfTheMatchingSource(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	app := appOf(t, envs[0])
	sc := &StepContext{WorkDir: t.TempDir(), Project: kargoPlan(t).OfKind("Project")[0].GetName(), Stage: envs[0], Engine: NewEngine(kargoPlan(t), nil, NewFreightStore())}
	update := func(repo string) (StepResult, error) {
		return run(t.Context(), "argocd-update", sc, map[string]any{"apps": []any{map[string]any{
			"name": app.Name, "namespace": app.Namespace,
			"sources": []any{map[string]any{"repoURL": repo, "desiredRevision": "abc123"}},
		}}})
	}
	res, err := update(repoURL(t))
	if err != nil {
		t.Fatal(err)
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
}

func TestArgoCDUpdateRefusesAnotherStagesApplication(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	app := appOf(t, envs[1])
	sc := &StepContext{WorkDir: t.TempDir(), Project: kargoPlan(t).OfKind("Project")[0].GetName(), Stage: envs[0], Engine: NewEngine(kargoPlan(t), nil, NewFreightStore())}
	_, err := run(t.Context(), "argocd-update", sc, map[string]any{"apps": []any{map[string]any{"name": app.Name, "namespace": app.Namespace}}})
	if err == nil || !strings.Contains(err.Error(), "does not permit mutation") {
		t.Errorf("stage %s updated %s: %v", envs[0], app.Name, err)
	}
}
