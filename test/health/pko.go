package health

import (
	"fmt"
	"time"
)

// Operator writes a Stack's status the way PKO v2.9.0's Stack reconciler does at each step of a run
// (pulumi-kubernetes-operator v2.9.0 operator/internal/controller/pulumi/stack_controller.go; the line
// of each step is named beside it). The operator cannot be built here (its module is not served), so
// this follows its source step by step; the health check is what runs for real.
type Operator struct {
	Stack *Stack
	Clock time.Time
}

func (o *Operator) status() *StackStatus {
	if o.Stack.Status == nil {
		o.Stack.Status = &StackStatus{}
	}
	return o.Stack.Status
}

func (o *Operator) tick(d time.Duration) time.Time {
	o.Clock = o.Clock.Add(d)
	return o.Clock
}

// Promote is Argo CD syncing a stage branch whose Stack has a new spec.commit: the API server bumps
// metadata.generation; PKO has not seen it yet.
func (o *Operator) Promote(commit string) {
	o.Stack.Generation++
	o.Stack.Commit = commit
}

// RunAgain is Argo CD syncing a stage branch whose Stack changed only its reconcile request (a promotion of
// the same commit): the generation stays; PKO runs the Stack again for it (isSynced L1241-L1247).
func (o *Operator) RunAgain(request string) {
	o.Stack.Request = request
}

// Observe is the start of a reconcile: observedGeneration is written first, whatever follows (L534).
func (o *Operator) Observe() {
	o.status().ObservedGeneration = o.Stack.Generation
}

// WaitForWorkspace: the workspace is created or updated and is not Ready (L963, L992-L1021). A pod whose
// init container (the git fetch) crash-loops or whose image cannot be pulled leaves the Workspace at
// Ready=False/WaitingForReplicas, never Stalled (workspace_controller.go L198-L203), so the Stack stays here.
func (o *Operator) WaitForWorkspace() {
	o.Observe()
	o.status().markReconciling(reasonProcessing, msgProcessingWorkspace, o.tick(time.Second))
}

// WorkspaceStalled: the workspace's `pulumi install` or stack selection failed; the workspace controller
// marks it Stalled (workspace_controller.go L325-L338) and the Stack takes it over (L993-L1015).
func (o *Operator) WorkspaceStalled(reason, msg string) {
	o.status().markStalled(reasonWorkspaceFailed, fmt.Sprintf("%s: %s", reason, msg), o.tick(time.Second))
}

// StartRun creates the Update object (L1022-L1066).
func (o *Operator) StartRun(name string) {
	o.Observe()
	s := o.status()
	s.markReconciling(reasonProcessing, msgProcessingUpdate, o.tick(time.Second))
	s.CurrentUpdate = &CurrentUpdate{Generation: o.Stack.Generation, ReconcileRequest: o.Stack.Request, Name: name, Commit: o.Stack.Commit}
}

// RunFailed absorbs a failed Update (L639-L641, markStackFailed L1113-L1136), then, inside the backoff,
// sets the result (isSynced L1277-L1297, markStackResult L1089-L1110).
func (o *Operator) RunFailed(kind, msg string) {
	s := o.status()
	cur, last := s.CurrentUpdate, s.LastUpdate
	next := &LastUpdate{
		Generation: cur.Generation, ReconcileRequest: cur.ReconcileRequest, Name: cur.Name, Type: kind, State: "failed", Message: msg,
		LastAttemptedCommit: cur.Commit, LastResyncTime: metaTime(o.tick(time.Minute)),
	}
	if last != nil {
		next.LastSuccessfulCommit = last.LastSuccessfulCommit
		if last.Generation == cur.Generation && last.ReconcileRequest == cur.ReconcileRequest {
			next.Failures = last.Failures + 1
		}
	}
	s.LastUpdate, s.CurrentUpdate = next, nil
	switch {
	case next.Failures >= maxUpdateFailures:
		s.markStalled(reasonUpdateFailed,
			fmt.Sprintf("%s failed %d times; not retrying until the spec or source changes", kind, next.Failures), o.Clock)
	case kind == "preview":
		s.markReconciling(reasonPreviewFailed, fmt.Sprintf("preview failed (%d attempt(s))", next.Failures), o.Clock)
	default:
		s.markReconciling(reasonRetry, fmt.Sprintf("%d update failure(s)", next.Failures), o.Clock)
	}
}

// RunSucceeded absorbs a succeeded Update (markStackSucceeded L1139-L1180) and marks the Stack Ready
// (isSynced, markStackResult L1089-L1093).
func (o *Operator) RunSucceeded(kind string) {
	s := o.status()
	cur := s.CurrentUpdate
	s.LastUpdate = &LastUpdate{
		Generation: cur.Generation, ReconcileRequest: cur.ReconcileRequest, Name: cur.Name, Type: kind, State: "succeeded",
		LastAttemptedCommit: cur.Commit, LastSuccessfulCommit: cur.Commit, LastResyncTime: metaTime(o.tick(time.Minute)),
	}
	s.CurrentUpdate = nil
	s.markReady(o.Clock)
}

// Cooldown is how long PKO waits before retrying a run that failed `failures` times before (cooldown, L1357-L1380:
// 10 s, tripled per failure, capped at 24 h unless spec.retryMaxBackoffDurationSeconds says otherwise).
func Cooldown(failures int64) time.Duration {
	d := 10 * time.Second
	for ; failures > 0; failures-- {
		d *= 3
		if d > 24*time.Hour {
			return 24 * time.Hour
		}
	}
	return d
}
