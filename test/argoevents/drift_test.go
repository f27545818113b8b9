package argoevents

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/argoproj/argo-events/pkg/apis/events/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// driftMessage is the Update's message PKO v2.9.0 leaves when a drift check's preview proposes changes (the
// agent's "preview failed: <Automation API error>", agent/pkg/server/server.go Preview; the CLI's
// "no changes were expected" on stderr, the drifted resource on stdout), with a hostile resource name.
const driftMessage = "preview failed: failed to run preview: exit status 7\ncode: 7\n" +
	"stdout: Previewing update (dev):\n  ~ aws:s3/bucketVersioningV2:BucketVersioningV2 " + hostile + " update [diff: ~versioningConfiguration]\n" +
	"stderr: error: no changes were expected for preview but changes were proposed\n"

// stackEvent is a Kubernetes Event as PKO v2.9.0's stack controller records one on a Stack
// (operator/internal/controller/pulumi/utils.go emitEvent: client-go's Eventf with the recorder
// "stack-controller", operator/cmd/main.go; reasons in operator/api/pulumi/v1/events.go), in the Stack's
// namespace, named <object>.<hex time> (client-go tools/record/event.go makeEvent).
func stackEvent(namespace, stack, reason, eventType, message string, at time.Time) corev1.Event {
	now := metav1.NewTime(at)
	return corev1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s.%x", stack, at.UnixNano()), Namespace: namespace, CreationTimestamp: now,
		},
		InvolvedObject: corev1.ObjectReference{Kind: "Stack", Namespace: namespace, Name: stack, APIVersion: "pulumi.com/v1"},
		Reason:         reason,
		Message:        message,
		Source:         corev1.EventSource{Component: "stack-controller"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           eventType,
	}
}

// checkDriftWatch: with drift checks, the EventSource watches the drift checks' Events where PKO records them, added or counted
// again (client-go's recorder counts a repeat on the existing Event).
func checkDriftWatch(t *testing.T, p *plan, watches map[string]v1alpha1.ResourceEventSource) {
	t.Helper()
	if len(p.DriftChecks) == 0 {
		return
	}
	namespaces := map[string]bool{}
	for _, d := range p.DriftChecks {
		namespaces[d.Namespace] = true
	}
	found := false
	for name, w := range watches {
		if name == "kargo" {
			continue
		}
		found = true
		if !namespaces[w.Namespace] || len(namespaces) != 1 || w.Resource != "events" || w.Version != "v1" || w.Group != "" ||
			!slices.Equal(w.EventTypes, []v1alpha1.ResourceEventType{v1alpha1.ADD, v1alpha1.UPDATE}) || w.Filter == nil || !w.Filter.AfterStart {
			t.Fatalf("the EventSource's %s must watch Events added or updated in the drift checks' namespace %v since it started: %+v", name, namespaces, w)
		}
	}
	if !found {
		t.Fatal("the EventSource does not watch the drift checks' Events")
	}
}

func TestADriftChecksFailureMatchesTheDriftDependencyOnly(t *testing.T) {
	for _, r := range []router{routerOf(t, planWith(t, "", "", ""), false), plannedRouter(t)} {
		p := r.p
		if len(p.DriftChecks) == 0 {
			t.Fatal("the pipeline has no drift check: nothing proves the drift record")
		}
		at := time.Date(2026, 11, 28, 11, 30, 0, 0, time.UTC)
		check := func(what string, e corev1.Event, want ...string) {
			t.Helper()
			if got := matching(t, r.sensor, asArgoEvent(t, e)); !slices.Equal(got, want) {
				t.Errorf("%s: matches %v, want %v", what, got, want)
			}
		}
		for _, d := range p.DriftChecks {
			failed := "Failed to update stack: " + driftMessage
			check("drift found by "+d.Stack, stackEvent(d.Namespace, d.Stack, "StackUpdateFailure", "Warning", failed, at), "drift-found")
			check("the stage's own Stack failing", stackEvent(d.Namespace, d.Own, "StackUpdateFailure", "Warning", failed, at))
			check("a Stack named like "+d.Stack, stackEvent(d.Namespace, d.Stack+"x", "StackUpdateFailure", "Warning", failed, at))
			check("a Stack named like "+d.Stack+" before", stackEvent(d.Namespace, "x"+d.Stack, "StackUpdateFailure", "Warning", failed, at))
			check(d.Stack+" in another namespace", stackEvent(d.Namespace+"x", d.Stack, "StackUpdateFailure", "Warning", failed, at))
			// PKO's answer to a concurrent update: the check did not run (agent/pkg/server/pulumi_errors.go).
			check(d.Stack+" meeting another update", stackEvent(d.Namespace, d.Stack, "StackUpdateFailure", "Warning", "Failed to update stack: Another update is currently in progress", at))
			for _, reason := range []string{"StackCreated", "StackUpdateDetected", "StackConfigInvalid", "StackUpdateConflictDetected", "XStackUpdateFailure", "StackUpdateFailureX"} {
				check(reason+" of "+d.Stack, stackEvent(d.Namespace, d.Stack, reason, "Normal", failed, at))
			}
			other := stackEvent(d.Namespace, d.Stack, "StackUpdateFailure", "Warning", failed, at)
			other.InvolvedObject.Kind = "Workspace"
			check("a Workspace named "+d.Stack, other)
		}
	}
}

// TestADriftChecksFailureIsRecordedByTheSensor runs the Sensor's k8s trigger against the stage's drift record
// as the kargo plan creates it (empty): the record holds the detection, and a later one replaces it.
func TestADriftChecksFailureIsRecordedByTheSensor(t *testing.T) {
	for _, r := range []router{routerOf(t, planWith(t, "", "", ""), false), plannedRouter(t)} {
		p := r.p
		if len(p.DriftChecks) == 0 {
			t.Fatal("the pipeline has no drift check: nothing proves the drift record")
		}
		for _, d := range p.DriftChecks {
			planned := object(p.Kargo, "ConfigMap", "drift-"+d.Stage)
			if planned == nil {
				t.Fatalf("stage %s: the kargo plan creates no ConfigMap drift-%s", d.Stage, d.Stage)
			}
			var empty corev1.ConfigMap
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(planned, &empty); err != nil {
				t.Fatal(err)
			}
			empty.Namespace = p.Project
			scheme := runtime.NewScheme()
			_ = corev1.AddToScheme(scheme)
			dyn := dynamicfake.NewSimpleDynamicClient(scheme, &empty)
			record := func(e corev1.Event) *corev1.ConfigMap {
				t.Helper()
				tr, evs := r.trigger(t, "record-drift", "drift-found", asArgoEvent(t, e))
				if tr.Template.K8s.Operation != v1alpha1.Patch {
					t.Fatalf("the drift record's trigger %s must patch the existing record", tr.Template.K8s.Operation)
				}
				list := r.runK8sTrigger(t, tr, evs, dyn, p.Project)
				if len(list.Items) != 1 || list.Items[0].GetName() != "drift-"+d.Stage {
					t.Fatalf("stage %s: the Sensor left %v in %s, want only drift-%s", d.Stage, names(list.Items), p.Project, d.Stage)
				}
				var cm corev1.ConfigMap
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[0].Object, &cm); err != nil {
					t.Fatal(err)
				}
				return &cm
			}
			first := time.Date(2026, 11, 28, 11, 30, 0, 0, time.UTC)
			message := "Failed to update stack: " + driftMessage
			cm := record(stackEvent(d.Namespace, d.Stack, "StackUpdateFailure", "Warning", message, first))
			equalJSON(t, toAny(cm.Data), map[string]any{"at": "2026-11-28T11:30:00Z", "stack": d.Stack, "stage": d.Stage, "message": message})
			// Found again after a reconcile: PKO's recorder counts it on the same Event (an UPDATE), its
			// lastTimestamp the new one.
			again := stackEvent(d.Namespace, d.Stack, "StackUpdateFailure", "Warning", "Failed to update stack: other drift", first)
			again.LastTimestamp, again.Count = metav1.NewTime(first.Add(2*time.Hour)), 2
			cm = record(again)
			equalJSON(t, toAny(cm.Data), map[string]any{"at": "2026-11-28T13:30:00Z", "stack": d.Stack, "stage": d.Stage, "message": "Failed to update stack: other drift"})
		}
	}
}

func names(items []unstructured.Unstructured) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.GetName())
	}
	return out
}
