package analysis

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"infra-change-platform/test/internal/plan"

	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// realisticOp is an operation as PKO's workspace records it: the environment the automation API sets and
// a stack config of a few keys (each UpdateInfo carries the whole config).
func realisticOp(head string, i int) updateInfo {
	u := op(head, "succeeded", t0-int64(i)*600, map[string]int{"same": 40, "update": 1})
	u.Environment = map[string]string{
		"git.head": head, "git.headName": "refs/heads/stage/dev", "git.committer": "kargo",
		"git.committer.email": "kargo@example.com", "vcs.kind": "github.com", "vcs.owner": "your-org",
		"vcs.repo": "infra-change-platform", "exec.kind": "auto.local", "exec.command": "up",
		"pulumi.version": "v3.270.0", "pulumi.os": "linux", "pulumi.arch": "amd64",
	}
	for k := range 8 {
		u.Config[fmt.Sprintf("infra-program:setting%d", k)] = apitype.AppConfigValue{String: "a-typical-value"}
	}
	u.ResourceCount = 41
	return u
}

// jobEnv is one env value of the template's first Job.
func jobEnv(t *testing.T, tr templateRun, name string) string {
	t.Helper()
	for _, e := range tr.base.Spec.Metrics[0].Provider.Job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("%s: the Job has no %s", tr.template.GetName(), name)
	return ""
}

// Pulumi Cloud's answers stay in the Job: every request asks for one page of verification.pageSize, and the
// AnalysisRun stores only which Job measured, whatever the stack's history holds.
func TestRequestAndRunSize(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	for _, tr := range templateRuns(t, kargo, commit) {
		tpl, base := tr.template, tr.base
		kind := templateKind(base)
		pageSize := jobEnv(t, tr, "PAGE_SIZE")
		t.Run(tpl.GetName(), func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			// 150 operations of other commits, ours the newest.
			list := []updateInfo{realisticOp(commit, 0)}
			for i := 1; i <= 150; i++ {
				list = append(list, realisticOp(other, i))
			}
			if kind == "preview" {
				for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
					list[i], list[j] = list[j], list[i] // the previews list is oldest first
				}
			}
			ops(kind, list...)(c)
			got := drive(t, against(base, c.URL), cluster...)
			if got.Status.Phase != successful {
				t.Fatalf("phase %s: %s", got.Status.Phase, got.Status.Message)
			}
			for _, r := range c.Requests() {
				u, err := url.Parse(r)
				if err != nil {
					t.Fatal(err)
				}
				// The lists are paged by page and pageSize; an operation's events by continuationToken.
				if !strings.HasSuffix(u.Path, "/updates") && !strings.HasSuffix(u.Path, "/previews") {
					continue
				}
				if u.Query().Get("pageSize") != pageSize || u.Query().Get("page") != "1" {
					t.Errorf("%s asks for more than one page of %s", r, pageSize)
				}
			}
			if _, err := strconv.Atoi(pageSize); err != nil {
				t.Fatalf("PAGE_SIZE %q", pageSize)
			}
			status, _ := json.Marshal(got.Status)
			for _, r := range got.Status.MetricResults {
				for _, m := range r.Measurements {
					if m.Value != "" {
						t.Errorf("%s stores a value of %d bytes", r.Name, len(m.Value))
					}
				}
			}
			if len(status) > 4096 {
				t.Errorf("the run's status is %d bytes", len(status))
			}
			t.Logf("%s: %d requests, %d metrics, %d bytes of status in the AnalysisRun", tpl.GetName(), len(c.Requests()), len(got.Status.MetricResults), len(status))
		})
	}
}
