package promotion

import (
	"testing"
)

func TestGitCommitCommitsAsKargoOnlyWhenSomethingChanged(t *testing.T) {
	t.Parallel()
	e, dir, _ := cloned(t)
	head := gitRun(t, dir+"/stage", "rev-parse", "HEAD")
	res, err := runStep(t, e, dir, "git-commit", map[string]any{"path": "./stage", "message": "nothing"})
	if err != nil || res.Status != StatusSkipped || res.Output["commit"] != head {
		t.Errorf("with nothing to commit: %s %v %v; want Skipped at %s", res.Status, res.Output, err, head)
	}
	writeFiles(t, dir+"/stage", map[string]string{"new.txt": "n\n"})
	res, err = runStep(t, e, dir, "git-commit", map[string]any{"path": "./stage", "message": "something changed"})
	if err != nil || res.Status != StatusSucceeded {
		t.Fatalf("%s, %v", res.Status, err)
	}
	if got := gitRun(t, dir+"/stage", "log", "-1", "--format=%H|%an <%ae>"); got != res.Output["commit"].(string)+"|"+kargoAuthor(t) {
		t.Errorf("commit %s, output %v; want the output's commit, by the controller %s", got, res.Output, kargoAuthor(t))
	}
}
