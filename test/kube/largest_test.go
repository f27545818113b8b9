package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"infra-change-platform/test/internal/plan"
)

// largest is what test/kube/largest.ts prints: the largest pipeline the validation allows, as kargo would
// deploy its admission and as its stages' Applications would apply its Stacks.
type largest struct {
	Namespace string
	Admission []*unstructured.Unstructured
	// Replanned is the first stage's policy once the plan changed (its program's workspace image).
	Replanned *unstructured.Unstructured
	// applied: each planned Stack as its Application applies it.
	applied []*unstructured.Unstructured
	// Approvals: its approval admission and Stages (approval_test.go).
	Approvals largestApprovals
}

var (
	largestOnce sync.Once
	largestPlan *largest
	largestErr  string
)

// deployLargest applies the largest pipeline's admission objects to the shared server once per test binary,
// in a namespace of its own (its policies are bound there only).
func deployLargest(t *testing.T, in *installation) *largest {
	t.Helper()
	largestOnce.Do(func() { largestPlan, largestErr = doDeployLargest(t, in) })
	if largestErr != "" {
		t.Fatal(largestErr)
	}
	return largestPlan
}

func doDeployLargest(t *testing.T, in *installation) (*largest, string) {
	cmd := exec.Command("npx", "--no-install", "tsx", "test/kube/largest.ts")
	cmd.Dir = plan.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "test/kube/largest.ts: " + err.Error() + "\n" + stderr.String()
	}
	var raw struct {
		Namespace string           `json:"namespace"`
		Admission []map[string]any `json:"admission"`
		Stacks    []struct {
			Application string         `json:"application"`
			Manifest    map[string]any `json:"manifest"`
		} `json:"stacks"`
		Replanned map[string]any   `json:"replanned"`
		Approvals largestApprovals `json:"approvals"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, "test/kube/largest.ts: " + err.Error()
	}
	l := &largest{Namespace: raw.Namespace, Replanned: &unstructured.Unstructured{Object: raw.Replanned}, Approvals: raw.Approvals}
	for _, o := range raw.Admission {
		l.Admission = append(l.Admission, &unstructured.Unstructured{Object: o})
	}
	namespaces := []string{raw.Namespace, raw.Approvals.Project}
	var approvalObjects []*unstructured.Unstructured
	for _, o := range raw.Approvals.Admission {
		approvalObjects = append(approvalObjects, &unstructured.Unstructured{Object: o})
	}
	for _, s := range raw.Stacks {
		l.applied = append(l.applied, asArgoCDApplies(s.Application, raw.Namespace, &unstructured.Unstructured{Object: s.Manifest}))
	}
	ctx := context.Background()
	for _, ns := range namespaces {
		_, err = in.server.Clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err.Error()
		}
	}
	start := time.Now()
	refused := inParallel(append(slices.Clone(l.Admission), approvalObjects...), func(o *unstructured.Unstructured) string {
		if _, err := in.apply(ctx, o); err != nil {
			return o.GetKind() + " " + o.GetName() + ": " + err.Error()
		}
		return ""
	})
	if len(refused) > 0 {
		return nil, "the API server refused the largest pipeline's admission objects:\n" + strings.Join(refused, "\n")
	}
	t.Logf("applied the largest pipeline's %d admission objects (%d Stacks) in %s", len(l.Admission), len(l.applied), time.Since(start).Round(time.Millisecond))
	return l, ""
}

// The largest pipeline the validation allows (every limit of lib/pipeline/schema.ts at once) deploys: the
// API server admits its admission policies (none refused for its size), then every planned Stack as its
// stage's Application applies it, promoted; each stage's own policy refuses that Stack untracked; and a
// sample of stages across the plan refuses every forgery the example's stages refuse.
func TestLargestPipelineAdmission(t *testing.T) {
	in := install(t)
	if in.pkoMissing != "" {
		t.Skip(in.pkoMissing)
	}
	l := deployLargest(t, in)
	adm := readStackAdmission(t, l.Admission)
	if len(adm.byName) != len(l.applied) {
		t.Fatalf("%d Stacks are planned, %d bound to a policy of their own", len(l.applied), len(adm.byName))
	}
	start := time.Now()
	// Each identity's first and last Stack, drift checks apart: every policy is on the server, so each request
	// is matched against all of them as at full use; TestStacksBoundToTheirStage tries every example Stack.
	tried := sample(l.applied, (*unstructured.Unstructured).GetName, func(s *unstructured.Unstructured) string {
		account, _, _ := unstructured.NestedString(s.Object, "spec", "serviceAccountName")
		return account + "\n" + s.GetLabels()["app.kubernetes.io/component"]
	})
	problems := inParallel(tried, func(s *unstructured.Unstructured) string {
		if adm.byName[s.GetName()] == "" {
			return "no policy is bound to the planned Stack " + s.GetName()
		}
		if err := adm.enforced(in, promoted(s)); err != nil {
			return err.Error()
		}
		if err := in.dryRun(promoted(s)); err != nil {
			return "the planned Stack " + s.GetName() + ", promoted, as its Application applies it, was refused: " + err.Error()
		}
		return ""
	})
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("admitted %d of the %d planned Stacks, each refused untracked by its own policy, in %s", len(tried), len(l.applied), time.Since(start).Round(time.Millisecond))
	// First, middle and last stage, each forged from another identity.
	for _, i := range []int{0, len(l.applied) / 2, len(l.applied) - 1} {
		own := l.applied[i]
		var other *unstructured.Unstructured
		for _, o := range l.applied {
			if sa, _, _ := unstructured.NestedString(o.Object, "spec", "serviceAccountName"); sa != own.Object["spec"].(map[string]any)["serviceAccountName"] {
				other = o
				break
			}
		}
		t.Run(own.GetName(), func(t *testing.T) { adm.refusesForgeries(t, in, own, other) })
	}
}

// Updates that change nothing the policies guard are admitted, also once the plan changed and the Stack was
// not re-promoted: PKO adding and removing its finalizer (its own sequence, pkoWrites), Argo CD re-applying
// what the branch holds, a label of someone else's. A change of the spec is still held to the current plan.
func TestStackUpdatesThatChangeNothingGuarded(t *testing.T) {
	in := install(t)
	if in.pkoMissing != "" {
		t.Skip(in.pkoMissing)
	}
	l := deployLargest(t, in)
	adm := readStackAdmission(t, l.Admission)
	ctx := context.Background()
	stack := promoted(l.applied[0])
	policy := adm.policyFor(stack.GetName())
	var original *unstructured.Unstructured
	for _, o := range l.Admission {
		if o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == policy {
			original = o
		}
	}
	if l.Replanned.GetName() != policy || original == nil {
		t.Fatalf("test/kube/largest.ts replanned %q; the first Stack's policy is %q", l.Replanned.GetName(), policy)
	}
	r, err := in.resource(stack)
	if err != nil {
		t.Fatal(err)
	}
	adm.waitEnforced(t, in, stack)
	argoCDApplies := func(o *unstructured.Unstructured) error {
		raw, _ := o.MarshalJSON()
		force := true
		_, err := r.Patch(ctx, o.GetName(), types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: "argocd-controller", Force: &force})
		return err
	}
	// PKO's update: the Stack as it reads it, with the finalizer added or removed, written back whole.
	pkoUpdates := func(change func(*unstructured.Unstructured)) error {
		current, err := r.Get(ctx, stack.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		written, err := pkoWrites(current)
		if err != nil {
			return err
		}
		change(written)
		_, err = r.Update(ctx, written, metav1.UpdateOptions{FieldManager: pkoFieldManager})
		return err
	}
	addFinalizer := func(o *unstructured.Unstructured) { o.SetFinalizers(append(o.GetFinalizers(), pkoFinalizer)) }
	removeFinalizer := func(o *unstructured.Unstructured) {
		var kept []string
		for _, f := range o.GetFinalizers() {
			if f != pkoFinalizer {
				kept = append(kept, f)
			}
		}
		o.SetFinalizers(kept)
	}
	t.Cleanup(func() {
		// Leave the server as the other tests expect it: the Stack gone, the policy as planned.
		if current, err := r.Get(ctx, stack.GetName(), metav1.GetOptions{}); err == nil && len(current.GetFinalizers()) > 0 {
			current.SetFinalizers(nil)
			_, _ = r.Update(ctx, current, metav1.UpdateOptions{})
		}
		_ = r.Delete(ctx, stack.GetName(), metav1.DeleteOptions{})
		if _, err := in.apply(ctx, original); err != nil {
			t.Errorf("restoring %s: %v", policy, err)
			return
		}
		deadline := time.Now().Add(enforcedWithin)
		for in.dryRun(stack) != nil && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
	})

	if err := argoCDApplies(stack); err != nil {
		t.Fatalf("the planned Stack %s was refused: %v", stack.GetName(), err)
	}
	stored := func() map[string]any {
		got, err := r.Get(ctx, stack.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, _, _ := unstructured.NestedMap(got.Object, "spec")
		return spec
	}
	planned := stored()
	if err := pkoUpdates(addFinalizer); err != nil {
		t.Fatalf("PKO adding its finalizer to the planned Stack was refused: %v", err)
	}
	if after := stored(); !equalJSON(after, planned) {
		t.Errorf("PKO's finalizer update changed the planned spec: the plan is not what PKO's types write back\nplanned: %v\nafter:   %v", planned, after)
	}

	// The plan changes (kargo's next `pulumi up`): the stage's program runs another image. The Stack is not
	// re-promoted yet.
	if _, err := in.apply(ctx, l.Replanned); err != nil {
		t.Fatalf("the replanned policy %s was refused: %v", policy, err)
	}
	newCommit := promoted(stack)
	_ = unstructured.SetNestedField(newCommit.Object, strings.Repeat("6", 40), "spec", "commit")
	deadline := time.Now().Add(enforcedWithin)
	for in.dryRun(newCommit) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s still admits the old image %s after the plan changed", policy, enforcedWithin)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Run("a new commit with the old plan's image is held to the new plan", func(t *testing.T) {
		adm.refused(t, in.dryRun(newCommit), newCommit.GetName(), "spec.workspaceTemplate.spec.image")
	})
	t.Run("Argo CD re-applying what the branch holds", func(t *testing.T) {
		if err := argoCDApplies(stack); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("a label and an annotation other tools own", func(t *testing.T) {
		raw := []byte(`{"metadata":{"labels":{"example.com/owner":"someone"},"annotations":{"pulumi.com/reconciliation-request":"now"}}}`)
		if _, err := r.Patch(ctx, stack.GetName(), types.MergePatchType, raw, metav1.PatchOptions{FieldManager: "someone"}); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("PKO finalizing the Stack after its deletion", func(t *testing.T) {
		if err := r.Delete(ctx, stack.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pkoUpdates(removeFinalizer); err != nil {
			t.Fatalf("PKO removing its finalizer was refused: %v", err)
		}
		if _, err := r.Get(ctx, stack.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the Stack is still there once its finalizer was removed: %v", err)
		}
	})
}

func equalJSON(a, b any) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return bytes.Equal(ra, rb)
}

// inParallel runs check on each object, four at a time (the server is local: each request waits on its
// round trip more than on the server), and returns what the checks said, in no particular order.
func inParallel(objects []*unstructured.Unstructured, check func(*unstructured.Unstructured) string) []string {
	out := make(chan string, len(objects))
	work := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if problem := check(o); problem != "" {
					out <- problem
				}
			}
		}()
	}
	for _, o := range objects {
		work <- o
	}
	close(work)
	wg.Wait()
	close(out)
	var problems []string
	for p := range out {
		problems = append(problems, p)
	}
	return problems
}

// sample is the items that tell a large pipeline's generated rules apart: for each grouping, the first and
// last item of each group by name (where one policy's range of names meets the next), in the items' order.
// Every rule is generated by the same function for each stage, and the example pipeline's tests try each
// stage; at the largest size, what is left to prove is that each kind of rule holds among all the others.
func sample[T any](items []T, name func(T) string, groupings ...func(T) string) []T {
	keep := map[string]bool{}
	for _, group := range groupings {
		first, last := map[string]string{}, map[string]string{}
		for _, it := range items {
			g, n := group(it), name(it)
			if f, ok := first[g]; !ok || n < f {
				first[g] = n
			}
			if l, ok := last[g]; !ok || n > l {
				last[g] = n
			}
		}
		for g := range first {
			keep[first[g]], keep[last[g]] = true, true
		}
	}
	var out []T
	for _, it := range items {
		if keep[name(it)] {
			out = append(out, it)
		}
	}
	return out
}
