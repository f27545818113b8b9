package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"infra-change-platform/test/internal/apiserver"
	"infra-change-platform/test/internal/plan"
)

// routedPlan is the kargo project planned over a cluster-setup with a notification destination (the plan
// test/argoevents/plan.ts prints): the objects Argo Events' router adds, and the project's name.
func routedPlan(t *testing.T) ([]*unstructured.Unstructured, string) {
	t.Helper()
	cmd := exec.Command(plan.Node(), "--import", "tsx", "test/argoevents/plan.ts", "", "", "https://hooks.example.com/x")
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
// as a cluster administrator: only the Sensor creates a record (immutable), nobody changes one, and the
// Sensor creates nothing else.
func TestOnlyTheSensorRecordsAStopApproval(t *testing.T) {
	objects, project := routedPlan(t)
	s := apiserver.Shared(t)
	ctx := context.Background()
	if _, err := s.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: project}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	in := &installation{server: s}
	var sensorUser, policy string
	for _, o := range objects {
		kind := o.GetKind()
		isPolicy := (kind == "ValidatingAdmissionPolicy" || kind == "ValidatingAdmissionPolicyBinding") && strings.Contains(o.GetName(), "stop-approval")
		isSensorRBAC := (kind == "Role" || kind == "RoleBinding") && o.GetName() == "kargo-events-sensor"
		if !isPolicy && !isSensorRBAC {
			continue
		}
		if kind == "RoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			sa := subjects[0].(map[string]any)
			sensorUser = "system:serviceaccount:" + sa["namespace"].(string) + ":" + sa["name"].(string)
		}
		if kind == "ValidatingAdmissionPolicy" {
			policy = o.GetName()
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
	if sensorUser == "" || policy == "" {
		t.Fatalf("the routed plan lacks the Sensor's RoleBinding (%q) or the records' policy (%q)", sensorUser, policy)
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
	deadline := time.Now().Add(enforcedWithin)
	for i := 0; ; i++ {
		err := create(admin, record("approval-probe-"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "", &immutable))
		if err != nil && strings.Contains(err.Error(), policy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s is not enforced after %s: %v", policy, enforcedWithin, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
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
	if _, err := sensor.CoreV1().ConfigMaps("default").Create(ctx, record("approval-elsewhere", "", &immutable), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the Sensor may create ConfigMaps outside project %s: %v", project, err)
	}
}
