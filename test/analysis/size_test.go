package analysis

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
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
		u.Config[fmt.Sprintf("infra-program:setting%d", k)] = map[string]any{"string": "a-typical-value", "secret": false, "object": false}
	}
	u.Version = 200 - i
	u.ResourceCount = 41
	return u
}

// Each measurement stores Pulumi Cloud's whole answer in the AnalysisRun (no jsonPath): it holds at most
// the page the template asks for, and the newest operation for the commit is on it.
func TestMeasurementSize(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	secret := tokenSecret(t, kargo)
	for _, tr := range templateRuns(t, kargo, commit) {
		tpl, stage, base := tr.template, tr.stage, tr.base
		kind, _ := templateKind(stage, base)
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
			got := drive(t, against(base, c.URL), time.Minute, secret)
			if got.Status.Phase != successful {
				t.Fatalf("phase %s: %s", got.Status.Phase, got.Status.Message)
			}
			u, err := url.Parse(got.Spec.Metrics[0].Provider.Web.URL)
			if err != nil {
				t.Fatal(err)
			}
			pageSize, err := strconv.Atoi(u.Query().Get("pageSize"))
			if err != nil {
				t.Fatalf("the metric asks for no page size: %s", u)
			}
			total := 0
			for _, r := range got.Status.MetricResults {
				for _, m := range r.Measurements {
					var body struct {
						Updates []json.RawMessage `json:"updates"`
					}
					if err := json.Unmarshal([]byte(m.Value), &body); err != nil {
						t.Fatalf("%s: stored value is not the answer: %v", r.Name, err)
					}
					if len(body.Updates) > pageSize {
						t.Errorf("%s stores %d operations, more than the page of %d", r.Name, len(body.Updates), pageSize)
					}
					total += len(m.Value)
				}
			}
			t.Logf("%s: pageSize %d, %d metrics, %d bytes of measurements in the AnalysisRun", tpl.GetName(), pageSize, len(got.Status.MetricResults), total)
		})
	}
}
