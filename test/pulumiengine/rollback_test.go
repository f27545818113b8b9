package pulumiengine

import (
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
)

// A rollback that deletes: the older release's program, previewed again against the state the newer release
// left (as `npm run rollback` has the preview stage run it), shows the newer release's database deleted and
// stops on loss; the update that follows does what that preview showed, and passes. The older release's first
// preview (its creates) is not what the rollback's update is compared with. Drift between the rollback's
// preview and its update makes the update do what the preview did not show, and it fails.
func TestRollbackThatDeletes(t *testing.T) {
	t.Parallel()
	older, newer, rollback := rollbackReleases()
	cases := history(t, newCloud(), older, newer, rollback)
	for i, v := range judge(t, cases...) {
		checkCommit(t, []commit{older, newer, rollback}[i], v)
	}
	// Compared with the older release's first preview (its creates, against an empty stack), the rollback's
	// update would fail: that preview is not what was approved for it.
	stale := judge(t, verdictCase{Preview: cases[0].Preview, Update: cases[2].Update, StopOn: cases[2].StopOn})[0]
	if stale.Update == nil || len(stale.Update.Unexpected) == 0 {
		t.Errorf("the rollback's update matches the older release's first preview too: %+v", stale.Update)
	}
	suspended := rollback
	suspended.name, suspended.unexpected = "rolled back, versioning suspended by hand after its preview", []string{"update data-versioning"}
	suspended.before = func(c *fakeCloud, snap *deploy.Snapshot) {
		for _, r := range snap.Resources {
			if string(r.Type) == "aws:s3/bucketVersioningV2:BucketVersioningV2" {
				c.drift(r.ID, "versioningConfiguration", map[string]any{"status": "Suspended"})
			}
		}
	}
	checkHistory(t, newCloud(), older, newer, suspended)
}

// rollbackReleases is a versioned bucket (the older release), then a database beside it (the newer release),
// then the older release's program again.
func rollbackReleases() (older, newer, rollback commit) {
	prog := program{
		{typ: bucketV2, name: "data", in: map[string]any{"bucket": "data-1"}},
		{typ: "aws:s3/bucketVersioningV2:BucketVersioningV2", name: "data-versioning", in: map[string]any{
			"bucket": out("data", "id"), "versioningConfiguration": map[string]any{"status": "Enabled"}}},
	}
	withDB := append(append(program{}, prog...), res{typ: rdsInstance, name: "db", in: map[string]any{
		"engine": "postgres", "instanceClass": "db.t4g.micro", "allocatedStorage": 20}})
	older = commit{name: "older release", prog: prog, opts: refresh}
	newer = commit{name: "newer release", prog: withDB, opts: refresh, want: map[string][]string{"create db": {"cost"}}}
	rollback = commit{name: "rolled back to the older release", prog: prog, opts: refresh,
		want: map[string][]string{"delete db": loss}}
	return older, newer, rollback
}
