package health

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Each stage's Stack, through what PKO v2.9.0 writes on the way, answers with the health Argo CD v3.4.4
// reports, and so the health Kargo sees for the stage (Progressing holds verification back, Degraded makes
// the stage Unhealthy: akuity/kargo v1.11.2 pkg/health/checker/builtin/argocd.go, stageHealthForAppHealth).
type scenario struct {
	t        *testing.T
	override Override
	op       *Operator
	kind     string // "up", or "preview" for a preview stage
	pod      string
	// driftCheck: an update stage's drift check (lib/pipeline/drift.ts), whose runs expect no changes.
	driftCheck bool
}

func newScenario(t *testing.T, override Override, template map[string]any) *scenario {
	spec := template["spec"].(map[string]any)
	meta := template["metadata"].(map[string]any)
	kind := "up"
	if spec["preview"] == true {
		kind = "preview"
	}
	stack := &Stack{Template: template, Generation: 1}
	update, _ := spec["updateTemplate"].(map[string]any)
	updateSpec, _ := update["spec"].(map[string]any)
	return &scenario{
		t: t, override: override, kind: kind, driftCheck: kind == "preview" && updateSpec["expectNoChanges"] == true,
		op:  &Operator{Stack: stack, Clock: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)},
		pod: fmt.Sprintf("%s/%s-workspace-0", meta["namespace"], meta["name"]),
	}
}

func (s *scenario) health() Health {
	s.t.Helper()
	h, err := Run(s.override.HealthLua, s.op.Stack.Object(s.t), s.override.UseOpenLibs)
	if err != nil {
		s.t.Fatalf("the health check failed on %s: %v", s.op.Stack.Status, err)
	}
	return h
}

// expect checks the status, and that the message holds each of the parts.
func (s *scenario) expect(step, status string, parts ...string) Health {
	s.t.Helper()
	h := s.health()
	if h.Status != status {
		s.t.Fatalf("%s: health %s (%q), want %s; stack status %s", step, h.Status, h.Message, status, s.op.Stack.Status)
	}
	for _, p := range parts {
		if !strings.Contains(h.Message, p) {
			s.t.Fatalf("%s: message %q does not say %q", step, h.Message, p)
		}
	}
	return h
}

func forEachStack(t *testing.T, run func(s *scenario)) {
	override := StackOverride(t)
	for file, template := range Templates(t) {
		t.Run(file, func(t *testing.T) { run(newScenario(t, override, template)) })
	}
}

func TestSucceeded(t *testing.T) {
	forEachStack(t, func(s *scenario) {
		s.expect("a Stack PKO has not seen", "Progressing", "observe generation 1")
		s.op.Promote("c1")
		s.expect("promoted, not observed", "Progressing", "observe generation 2")
		s.op.WaitForWorkspace()
		s.expect("workspace starting", "Progressing", "waiting for workspace readiness", s.pod)
		s.op.StartRun("run-1")
		s.expect("running", "Progressing", "stack is being processed", s.pod)
		s.op.RunSucceeded(s.kind)
		s.expect("succeeded", "Healthy")
	})
}

// The next Freight is never Healthy on the previous run's Ready=True.
func TestAGenerationNotYetObserved(t *testing.T) {
	forEachStack(t, func(s *scenario) {
		s.op.Promote("c1")
		s.op.StartRun("run-1")
		s.op.RunSucceeded(s.kind)
		s.op.Promote("c2")
		s.expect("Ready=True from generation 2, spec at 3", "Progressing", "observe generation 3")
		s.op.Observe()
		s.expect("observed, nothing written yet", "Progressing", "finish generation 3")
	})
}

// A promotion of the commit the Stack already ran (a rollback's reconcile, drift brought home) changes only
// PKO's reconcile request: never Healthy on the previous run, until PKO ran the Stack again for it.
func TestTheSameCommitPromotedAgain(t *testing.T) {
	forEachStack(t, func(s *scenario) {
		s.op.Promote("c1")
		s.op.RunAgain("stage.01-first")
		s.op.StartRun("run-1")
		s.op.RunSucceeded(s.kind)
		s.expect("first promotion succeeded", "Healthy")
		s.op.RunAgain("stage.02-again")
		s.expect("promoted again, not yet run", "Progressing", "reconcile request stage.02-again")
		s.op.StartRun("run-2")
		s.expect("running again", "Progressing", "stack is being processed")
		s.op.RunFailed(s.kind, "error: drift")
		// A drift check's failed run is drift, Degraded at once (drift_test.go); any other is retried.
		if s.driftCheck {
			s.expect("the check again failed", "Degraded", "drift:", "error: drift")
		} else {
			s.expect("the run again failed", "Progressing", "failed 1 of at most 4 times", "error: drift")
		}
		s.op.StartRun("run-3")
		s.op.RunSucceeded(s.kind)
		s.expect("the run again succeeded", "Healthy")
	})
}

// A failing run is retried, Progressing with its error, until PKO gives up after the 4th attempt: then, and
// only then, Degraded.
func TestFailedOnceRetryingThenPastTheRetryLimit(t *testing.T) {
	// A drift check's failed run is drift, Degraded at once: drift_test.go.
	forEachStageStack(t, func(s *scenario) {
		s.op.Promote("c1")
		attempts, backoff := 0, time.Duration(0)
		for {
			attempts++
			s.op.StartRun(fmt.Sprintf("run-%d", attempts))
			s.op.RunFailed(s.kind, "error: AccessDenied")
			if s.health().Status != "Progressing" {
				break
			}
			s.expect(fmt.Sprintf("attempt %d failed", attempts), "Progressing",
				fmt.Sprintf("%s failed %d of at most 4 times for generation 2", s.kind, attempts), "error: AccessDenied", s.pod)
			backoff += Cooldown(s.op.Stack.Status.LastUpdate.Failures)
			if attempts > 10 {
				t.Fatal("never Degraded")
			}
		}
		s.expect("past the retry limit", "Degraded",
			fmt.Sprintf("UpdateFailed: %s failed %d times", s.kind, maxUpdateFailures), "error: AccessDenied", s.pod, "program commit c1")
		if attempts != maxUpdateFailures+1 {
			t.Fatalf("Degraded after %d attempts, PKO makes %d", attempts, maxUpdateFailures+1)
		}
		if backoff != 130*time.Second {
			t.Fatalf("PKO waits %v between the attempts in all; the README says 2 min 10 s", backoff)
		}
		// The next Freight starts over.
		s.op.Promote("c2")
		s.expect("next Freight", "Progressing", "observe generation 3")
		s.op.StartRun("run-next")
		s.op.RunSucceeded(s.kind)
		s.expect("next Freight succeeded", "Healthy")
	})
}

func TestARetryThatSucceeds(t *testing.T) {
	// A drift check's failed run is drift, Degraded at once: drift_test.go.
	forEachStageStack(t, func(s *scenario) {
		s.op.Promote("c1")
		s.op.StartRun("run-1")
		s.op.RunFailed(s.kind, "error: the stack is currently locked")
		s.op.StartRun("run-2")
		s.expect("retrying", "Progressing", "failed 1 of at most 4 times", "stack is currently locked")
		s.op.RunSucceeded(s.kind)
		s.expect("second attempt succeeded", "Healthy")
	})
}

// A git fetch that fails (bad token, a commit that does not exist) or an image that cannot be pulled: the
// workspace pod never starts and PKO says only that it waits. Progressing for ever, with since when and the
// pod to look at.
func TestAGitFetchThatFails(t *testing.T) {
	forEachStack(t, func(s *scenario) {
		s.op.Promote("0000000000000000000000000000000000000000")
		s.op.WaitForWorkspace()
		since := s.op.Clock.Format(time.RFC3339)
		first := s.expect("fetch failing", "Progressing", "waiting for workspace readiness since "+since, s.pod)
		s.op.tick(6 * time.Hour)
		if later := s.expect("six hours later", "Progressing"); later != first {
			t.Fatalf("PKO writes nothing more while the pod crash-loops, yet the health changed: %q", later.Message)
		}
	})
}

// A workspace whose `pulumi install` fails is Stalled and stays so (its pod is kept, and retried only
// when deleted or the spec changes).
func TestAWorkspaceThatFailsToInstall(t *testing.T) {
	forEachStack(t, func(s *scenario) {
		s.op.Promote("c1")
		s.op.WaitForWorkspace()
		s.op.WorkspaceStalled("InstallationFailed", "exit status 1")
		s.expect("install failed", "Degraded", "WorkspaceFailed: InstallationFailed: exit status 1", s.pod)
	})
}

func TestStalledOnAnInvalidSpec(t *testing.T) {
	forEachStack(t, func(s *scenario) {
		s.op.Promote("c1")
		s.op.Observe()
		s.op.status().markStalled(reasonSpecInvalid, `secrets "git-credentials" not found`, s.op.tick(time.Second))
		s.expect("stalled", "Degraded", `SpecInvalid: secrets "git-credentials" not found`)
	})
}
