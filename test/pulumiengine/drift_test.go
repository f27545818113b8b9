package pulumiengine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/backend/backenderr"
	"github.com/pulumi/pulumi/pkg/v3/display"
	"github.com/pulumi/pulumi/pkg/v3/engine"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
)

// A drift check (lib/pipeline/drift.ts) is `pulumi preview --refresh --expect-no-changes` of the commit its
// update stage last ran, as PKO v2.9.0 runs a preview Stack whose Updates expect no changes
// (agent/pkg/server/server.go Preview). The engine refreshes every resource, then diffs the program against
// what it read: a resource changed outside Pulumi is a step that would change it back, and the CLI fails
// the preview (pulumi v3.274.1 pkg/cmd/pulumi/operations/preview.go: `expectNop && engine.HasChanges(changes)`
// returns NoChangesExpectedError, exit code ExitNoChanges).
func TestDriftFoundByTheCheck(t *testing.T) {
	t.Parallel()
	versioning := "aws:s3/bucketVersioningV2:BucketVersioningV2"
	prog := program{
		{typ: bucketV2, name: "data", in: map[string]any{"bucket": "data-1"}},
		{typ: versioning, name: "data-versioning", in: map[string]any{"bucket": out("data", "id"),
			"versioningConfiguration": map[string]any{"status": "Enabled"}}},
		{typ: logGroup, name: "app", in: map[string]any{"name": "app", "retentionInDays": 30}},
	}
	cloud := newCloud()
	deployed := runEngine(t, nil, prog, cloud, pulumiOptions{refresh: true}, false)

	// Nothing changed since the update: the check passes, again and again.
	for i := range 2 {
		if err, changed := driftCheck(t, deployed.snap, prog, cloud); err != nil {
			t.Fatalf("check %d without drift: %v (%v)", i+1, err, changed)
		}
	}

	// Versioning suspended by hand in the account.
	for _, r := range deployed.snap.Resources {
		if string(r.Type) == versioning {
			cloud.drift(r.ID, "versioningConfiguration", map[string]any{"status": "Suspended"})
		}
	}
	err, changed := driftCheck(t, deployed.snap, prog, cloud)
	if err == nil {
		t.Fatal("a resource changed outside Pulumi, and the check passed")
	}
	if want := "no changes were expected for preview but changes were proposed"; err.Error() != want {
		t.Errorf("the check fails with %q, want %q", err, want)
	}
	// It names what drifted, and nothing else.
	if want := []string{"update data-versioning"}; !slices.Equal(changed, want) {
		t.Errorf("the check's steps that change something: %v, want %v", changed, want)
	}
}

// driftCheck runs the engine's preview with refresh over the state the update left, and decides as the CLI
// does with --expect-no-changes from the changes the engine's summary counts. It returns that error, and
// the steps (op and name) that would change something.
func driftCheck(t *testing.T, snap *deploy.Snapshot, prog program, cloud *fakeCloud) (error, []string) {
	t.Helper()
	check := runEngine(t, snap, prog, cloud, pulumiOptions{refresh: true}, true)
	changes := display.ResourceChanges{}
	var changed []string
	for _, raw := range check.events {
		var e struct {
			SummaryEvent *struct {
				ResourceChanges map[string]int `json:"resourceChanges"`
			} `json:"summaryEvent"`
			ResourcePreEvent *struct {
				Metadata struct {
					Op  string `json:"op"`
					URN string `json:"urn"`
				} `json:"metadata"`
			} `json:"resourcePreEvent"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		if e.SummaryEvent != nil {
			for op, n := range e.SummaryEvent.ResourceChanges {
				changes[display.StepOp(op)] += n
			}
		}
		if p := e.ResourcePreEvent; p != nil {
			if op := display.StepOp(p.Metadata.Op); op != deploy.OpSame && op != deploy.OpRefresh {
				changed = append(changed, fmt.Sprintf("%s %s", op, p.Metadata.URN[strings.LastIndex(p.Metadata.URN, "::")+2:]))
			}
		}
	}
	if engine.HasChanges(changes) {
		return backenderr.NoChangesExpectedError{Operation: "preview"}, changed
	}
	return nil, changed
}
