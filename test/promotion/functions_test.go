package promotion

import (
	"strings"
	"testing"

	"github.com/akuity/kargo/pkg/expressions"
)

// commitFrom finds the Freight's commit by the Warehouse's repository however its URL is spelled, and
// hands expressions a GitCommit whose fields have kargoapi's Go names.
func TestCommitFromAnswersFromTheFreight(t *testing.T) {
	t.Parallel()
	envs, _ := environmentStages(t)
	e := NewEngine(kargoPlan(t), nil, NewFreightStore())
	fns, err := e.functions(envs[0])
	if err != nil {
		t.Fatal(err)
	}
	url := repoURL(t)
	fns.freight = []*Freight{{Name: "f", Origin: fns.requested[0].Origin, Commits: []GitCommit{{RepoURL: url, ID: "abc", Branch: "main"}}}}
	for _, spelled := range []string{url, strings.TrimSuffix(url, ".git"), url + "/"} {
		v, err := expressions.EvaluateTemplate(`${{ commitFrom("`+spelled+`").ID }}-${{ commitFrom("`+spelled+`").Branch }}`, nil, fns.options()...)
		if err != nil || v != "abc-main" {
			t.Errorf("commitFrom(%q): %v, %v", spelled, v, err)
		}
	}
	// A repository no requested Freight comes from: commitFrom is nil, and reading its ID is an error.
	if v, err := expressions.EvaluateTemplate(`${{ commitFrom("https://github.com/other/repo.git").ID }}`, nil, fns.options()...); err == nil {
		t.Errorf("commitFrom of another repository evaluated to %#v", v)
	}
}
