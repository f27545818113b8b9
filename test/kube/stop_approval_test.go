package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"infra-change-platform/test/internal/apiserver"
	"infra-change-platform/test/internal/plan"
)

// routedPlan is the kargo project planned over the default cluster-setup, no notification destination (the
// plan test/argoevents/plan.ts prints): the objects Argo Events' router adds, which record stop approvals
// with or without one, and the project's name.
func routedPlan(t *testing.T) ([]*unstructured.Unstructured, string) {
	t.Helper()
	cmd := exec.Command(plan.Node(), "--import", "tsx", "test/argoevents/plan.ts", "", "", "")
	cmd.Dir = plan.RepoRoot()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/argoevents/plan.ts: %v\n%s", err, stderr.String())
	}
	var out struct {
		Kargo   []map[string]any `json:"kargo"`
		Project string           `json:"project"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	var objects []*unstructured.Unstructured
	for _, o := range out.Kargo {
		objects = append(objects, &unstructured.Unstructured{Object: o})
	}
	return objects, out.Project
}

// TestOnlyTheSensorRecordsAStopApproval applies the routed plan's admission policy on the approval records,
// and the Sensor's Role and RoleBinding, to the real kube-apiserver, then asks it as Argo Events' Sensor and
// as a cluster administrator: only the Sensor creates a record (immutable), nobody changes one, the Sensor
// creates nothing else, and only Kargo records the FreightApproved Event a record is made from.
func TestOnlyTheSensorRecordsAStopApproval(t *testing.T) {
	objects, project := routedPlan(t)
	s := apiserver.Shared(t)
	ctx := context.Background()
	if _, err := s.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	in := &installation{server: s}
	var sensorUser, policy, eventPolicy string
	var recorders []string
	for _, o := range objects {
		kind := o.GetKind()
		isPolicy := (kind == "ValidatingAdmissionPolicy" || kind == "ValidatingAdmissionPolicyBinding") && (strings.Contains(o.GetName(), "stop-approval") || strings.Contains(o.GetName(), "freight-approved"))
		isSensorRBAC := (kind == "Role" || kind == "RoleBinding") && o.GetName() == "kargo-events-sensor"
		if !isPolicy && !isSensorRBAC {
			continue
		}
		if kind == "RoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			sa := subjects[0].(map[string]any)
			sensorUser = "system:serviceaccount:" + sa["namespace"].(string) + ":" + sa["name"].(string)
		}
		if kind == "ValidatingAdmissionPolicy" && strings.Contains(o.GetName(), "stop-approval") {
			policy = o.GetName()
		}
		if kind == "ValidatingAdmissionPolicy" && strings.Contains(o.GetName(), "freight-approved") {
			eventPolicy = o.GetName()
			validations, _, _ := unstructured.NestedSlice(o.Object, "spec", "validations")
			expression, _, _ := unstructured.NestedString(validations[0].(map[string]any), "expression")
			for _, m := range regexp.MustCompile(`"(system:serviceaccount:[^"]+)"`).FindAllStringSubmatch(expression, -1) {
				recorders = append(recorders, m[1])
			}
		}
		if _, err := in.apply(ctx, o); err != nil {
			t.Fatalf("%s %s was refused: %v", kind, o.GetName(), err)
		}
		// The server is shared by the package's tests: none of them should meet these afterwards.
		t.Cleanup(func() {
			if r, err := in.resource(o); err == nil {
				_ = r.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
			}
		})
	}
	if sensorUser == "" || policy == "" || eventPolicy == "" || len(recorders) == 0 {
		t.Fatalf("the routed plan lacks the Sensor's RoleBinding (%q), the records' policy (%q) or the approval Events' (%q, recorders %v)", sensorUser, policy, eventPolicy, recorders)
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		c := rest.CopyConfig(s.Config)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
		return kubernetes.NewForConfigOrDie(c)
	}
	sensor := as(sensorUser, "system:serviceaccounts", "system:serviceaccounts:"+strings.Split(sensorUser, ":")[2], "system:authenticated")
	admin := as("alice@example.com", "system:masters", "system:authenticated")
	immutable := true
	record := func(name, generateName string, imm *bool) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: generateName, Namespace: project},
			Immutable:  imm,
			Data:       map[string]string{"by": "email:alice@example.com", "at": "2026-11-27T14:24:07Z", "stage": "s", "freight": "f"},
		}
	}
	create := func(c kubernetes.Interface, cm *corev1.ConfigMap) error {
		_, err := c.CoreV1().ConfigMaps(project).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	// The policy is enforced once the API server has read it: until then an administrator's record passes.
	untilEnforced(t, policy, func(i int) error {
		return create(admin, record("approval-probe-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "", &immutable))
	})
	refused := func(what string, err error, by string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s was admitted", what)
		} else if !strings.Contains(err.Error(), by) {
			t.Errorf("%s was refused, but not by %s: %v", what, by, err)
		}
	}
	name := "approval-f0e1d2c3b4a5968778695a4b3c2d1e0f12345678-dev-bucket"
	if err := create(sensor, record(name, "", &immutable)); err != nil {
		t.Fatalf("the Sensor's record was refused: %v", err)
	}
	refused("the Sensor's record that is not immutable", create(sensor, record("approval-mutable", "", nil)), policy)
	refused("the Sensor's ConfigMap that is not a record", create(sensor, record("settings", "", nil)), policy)
	refused("an administrator's record", create(admin, record("approval-forged", "", &immutable)), policy)
	refused("an administrator's record with a generated name", create(admin, record("", "approval-", &immutable)), policy)
	other := as("system:serviceaccount:kargo:kargo-controller", "system:masters", "system:authenticated")
	refused("Kargo's controller's record", create(other, record("approval-by-kargo", "", &immutable)), policy)
	// The Sensor may not update at all (its Role), an administrator may not change a record (the policy).
	for who, c := range map[string]kubernetes.Interface{"the Sensor": sensor, "an administrator": admin} {
		cm, err := admin.CoreV1().ConfigMaps(project).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels = map[string]string{"forged": "true"}
		_, err = c.CoreV1().ConfigMaps(project).Update(ctx, cm, metav1.UpdateOptions{})
		by := policy
		if c == sensor {
			by = "cannot update resource"
		}
		refused(who+"'s change of a record", err, by)
	}
	if err := create(admin, record("settings", "", nil)); err != nil {
		t.Errorf("an administrator's ordinary ConfigMap was refused: %v", err)
	}
	approvedEvents(t, project, eventPolicy, recorders, as)
	if _, err := sensor.CoreV1().ConfigMaps("default").Create(ctx, record("approval-elsewhere", "", &immutable), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the Sensor may create ConfigMaps outside project %s: %v", project, err)
	}
}

// approvedEvents: in the project's namespace, only Kargo's components record a FreightApproved Event, through
// either Event API; anyone else's is refused by the policy, and other Events are not its business.
func approvedEvents(t *testing.T, project, policy string, recorders []string, as func(string, ...string) kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	admin := as("alice@example.com", "system:masters", "system:authenticated")
	event := func(name, reason string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: project, Annotations: map[string]string{"event.kargo.akuity.io/actor": "email:mallory@example.com", "event.kargo.akuity.io/stage-name": "s"}},
			InvolvedObject: corev1.ObjectReference{Kind: "Freight", Namespace: project, Name: "f", APIVersion: "kargo.akuity.io/v1alpha1"},
			Reason:         reason, Message: "Freight approved", Type: corev1.EventTypeNormal, Count: 1,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "kargo-api"},
		}
	}
	untilEnforced(t, policy, func(i int) error {
		_, err := admin.CoreV1().Events(project).Create(ctx, event(fmt.Sprintf("probe.%d", i), "FreightApproved"), metav1.CreateOptions{})
		return err
	})
	for i, r := range recorders {
		if _, err := as(r, "system:masters", "system:authenticated").CoreV1().Events(project).Create(ctx, event(fmt.Sprintf("kargo.%d", i), "FreightApproved"), metav1.CreateOptions{}); err != nil {
			t.Errorf("%s's FreightApproved Event was refused: %v", r, err)
		}
	}
	if _, err := admin.CoreV1().Events(project).Create(ctx, event("other.1", "PromotionSucceeded"), metav1.CreateOptions{}); err != nil {
		t.Errorf("an administrator's other Event was refused: %v", err)
	}
	refusedThroughEventsAPI(t, admin, policy, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "forged.2", Namespace: project},
		EventTime:  metav1.NowMicro(), ReportingController: "kargo-api", ReportingInstance: "x", Action: "Approve",
		Reason: "FreightApproved", Regarding: corev1.ObjectReference{Kind: "Freight", Namespace: project, Name: "f"}, Type: corev1.EventTypeNormal,
	})
}

// refusedThroughEventsAPI: the administrator's Event, written through events.k8s.io (the other API that
// stores Events), is refused by the policy named.
func refusedThroughEventsAPI(t *testing.T, admin kubernetes.Interface, policy string, e *eventsv1.Event) {
	t.Helper()
	_, err := admin.EventsV1().Events(e.Namespace).Create(context.Background(), e, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), policy) {
		t.Errorf("an administrator's %s Event through events.k8s.io was not refused by %s: %v", e.Reason, policy, err)
	}
}
