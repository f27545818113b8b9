package analysis

import (
	"regexp"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// lossStop is a preview Stage of the plan whose environment stops on loss (a delete), and the update Stage
// its stop names: where a rollback that deletes stops, and then updates.
func lossStop(t *testing.T, kargo *plan.Project) (preview, update *unstructured.Unstructured) {
	t.Helper()
	for _, s := range kargo.OfKind("Stage") {
		if _, ok, _ := unstructured.NestedMap(s.Object, "spec", "verification"); !ok {
			continue
		}
		args := map[string]string{}
		for _, a := range stageVerification(t, s).Args {
			args[a.Name] = a.Value
		}
		if args["approve-stage"] == "" || (args["stop-on"] != "all" && !strings.Contains(","+args["stop-on"]+",", ",loss,")) {
			continue
		}
		return s, kargo.Object(t, "Stage", args["approve-stage"])
	}
	t.Fatal("no preview Stage of the plan stops on loss and names the update Stage that lets it through")
	return nil, nil
}

// A rollback as the stack records it: the older commit's first promotion (version 1, its preview against
// version 0), a newer release (version 2), then the older commit previewed again against the current state
// (version 2) before its update (version 3). Through the plan's Stages, Argo Rollouts' analysis controller
// and the Job: the rollback's preview stops on what it deletes, naming its own preview; its update is
// compared with that preview and never with the first promotion's, which ran against a state that is gone.
func TestRollbackComparedWithItsOwnPreview(t *testing.T) {
	t.Parallel()
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	previewStage, updateStage := lossStop(t, kargo)
	freight := gitCommit{RepoURL: repoURL(t, kargo), ID: commit}
	data := step{op: "create", typ: "aws:s3/bucketV2:BucketV2", name: "data"}
	queue := step{op: "create", typ: "aws:sqs/queue:Queue", name: "jobs"}
	first := []step{data}                                                // the older release, promoted first
	newer := []step{{op: "same", typ: data.typ, name: data.name}, queue} // the newer release adds a queue
	rollback := []step{{op: "same", typ: data.typ, name: data.name}, {op: "delete", typ: queue.typ, name: queue.name}}
	for _, c := range []struct {
		name string
		// ownPreview: the rollback previewed the older commit against the current state first.
		ownPreview bool
		update     []step
		want       v1alpha1.AnalysisPhase
		why        string
	}{
		{name: "the rollback's update did what its own preview showed", ownPreview: true, update: rollback, want: successful},
		{name: "the rollback's update did what only the first promotion's preview showed", ownPreview: true, update: first, want: failed,
			why: `(?m)^- data \(aws:s3/bucketV2:BucketV2\): create: the preview showed no change \(same\)`},
		// Drift during a rollback: someone changed the bucket by hand after the rollback's preview; the update,
		// which refreshes first, set it back, which that preview did not show.
		{name: "drift between the rollback's preview and its update", ownPreview: true, want: failed,
			update: []step{{op: "update", typ: data.typ, name: data.name, diffs: []string{"versioning"}}, rollback[1]},
			why:    `(?m)^- data \(aws:s3/bucketV2:BucketV2\): update: the preview showed no change \(same\)`},
		{name: "no preview of its own, only the first promotion's, which matches", update: first, want: failed,
			why: `(?m): no succeeded preview of 4f1c2b9e8d7a against the state this update changed \(version 2\), so it cannot be shown to do only what was approved\.\nA preview of the commit against another state .*npm run rollback`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			cloud.stack.setUpdates(op(other, "succeeded", t0+1000, nil), op(commit, "succeeded", t0, nil))
			cloud.stack.setEvents("update", updateID(1), engineEvents(false, first...))
			cloud.stack.setEvents("update", updateID(2), engineEvents(false, newer...))
			stale := cloud.stack.previews[0][0].UpdateID // the first promotion's preview, with version 1's steps
			cloud.stack.unpreviewed = true
			var own preview
			if c.ownPreview {
				own = asPreview(op(commit, "succeeded", t0+2000, nil))
				cloud.stack.setPreviews(own) // against the latest version, 2
				cloud.stack.setEvents("preview", own.UpdateID, engineEvents(true, rollback...))
				got, jobs := driveJobs(t, against(newRun(t, kargo, previewStage, freight), cloud.URL), cluster...)
				if got.Status.Phase != failed {
					t.Fatalf("%s: the rollback's preview did not stop on its delete: %s %s", previewStage.GetName(), got.Status.Phase, got.Status.Message)
				}
				expectReason(t, jobs, `(?m)^- jobs \(aws:sqs/queue:Queue\): delete, [a-z, ]*loss`)
				if !strings.Contains(got.Status.Message, "/previews/"+own.UpdateID) || strings.Contains(got.Status.Message, stale) {
					t.Errorf("the stop does not name the rollback's own preview %s alone: %q", own.UpdateID, got.Status.Message)
				}
			}
			// A decider let it through: PKO updates the stack (version 3), and the update Stage verifies it.
			cloud.stack.finishUpdate(op(commit, "succeeded", t0+2100, nil))
			cloud.stack.setEvents("update", updateID(3), engineEvents(false, c.update...))
			got, jobs := driveJobs(t, against(newRun(t, kargo, updateStage, freight), cloud.URL), cluster...)
			if got.Status.Phase != c.want {
				t.Fatalf("%s: phase %s, want %s: %s (jobs %+v)", updateStage.GetName(), got.Status.Phase, c.want, got.Status.Message, jobs)
			}
			if c.why != "" {
				expectReason(t, jobs, c.why)
			}
			for _, j := range jobs {
				if strings.Contains(j.Stdout+j.Stderr, stale) {
					t.Errorf("the update was compared with the first promotion's preview %s: %s%s", stale, j.Stdout, j.Stderr)
				}
			}
			if !c.ownPreview {
				return
			}
			record := recordOf(t, jobs[0])
			p, _ := record["preview"].(map[string]any)
			if record["against"] != float64(2) || p == nil || p["updateID"] != own.UpdateID {
				t.Errorf("the record does not say it compared the update of version 3 with the preview %s against version 2: %v", own.UpdateID, record)
			}
			if c.want == failed && !regexp.MustCompile(`did what its preview \(\S+/previews/`+regexp.QuoteMeta(own.UpdateID)+`\) did not show`).MatchString(jobs[0].Stderr) {
				t.Errorf("the failure does not name the rollback's own preview: %s", jobs[0].Stderr)
			}
		})
	}
}
