package health

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// driftMessage is the Stack's lastUpdate.message PKO v2.9.0 leaves when a drift check's preview proposes
// changes: the agent's gRPC status "preview failed: <err>" (agent/pkg/server/server.go Preview), err being
// the Automation API's error (pulumi/pulumi sdk v3.274.1 go/auto/errors.go autoError.Error: the cause,
// code, stdout, stderr), the CLI's own "no changes were expected" error (pkg/backend/backenderr) on stderr
// with its ExitNoChanges code, and the diff (the drifted resource) on stdout; the Update's message becomes
// the Stack's (operator/internal/controller/auto/update_controller.go setStatusBlockFromGRPCErr,
// stack_controller.go markStackFailed).
const driftMessage = "preview failed: failed to run preview: exit status 7\ncode: 7\n" +
	"stdout: Previewing update (dev):\n  ~ aws:s3/bucketVersioningV2:BucketVersioningV2 data-versioning update [diff: ~versioningConfiguration]\n" +
	"stderr: error: no changes were expected for preview but changes were proposed\n"

// conflictMessage is PKO's own message for a run that met another update of the stack
// (agent/pkg/server/pulumi_errors.go knownErrors): no drift, retried.
const conflictMessage = "Another update is currently in progress"

// driftTemplates are the drift checks' Stack templates (lib/pipeline/drift.ts), by file.
func driftTemplates(t *testing.T) map[string]map[string]any {
	out := map[string]map[string]any{}
	for file, tpl := range Templates(t) {
		if strings.HasSuffix(file, "-drift.yaml") {
			out[file] = tpl
		}
	}
	if len(out) == 0 {
		t.Fatal("no drift check templates in stacks/ (npm run stacks)")
	}
	return out
}

// forEachStageStack is forEachStack without the drift checks, whose failed runs mean drift (below).
func forEachStageStack(t *testing.T, run func(s *scenario)) {
	override := StackOverride(t)
	for file, template := range Templates(t) {
		if !strings.HasSuffix(file, "-drift.yaml") {
			t.Run(file, func(t *testing.T) { run(newScenario(t, override, template)) })
		}
	}
}

// Drift within one interval: a drift check whose preview finds changes is Degraded at once, naming drift,
// its Stack, its stage, the command that brings the environment back, and what the CLI said; it stays so
// through PKO's retries and after it stops retrying, until a promotion of the same Freight asks for a run
// (the reconcile request) that passes.
func TestDriftIsDegradedAtOnce(t *testing.T) {
	override := StackOverride(t)
	for file, template := range driftTemplates(t) {
		t.Run(file, func(t *testing.T) {
			s := newScenario(t, override, template)
			meta := template["metadata"].(map[string]any)
			name := meta["name"].(string)
			stage := meta["labels"].(map[string]any)["app.kubernetes.io/instance"].(string)
			env := meta["annotations"].(map[string]any)["platform/environment"].(string)
			if s.kind != "preview" {
				t.Fatalf("%s is not a preview Stack", file)
			}
			s.op.Promote("c1")
			s.op.StartRun("run-1")
			s.expect("the check after the update", "Progressing", "stack is being processed")
			s.op.RunSucceeded("preview")
			s.expect("no drift", "Healthy")
			// An interval later, at the same commit: still Healthy while it runs.
			s.op.tick(time.Hour)
			s.op.StartRun("resync-1")
			s.expect("checking again", "Healthy", "drift check running again")
			s.op.RunFailed("preview", driftMessage)
			drift := []string{"drift: ", name, "of stage " + stage, "program commit c1",
				"npm run rollback -- " + env + " --reconcile", "no changes were expected", "data-versioning", s.pod}
			s.expect("drift found", "Degraded", drift...)
			for attempt := 2; attempt <= maxUpdateFailures+1; attempt++ {
				s.op.StartRun(fmt.Sprintf("resync-%d", attempt))
				s.op.RunFailed("preview", driftMessage)
				s.expect(fmt.Sprintf("retry %d", attempt), "Degraded", drift...)
			}
			if c := s.op.Stack.Status.LastUpdate.Failures; c < maxUpdateFailures {
				t.Fatalf("PKO has not stopped retrying (%d failures)", c)
			}
			// Brought home: the update stage promoted again, the check asked to run (same generation).
			s.op.StartRun("after-reconcile")
			s.expect("checking after the reconcile", "Degraded", "drift: ")
			s.op.RunSucceeded("preview")
			s.expect("reconciled", "Healthy")
		})
	}
}

// A check that met another update of the stack (its own stage's, a preview's) is no drift: retried,
// Progressing, and never the drift message.
func TestADriftCheckThatMetAnotherUpdate(t *testing.T) {
	override := StackOverride(t)
	for file, template := range driftTemplates(t) {
		t.Run(file, func(t *testing.T) {
			s := newScenario(t, override, template)
			s.op.Promote("c1")
			s.op.StartRun("run-1")
			s.op.RunSucceeded("preview")
			s.op.StartRun("resync-1")
			s.op.RunFailed("preview", conflictMessage)
			if h := s.expect("conflict", "Progressing", "preview failed", "PKO retries", conflictMessage); strings.HasPrefix(h.Message, "drift") {
				t.Errorf("a conflict reads as drift: %q", h.Message)
			}
		})
	}
}

// The stages' own Stacks never read as drift, whatever their preview says.
func TestOnlyDriftChecksSayDrift(t *testing.T) {
	forEachStageStack(t, func(s *scenario) {
		s.op.Promote("c1")
		s.op.StartRun("run-1")
		s.op.RunFailed(s.kind, driftMessage)
		if h := s.expect("failed once", "Progressing", "failed 1 of at most 4 times"); strings.HasPrefix(h.Message, "drift") {
			t.Errorf("a stage's own Stack reads as drift: %q", h.Message)
		}
	})
}
