package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"infra-change-platform/test/internal/plan"
)

// The planned ValidatingAdmissionPolicy keeps every Stack to its own stage: the API server admits each Stack
// as its stage's Application applies it (with a promoted commit too), and refuses each forgery a stage
// branch's author could push, with the policy's own message for what was forged.
func TestStacksBoundToTheirStage(t *testing.T) {
	in := install(t)
	if in.pkoMissing != "" {
		t.Skip(in.pkoMissing)
	}
	policy, messages := stackPolicy(t, plan.Load(t, "kargo"))
	var stacks []*unstructured.Unstructured
	for _, o := range in.objects {
		if strings.HasPrefix(o.from, "stacks/") && o.object.GetKind() == "Stack" {
			stacks = append(stacks, o.object)
		}
	}
	if len(stacks) == 0 {
		t.Fatal("no Stack of stacks/ was applied")
	}
	ctx := context.Background()
	dryRun := func(o *unstructured.Unstructured) error {
		r, err := in.resource(o)
		if err != nil {
			return err
		}
		raw, _ := o.MarshalJSON()
		force := true
		_, err = r.Patch(ctx, o.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{
			FieldManager: fieldManager, Force: &force, DryRun: []string{metav1.DryRunAll},
		})
		return err
	}
	// A policy is enforced once the API server has loaded it: wait until an untracked Stack is refused.
	untracked := stacks[0].DeepCopy()
	unstructured.RemoveNestedField(untracked.Object, "metadata", "annotations", trackingAnnotation)
	deadline := time.Now().Add(20 * time.Second)
	for dryRun(untracked) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the API server still admits a Stack without Argo CD's tracking annotation 20 s after %s was applied", policy)
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, s := range stacks {
		if err := dryRun(s); err != nil {
			t.Errorf("the planned Stack %s, as its Application applies it, was refused: %v", s.GetName(), err)
		}
		promoted := s.DeepCopy()
		_ = unstructured.SetNestedField(promoted.Object, strings.Repeat("5", 40), "spec", "commit")
		if err := dryRun(promoted); err != nil {
			t.Errorf("the Stack %s with a promoted commit was refused: %v", s.GetName(), err)
		}
	}

	// Two stages whose Stacks run as different identities: the forgeries borrow the other's.
	own, other := differentIdentities(stacks)
	if own == nil {
		t.Skip("every Stack of this pipeline runs as one ServiceAccount: no other identity to forge")
	}
	field := func(o *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedString(o.Object, path...)
		return v
	}
	set := func(value any, path ...string) func(*unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) { _ = unstructured.SetNestedField(o.Object, value, path...) }
	}
	podSpec := []string{"spec", "workspaceTemplate", "spec", "podTemplate", "spec"}
	forgeries := []struct {
		name, message string
		forge         func(*unstructured.Unstructured)
	}{
		{"another environment's identity", "spec.serviceAccountName", set(field(other, "spec", "serviceAccountName"), "spec", "serviceAccountName")},
		{"another repository", "spec.projectRepo", set("https://github.com/someone-else/infra.git", "spec", "projectRepo")},
		{"another Pulumi stack", "spec.stack", set(field(own, "spec", "stack")+"-forged", "spec", "stack")},
		{"another folder", "spec.repoDir", set(field(own, "spec", "repoDir")+"/../..", "spec", "repoDir")},
		{"another image", "spec.workspaceTemplate.spec.image", set("docker.io/someone/pulumi:latest", "spec", "workspaceTemplate", "spec", "image")},
		{"an added hostPath", "spec.workspaceTemplate ", func(o *unstructured.Unstructured) {
			volumes, _, _ := unstructured.NestedSlice(o.Object, podSpec...)
			volumes = append(volumes, map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}})
			_ = unstructured.SetNestedSlice(o.Object, volumes, append(podSpec, "volumes")...)
		}},
		{"a privileged workspace", "spec.workspaceTemplate ", func(o *unstructured.Unstructured) {
			containers, _, _ := unstructured.NestedSlice(o.Object, append(podSpec, "containers")...)
			if len(containers) == 0 {
				containers = []any{map[string]any{"name": "pulumi"}}
			}
			containers[0].(map[string]any)["securityContext"] = map[string]any{"privileged": true}
			_ = unstructured.SetNestedSlice(o.Object, containers, append(podSpec, "containers")...)
		}},
		{"the other destroy-on-deletion setting", "spec: ", func(o *unstructured.Unstructured) {
			destroy, _, _ := unstructured.NestedBool(o.Object, "spec", "destroyOnFinalize")
			_ = unstructured.SetNestedField(o.Object, !destroy, "spec", "destroyOnFinalize")
		}},
		{"no Argo CD tracking", "A Stack in namespace", func(o *unstructured.Unstructured) {
			unstructured.RemoveNestedField(o.Object, "metadata", "annotations", trackingAnnotation)
		}},
	}
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			forged := own.DeepCopy()
			f.forge(forged)
			refused(t, dryRun(forged), policy, messages, f.message)
		})
	}
	// What the issue calls another stage's whole Stack: the other stage's manifest, complete, pushed to this
	// stage's branch, is applied by this stage's Application.
	t.Run("another stage's whole Stack", func(t *testing.T) {
		tracking := own.GetAnnotations()[trackingAnnotation]
		app := tracking[:strings.Index(tracking, ":")]
		forged := asArgoCDApplies(app, own.GetNamespace(), other)
		refused(t, dryRun(forged), policy, messages, "metadata.name")
	})
}

// stackPolicy is the plan's policy on Stacks: its name and its validations' messages.
func stackPolicy(t *testing.T, kargo *plan.Project) (string, []string) {
	for _, p := range kargo.OfKind("ValidatingAdmissionPolicy") {
		rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConstraints", "resourceRules")
		if !strings.Contains(fmt.Sprint(rules), "stacks") {
			continue
		}
		validations, _, _ := unstructured.NestedSlice(p.Object, "spec", "validations")
		var messages []string
		for _, v := range validations {
			m, _, _ := unstructured.NestedString(v.(map[string]any), "message")
			messages = append(messages, m)
		}
		return p.GetName(), messages
	}
	t.Fatal("the kargo plan holds no ValidatingAdmissionPolicy on PKO Stacks")
	return "", nil
}

// refused checks that the API server refused a forgery through the policy, with its message that starts as
// `prefix` (the field the forgery changed).
func refused(t *testing.T, err error, policy string, messages []string, prefix string) {
	t.Helper()
	var want string
	for _, m := range messages {
		if strings.HasPrefix(m, prefix) {
			want = m
		}
	}
	if want == "" {
		t.Fatalf("the policy %s has no message starting %q: it no longer checks that", policy, prefix)
	}
	if err == nil {
		t.Fatalf("admitted; want refused by %s: %s", policy, want)
	}
	if !strings.Contains(err.Error(), policy) || !strings.Contains(err.Error(), want) {
		t.Errorf("refused with %v; want %s's message: %s", err, policy, want)
	}
}

// differentIdentities is two Stacks of the plan that run as different ServiceAccounts.
func differentIdentities(stacks []*unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	for _, a := range stacks {
		for _, b := range stacks {
			sa, _, _ := unstructured.NestedString(a.Object, "spec", "serviceAccountName")
			sb, _, _ := unstructured.NestedString(b.Object, "spec", "serviceAccountName")
			if sa != sb {
				return a, b
			}
		}
	}
	return nil, nil
}
