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

// The planned ValidatingAdmissionPolicies keep every Stack to its own stage: the API server admits each Stack
// as its stage's Application applies it (with a promoted commit too), and refuses each forgery a stage
// branch's author could push, with the deciding policy's own message for what was forged.
func TestStacksBoundToTheirStage(t *testing.T) {
	in := install(t)
	if in.pkoMissing != "" {
		t.Skip(in.pkoMissing)
	}
	adm := readStackAdmission(t, plan.Load(t, "kargo").Objects)
	var stacks []*unstructured.Unstructured
	for _, o := range in.objects {
		if strings.HasPrefix(o.from, "stacks/") && o.object.GetKind() == "Stack" {
			stacks = append(stacks, o.object)
		}
	}
	if len(stacks) == 0 {
		t.Fatal("no Stack of stacks/ was applied")
	}
	for _, s := range stacks {
		adm.waitEnforced(t, in, s)
		if err := in.dryRun(s); err != nil {
			t.Errorf("the planned Stack %s, as its Application applies it, was refused: %v", s.GetName(), err)
		}
		if err := in.dryRun(promoted(s)); err != nil {
			t.Errorf("the Stack %s with a promoted commit was refused: %v", s.GetName(), err)
		}
	}
	// Two stages whose Stacks run as different identities: the forgeries borrow the other's.
	own, other := differentIdentities(stacks)
	if own == nil {
		t.Skip("every Stack of this pipeline runs as one ServiceAccount: no other identity to forge")
	}
	adm.refusesForgeries(t, in, own, other)
}

// stackAdmission is a plan's admission objects on Stacks: which policy decides each Stack name, and what
// each policy says when it refuses.
type stackAdmission struct {
	// byName: the policy a binding applies to exactly that Stack name.
	byName map[string]string
	// others: the policy bound to every name no binding names.
	others   string
	messages map[string][]string
	objects  []*unstructured.Unstructured
}

// readStackAdmission finds, among a plan's objects, the ValidatingAdmissionPolicies on PKO Stacks and their
// bindings.
func readStackAdmission(t testing.TB, objects []*unstructured.Unstructured) *stackAdmission {
	t.Helper()
	adm := &stackAdmission{byName: map[string]string{}, messages: map[string][]string{}}
	for _, p := range objects {
		if p.GetKind() != "ValidatingAdmissionPolicy" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(p.Object, "spec", "matchConstraints", "resourceRules")
		if !strings.Contains(fmt.Sprint(rules), "stacks") {
			continue
		}
		validations, _, _ := unstructured.NestedSlice(p.Object, "spec", "validations")
		for _, v := range validations {
			m, _, _ := unstructured.NestedString(v.(map[string]any), "message")
			adm.messages[p.GetName()] = append(adm.messages[p.GetName()], m)
		}
		adm.objects = append(adm.objects, p)
	}
	for _, b := range objects {
		policy, _, _ := unstructured.NestedString(b.Object, "spec", "policyName")
		if b.GetKind() != "ValidatingAdmissionPolicyBinding" || adm.messages[policy] == nil {
			continue
		}
		adm.objects = append(adm.objects, b)
		if excluded, _, _ := unstructured.NestedSlice(b.Object, "spec", "matchResources", "excludeResourceRules"); len(excluded) > 0 {
			adm.others = policy
			continue
		}
		rules, _, _ := unstructured.NestedSlice(b.Object, "spec", "matchResources", "resourceRules")
		for _, r := range rules {
			names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resourceNames")
			for _, n := range names {
				adm.byName[n] = policy
			}
		}
	}
	if len(adm.byName) == 0 || adm.others == "" {
		t.Fatalf("the plan holds no ValidatingAdmissionPolicy bound to each Stack's name (%d found) and none for every other name (%q)", len(adm.byName), adm.others)
	}
	return adm
}

// policyFor is the policy that decides a Stack of that name.
func (adm *stackAdmission) policyFor(name string) string {
	if p, ok := adm.byName[name]; ok {
		return p
	}
	return adm.others
}

// dryRun applies a Stack server-side as Argo CD would, without storing it: the API server's answer.
func (in *installation) dryRun(o *unstructured.Unstructured) error {
	r, err := in.resource(o)
	if err != nil {
		return err
	}
	raw, _ := o.MarshalJSON()
	force := true
	_, err = r.Patch(context.Background(), o.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{
		FieldManager: fieldManager, Force: &force, DryRun: []string{metav1.DryRunAll},
	})
	return err
}

// promoted is the Stack as a promotion leaves it on its stage's branch: with the Freight's commit, and PKO's
// reconcile request set to the promotion's name (pulumi-kubernetes-operator v2.9.0
// operator/api/pulumi/shared/stack_types.go ReconcileRequestAnnotation), which may be any string.
func promoted(s *unstructured.Unstructured) *unstructured.Unstructured {
	c := s.DeepCopy()
	_ = unstructured.SetNestedField(c.Object, strings.Repeat("5", 40), "spec", "commit")
	_ = unstructured.SetNestedField(c.Object, c.GetName()+".01jdzq8k3c5v.a1b2c3", "metadata", "annotations", "pulumi.com/reconciliation-request")
	return c
}

// enforcedWithin bounds the wait for the API server to load a policy (its informers and compilation), so a
// policy that never loads fails the test; the wait itself ends as soon as the policy refuses.
const enforcedWithin = 5 * time.Minute

// untilEnforced waits until the API server has read policy: try(i), a request the policy refuses (i numbers
// the tries, for requests that must differ), is refused by it. Until then such requests pass.
func untilEnforced(t *testing.T, policy string, try func(i int) error) {
	t.Helper()
	deadline := time.Now().Add(enforcedWithin)
	for i := 0; ; i++ {
		err := try(i)
		if err != nil && strings.Contains(err.Error(), policy) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s is not enforced after %s: %v", policy, enforcedWithin, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitEnforced waits until the API server enforces the policy deciding the Stack `s`: a copy of it without
// Argo CD's tracking annotation, promoted to a commit of its own (a change of spec, which the policies check
// on an existing Stack too), is refused by that policy. Before then, anything would be admitted.
func (adm *stackAdmission) waitEnforced(t testing.TB, in *installation, s *unstructured.Unstructured) {
	t.Helper()
	if err := adm.enforced(in, s); err != nil {
		t.Fatal(err)
	}
}

// enforced is waitEnforced's wait, for a goroutine: it says why it gave up instead of ending the test.
func (adm *stackAdmission) enforced(in *installation, s *unstructured.Unstructured) error {
	untracked := s.DeepCopy()
	unstructured.RemoveNestedField(untracked.Object, "metadata", "annotations", trackingAnnotation)
	_ = unstructured.SetNestedField(untracked.Object, strings.Repeat("7", 40), "spec", "commit")
	policy := adm.policyFor(s.GetName())
	deadline := time.Now().Add(enforcedWithin)
	for {
		err := in.dryRun(untracked)
		if err != nil && strings.Contains(err.Error(), "'"+policy+"'") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not refuse an untracked %s %s after it was applied (last answer: %v)", policy, s.GetName(), enforcedWithin, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// refusesForgeries pushes each forgery a stage branch's author could write onto `own`'s branch, borrowing
// from `other` (a Stack of another stage, running as another identity): each is refused by the policy that
// decides the forged Stack's name, with its message for what was forged.
func (adm *stackAdmission) refusesForgeries(t *testing.T, in *installation, own, other *unstructured.Unstructured) {
	field := func(o *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedString(o.Object, path...)
		return v
	}
	set := func(value any, path ...string) func(*unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) { _ = unstructured.SetNestedField(o.Object, value, path...) }
	}
	podSpec := []string{"spec", "workspaceTemplate", "spec", "podTemplate", "spec"}
	tracking := own.GetAnnotations()[trackingAnnotation]
	app := tracking[:strings.Index(tracking, ":")]
	forgeries := []struct {
		name, message string
		forge         func(*unstructured.Unstructured) *unstructured.Unstructured
	}{
		{"another environment's identity", "spec.serviceAccountName", edit(set(field(other, "spec", "serviceAccountName"), "spec", "serviceAccountName"))},
		{"another repository", "spec.projectRepo", edit(set("https://github.com/someone-else/infra.git", "spec", "projectRepo"))},
		{"another Pulumi stack", "spec.stack", edit(set(field(own, "spec", "stack")+"-forged", "spec", "stack"))},
		{"another folder", "spec.repoDir", edit(set(field(own, "spec", "repoDir")+"/../..", "spec", "repoDir"))},
		{"another image", "spec.workspaceTemplate.spec.image", edit(set("docker.io/someone/pulumi:latest", "spec", "workspaceTemplate", "spec", "image"))},
		{"an added hostPath", "spec.workspaceTemplate ", edit(func(o *unstructured.Unstructured) {
			volumes, _, _ := unstructured.NestedSlice(o.Object, podSpec...)
			volumes = append(volumes, map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}})
			_ = unstructured.SetNestedSlice(o.Object, volumes, append(podSpec, "volumes")...)
		})},
		{"a privileged workspace", "spec.workspaceTemplate ", edit(func(o *unstructured.Unstructured) {
			containers, _, _ := unstructured.NestedSlice(o.Object, append(podSpec, "containers")...)
			if len(containers) == 0 {
				containers = []any{map[string]any{"name": "pulumi"}}
			}
			containers[0].(map[string]any)["securityContext"] = map[string]any{"privileged": true}
			_ = unstructured.SetNestedSlice(o.Object, containers, append(podSpec, "containers")...)
		})},
		{"the other destroy-on-deletion setting", "spec: ", edit(func(o *unstructured.Unstructured) {
			destroy, _, _ := unstructured.NestedBool(o.Object, "spec", "destroyOnFinalize")
			_ = unstructured.SetNestedField(o.Object, !destroy, "spec", "destroyOnFinalize")
		})},
		{"no Argo CD tracking", "metadata.annotations[", edit(func(o *unstructured.Unstructured) {
			unstructured.RemoveNestedField(o.Object, "metadata", "annotations", trackingAnnotation)
		})},
		// What the issue calls another stage's whole Stack: the other stage's manifest, complete, pushed to
		// this stage's branch with a commit of the forger's choosing, is applied by this stage's Application.
		{"another stage's whole Stack", "metadata.annotations[", func(*unstructured.Unstructured) *unstructured.Unstructured {
			return asArgoCDApplies(app, own.GetNamespace(), promoted(other))
		}},
		{"a Stack no stage plans", "metadata.name:", func(o *unstructured.Unstructured) *unstructured.Unstructured {
			o.SetName(fmt.Sprintf("%.30s-forged", own.GetName()))
			return asArgoCDApplies(app, own.GetNamespace(), o)
		}},
	}
	for _, f := range forgeries {
		t.Run(f.name, func(t *testing.T) {
			forged := f.forge(promoted(own))
			adm.refused(t, in.dryRun(forged), forged.GetName(), f.message)
		})
	}
}

// edit is a forgery that changes the Stack in place.
func edit(change func(*unstructured.Unstructured)) func(*unstructured.Unstructured) *unstructured.Unstructured {
	return func(o *unstructured.Unstructured) *unstructured.Unstructured {
		change(o)
		return o
	}
}

// refused checks that the API server refused a Stack of that name through the policy deciding it, with its
// message that starts as `prefix` (the field the forgery changed).
func (adm *stackAdmission) refused(t testing.TB, err error, name, prefix string) {
	t.Helper()
	policy := adm.policyFor(name)
	var want string
	for _, m := range adm.messages[policy] {
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
	if !strings.Contains(err.Error(), "'"+policy+"'") || !strings.Contains(err.Error(), want) {
		t.Errorf("refused with %v; want %s's message: %s", err, policy, want)
	}
}

// differentIdentities is two Stacks of the plan, applied by different Applications, that run as different
// ServiceAccounts.
func differentIdentities(stacks []*unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	for _, a := range stacks {
		for _, b := range stacks {
			sa, _, _ := unstructured.NestedString(a.Object, "spec", "serviceAccountName")
			sb, _, _ := unstructured.NestedString(b.Object, "spec", "serviceAccountName")
			// Another stage's: an update stage's own Application also applies its drift check, which runs
			// as the read-only identity.
			appOf := func(o *unstructured.Unstructured) string {
				tracking := o.GetAnnotations()[trackingAnnotation]
				return tracking[:strings.Index(tracking, ":")+1]
			}
			if sa != sb && appOf(a) != appOf(b) {
				return a, b
			}
		}
	}
	return nil, nil
}
