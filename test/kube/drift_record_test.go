package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"infra-change-platform/test/internal/apiserver"
)

// TestOnlyTheSensorWritesADriftRecord applies the routed plan's drift records (empty), the admission policies
// on them and on the Events they are made from, and the EventSource's and the Sensor's Roles to the real
// kube-apiserver: the deploy creates a record only empty and changes no record's data, only the Sensor fills one (Argo Events' patch, or its
// create when one is missing) and only the records the plan names; only PKO records a StackUpdateFailure Event
// in the stacks namespace; the EventSource reads Events only where Kargo and PKO record them.
func TestOnlyTheSensorWritesADriftRecord(t *testing.T) {
	objects, project := routedPlan(t)
	s := apiserver.Shared(t)
	ctx := context.Background()
	in := &installation{server: s}
	var records []*unstructured.Unstructured
	var recordPolicy, eventPolicy, stacks, sensorUser, sourceUser string
	namespaces := map[string]bool{project: true}
	var applied []*unstructured.Unstructured
	for _, o := range objects {
		kind, name := o.GetKind(), o.GetName()
		switch {
		case kind == "ConfigMap" && strings.HasPrefix(name, "drift-"):
			o.SetNamespace(project)
			records = append(records, o)
			continue
		case kind == "ValidatingAdmissionPolicy" || kind == "ValidatingAdmissionPolicyBinding":
			if !strings.Contains(name, "drift") && !strings.Contains(name, "stop-approval-records") {
				continue
			}
			if kind == "ValidatingAdmissionPolicy" && strings.HasSuffix(name, "-drift-records") {
				recordPolicy = name
			}
			if strings.HasSuffix(name, "-drift-check-events") {
				eventPolicy = name
			}
			if kind == "ValidatingAdmissionPolicyBinding" && strings.HasSuffix(name, "-drift-check-events") {
				// Where the drift checks' Stacks, and PKO's Events on them, live.
				stacks, _, _ = unstructured.NestedString(o.Object, "spec", "matchResources", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name")
			}
		case (kind == "Role" || kind == "RoleBinding") && strings.HasPrefix(name, "kargo-events-"):
			namespaces[o.GetNamespace()] = true
			if kind == "RoleBinding" {
				subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				sa := subjects[0].(map[string]any)
				user := "system:serviceaccount:" + sa["namespace"].(string) + ":" + sa["name"].(string)
				if name == "kargo-events-sensor" {
					sensorUser = user
				} else {
					sourceUser = user
				}
			}
		default:
			continue
		}
		applied = append(applied, o)
	}
	if len(records) == 0 || recordPolicy == "" || eventPolicy == "" || stacks == "" || sensorUser == "" || sourceUser == "" {
		t.Fatalf("the routed plan lacks drift records (%d), their policy (%q), the drift Events' (%q, namespace %q), or the Sensor's or the EventSource's RoleBinding (%q, %q)", len(records), recordPolicy, eventPolicy, stacks, sensorUser, sourceUser)
	}
	namespaces[stacks] = true
	for ns := range namespaces {
		if _, err := s.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, o := range applied {
		if _, err := in.apply(ctx, o); err != nil {
			t.Fatalf("%s %s was refused: %v", o.GetKind(), o.GetName(), err)
		}
		t.Cleanup(func() {
			if r, err := in.resource(o); err == nil {
				_ = r.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
			}
		})
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		c := rest.CopyConfig(s.Config)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		return kubernetes.NewForConfigOrDie(c)
	}
	serviceAccount := func(user string) kubernetes.Interface {
		return as(user, "system:serviceaccounts", "system:serviceaccounts:"+strings.Split(user, ":")[2], "system:authenticated")
	}
	sensor, admin := serviceAccount(sensorUser), as("alice@example.com", "system:masters", "system:authenticated")
	withData := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: project}, Data: map[string]string{"stack": "forged", "message": "made up"}}
	}
	untilEnforced(t, recordPolicy, func(i int) error {
		_, err := admin.CoreV1().ConfigMaps(project).Create(ctx, withData(fmt.Sprintf("drift-probe-%d", i)), metav1.CreateOptions{})
		return err
	})
	refused := func(what string, err error, by string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s was admitted", what)
		} else if !strings.Contains(err.Error(), by) {
			t.Errorf("%s was refused, but not by %s: %v", what, by, err)
		}
	}
	// The deploy creates each record empty.
	for _, o := range records {
		if _, err := in.apply(ctx, o); err != nil {
			t.Fatalf("the plan's empty drift record %s was refused: %v", o.GetName(), err)
		}
		t.Cleanup(func() {
			_ = s.Clientset.CoreV1().ConfigMaps(project).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
		})
	}
	patch := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"at":"2026-11-28T11:30:00Z","stack":"s","stage":"x","message":"drift"}}`)
	patchOf := func(name string) []byte { return []byte(fmt.Sprintf(string(patch), name)) }
	for _, o := range records {
		// Argo Events' patch: a get, then a merge patch (argo-events v1.9.10 standard-k8s Execute).
		if _, err := sensor.CoreV1().ConfigMaps(project).Get(ctx, o.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("the Sensor may not read %s: %v", o.GetName(), err)
		}
		got, err := sensor.CoreV1().ConfigMaps(project).Patch(ctx, o.GetName(), types.MergePatchType, patchOf(o.GetName()), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("the Sensor's patch of %s was refused: %v", o.GetName(), err)
		} else if got.Data["message"] != "drift" {
			t.Errorf("%s after the Sensor's patch: %v", o.GetName(), got.Data)
		}
		_, err = admin.CoreV1().ConfigMaps(project).Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"data":{"message":"nothing happened"}}`), metav1.PatchOptions{})
		refused("an administrator's change of "+o.GetName(), err, recordPolicy)
		// A deploy applying it again changes its labels at most, never the Sensor's data.
		if _, err := admin.CoreV1().ConfigMaps(project).Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"labels":{"deployed":"again"}}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("a change of %s that leaves its data was refused: %v", o.GetName(), err)
		}
	}
	refused("an administrator's record with data", func() error {
		_, err := admin.CoreV1().ConfigMaps(project).Create(ctx, withData("drift-forged"), metav1.CreateOptions{})
		return err
	}(), recordPolicy)
	// Argo Events creates a record that is missing; the Sensor's Role reads and patches none but the plan's.
	created := "drift-" + strings.TrimPrefix(records[0].GetName(), "drift-") + "-recreated"
	if _, err := sensor.CoreV1().ConfigMaps(project).Create(ctx, withData(created), metav1.CreateOptions{}); err != nil {
		t.Errorf("the Sensor's record %s (Argo Events creating a missing one) was refused: %v", created, err)
	}
	if _, err := sensor.CoreV1().ConfigMaps(project).Patch(ctx, created, types.MergePatchType, patchOf(created), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the Sensor may patch %s, a ConfigMap the plan does not name: %v", created, err)
	}
	driftEvents(t, stacks, eventPolicy, as)
	sourceReaches(t, serviceAccount(sourceUser), project, stacks)
}

// driftEvents: in the stacks namespace, only a ServiceAccount of PKO's namespace records a StackUpdateFailure
// Event, through either Event API; other Events are not the policy's business.
func driftEvents(t *testing.T, stacks, policy string, as func(string, ...string) kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	admin := as("alice@example.com", "system:masters", "system:authenticated")
	pko := as("system:serviceaccount:pulumi-kubernetes-operator:pulumi-kubernetes-operator", "system:masters", "system:authenticated")
	event := func(name, reason string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: stacks},
			InvolvedObject: corev1.ObjectReference{Kind: "Stack", Namespace: stacks, Name: "x-drift", APIVersion: "pulumi.com/v1"},
			Reason:         reason, Message: "Failed to update stack: drift", Type: corev1.EventTypeWarning, Count: 1,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "stack-controller"},
		}
	}
	untilEnforced(t, policy, func(i int) error {
		_, err := admin.CoreV1().Events(stacks).Create(ctx, event(fmt.Sprintf("probe.%d", i), "StackUpdateFailure"), metav1.CreateOptions{})
		return err
	})
	if _, err := pko.CoreV1().Events(stacks).Create(ctx, event("pko.1", "StackUpdateFailure"), metav1.CreateOptions{}); err != nil {
		t.Errorf("PKO's StackUpdateFailure Event was refused: %v", err)
	}
	if _, err := admin.CoreV1().Events(stacks).Create(ctx, event("other.1", "StackCreated"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an administrator's other Event was refused: %v", err)
	}
	refusedThroughEventsAPI(t, admin, policy, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "forged.2", Namespace: stacks},
		EventTime:  metav1.NowMicro(), ReportingController: "stack-controller", ReportingInstance: "x", Action: "Update",
		Reason: "StackUpdateFailure", Regarding: corev1.ObjectReference{Kind: "Stack", Namespace: stacks, Name: "x-drift"}, Type: corev1.EventTypeWarning,
	})
}

// sourceReaches: the EventSource lists and watches Events in the project's and the stacks namespace, and
// nowhere else (SubjectAccessReview, as the API server's authorizer answers it).
func sourceReaches(t *testing.T, source kubernetes.Interface, project, stacks string) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct {
		namespace, verb, resource string
		want                      bool
	}{
		{project, "watch", "events", true}, {stacks, "list", "events", true}, {stacks, "watch", "events", true},
		{"default", "list", "events", false}, {"", "watch", "events", false}, {stacks, "list", "configmaps", false},
		{stacks, "create", "events", false},
	} {
		r, err := source.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.namespace, Verb: c.verb, Resource: c.resource}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("the EventSource may %s %s in %q: %v, want %v", c.verb, c.resource, c.namespace, r.Status.Allowed, c.want)
		}
	}
}
