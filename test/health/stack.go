package health

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// Templates is the Stack template of every environment stage, as `npm run stacks` writes it to stacks/
// (test/kargo.test.ts fails when those files are not what kargo/pipeline.ts derives).
func Templates(t testing.TB) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(plan.RepoRoot(), "stacks", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Stack templates in stacks/: %v", err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if obj["kind"] != "Stack" {
			t.Fatalf("%s: kind %v, want Stack", f, obj["kind"])
		}
		out[filepath.Base(f)] = obj
	}
	return out
}

// Stack is one Stack as the API server holds it and Argo CD's cache hands it to the health check.
type Stack struct {
	Template   map[string]any
	Generation int64
	Commit     string
	// Request is PKO's reconcile request annotation, the promotion's name (the template's, empty, until set).
	Request string
	Status  *StackStatus
}

// StackStatus is a Stack's status in the shape PKO v2.9.0 writes it (operator/api/pulumi/v1/stack_types.go
// StackStatus; operator/api/pulumi/shared/stack_types.go StackUpdateState and CurrentStackUpdate).
type StackStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	LastUpdate         *LastUpdate        `json:"lastUpdate,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	CurrentUpdate      *CurrentUpdate     `json:"currentUpdate,omitempty"`
}

type LastUpdate struct {
	Generation           int64       `json:"generation,omitempty"`
	Name                 string      `json:"name,omitempty"`
	Type                 string      `json:"type,omitempty"`
	State                string      `json:"state,omitempty"`
	Message              string      `json:"message,omitempty"`
	LastAttemptedCommit  string      `json:"lastAttemptedCommit,omitempty"`
	LastSuccessfulCommit string      `json:"lastSuccessfulCommit,omitempty"`
	LastResyncTime       metav1.Time `json:"lastResyncTime,omitempty"`
	Failures             int64       `json:"failures,omitempty"`
	ReconcileRequest     string      `json:"reconcileRequest,omitempty"`
}

type CurrentUpdate struct {
	Generation       int64  `json:"generation,omitempty"`
	ReconcileRequest string `json:"reconcileRequest,omitempty"`
	Name             string `json:"name,omitempty"`
	Commit           string `json:"commit,omitempty"`
}

// reconcileRequest is the annotation PKO v2.9.0 reads as a request to run a Stack again
// (operator/api/pulumi/shared/stack_types.go ReconcileRequestAnnotation).
const reconcileRequest = "pulumi.com/reconciliation-request"

// Object is the Stack as Argo CD's cluster cache holds it: decoded by the API machinery's unstructured
// JSON decoder, so integers are int64, as in the controller.
func (s Stack) Object(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	obj := deepCopy(t, s.Template)
	meta := obj["metadata"].(map[string]any)
	meta["generation"] = s.Generation
	if s.Request != "" {
		annotations, _ := meta["annotations"].(map[string]any)
		if annotations == nil {
			annotations = map[string]any{}
		}
		annotations[reconcileRequest] = s.Request
		meta["annotations"] = annotations
	}
	obj["spec"].(map[string]any)["commit"] = s.Commit
	if s.Status != nil {
		obj["status"] = s.Status
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

func deepCopy(t testing.TB, in map[string]any) map[string]any {
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The condition types and reasons of PKO v2.9.0 (operator/api/pulumi/v1/stack_types.go).
const (
	ready       = "Ready"
	stalled     = "Stalled"
	reconciling = "Reconciling"

	reasonProcessing       = "StackProcessing"
	msgProcessingWorkspace = "waiting for workspace readiness"
	msgProcessingUpdate    = "stack is being processed"
	reasonRetry            = "RetryingAfterFailure"
	reasonPreviewFailed    = "PreviewFailed"
	reasonSpecInvalid      = "SpecInvalid"
	reasonWorkspaceFailed  = "WorkspaceFailed"
	reasonUpdateFailed     = "UpdateFailed"
)

// maxUpdateFailures is PKO v2.9.0's retry limit (stack_controller.go, maxUpdateFailures): markStackFailed
// counts failures from 0 at a generation's first failure, markStackResult stalls at 3, so a failing run
// is attempted 4 times.
const maxUpdateFailures = 3

// The ready protocol's three transitions, as PKO's StackStatus methods set them
// (operator/api/pulumi/v1/stack_types.go MarkReconcilingCondition, MarkStalledCondition,
// MarkReadyCondition), through the same apimachinery helpers.
func (s *StackStatus) markReconciling(reason, msg string, at time.Time) {
	apimeta.RemoveStatusCondition(&s.Conditions, stalled)
	s.set(ready, metav1.ConditionFalse, "NotReadyInProgress", "reconciliation is in progress", at)
	s.set(reconciling, metav1.ConditionTrue, reason, msg, at)
}

func (s *StackStatus) markStalled(reason, msg string, at time.Time) {
	apimeta.RemoveStatusCondition(&s.Conditions, reconciling)
	s.set(ready, metav1.ConditionFalse, "NotReadyStalled", "reconciliation is stalled", at)
	s.set(stalled, metav1.ConditionTrue, reason, msg, at)
}

func (s *StackStatus) markReady(at time.Time) {
	apimeta.RemoveStatusCondition(&s.Conditions, reconciling)
	apimeta.RemoveStatusCondition(&s.Conditions, stalled)
	s.set(ready, metav1.ConditionTrue, "ProcessingCompleted", "the stack has been processed and is up to date", at)
}

func (s *StackStatus) set(kind string, status metav1.ConditionStatus, reason, msg string, at time.Time) {
	apimeta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type: kind, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at),
	})
}

func (s *StackStatus) String() string {
	raw, _ := json.Marshal(s)
	return fmt.Sprint(string(raw))
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }
