package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"infra-change-platform/test/internal/plan"
)

// approvalStage is what an approval for one Kargo Stage needs, read from the Stage as Kargo reads it
// (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go IsFreightAvailable: requestedFreight's sources) and the
// kind of stage the definition makes it.
type approvalStage struct {
	Name, Kind string // gate, preview, update or join
	// Preview is an update Stage's own preview: the same program's Stage of its environment's preview stage.
	Preview string
	// Upstream are the Stages it takes Freight from (none from the Warehouse); All: requireAll.
	Upstream []string
	All      bool
}

// stageSources reads a Stage spec's Freight sources: its upstream Stages, and whether it waits for all.
func stageSources(spec map[string]any) ([]string, bool) {
	requests, _, _ := unstructured.NestedSlice(spec, "requestedFreight")
	var upstream []string
	all := false
	for _, r := range requests {
		stages, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "sources", "stages")
		strategy, _, _ := unstructured.NestedString(r.(map[string]any), "sources", "availabilityStrategy")
		upstream = append(upstream, stages...)
		all = all || strategy == "All"
	}
	return upstream, all
}

// examplesApprovalStages are the example plan's Stages: their kinds from the definition (kargoStagesOf),
// their sources from the planned Stage objects.
func examplesApprovalStages(t testing.TB) []approvalStage {
	w := readIntent(t)
	specs := map[string]map[string]any{}
	for _, s := range plan.Load(t, "kargo").OfKind("Stage") {
		specs[s.GetName()], _, _ = unstructured.NestedMap(s.Object, "spec")
	}
	previewOf := map[string]string{} // environment → its preview stage
	for _, d := range w.Pipeline.Stages {
		if d.Kind == "preview" {
			previewOf[d.Environment] = d.Name
		}
	}
	var out []approvalStage
	add := func(name, kind, preview string) {
		up, all := stageSources(specs[name])
		out = append(out, approvalStage{Name: name, Kind: kind, Preview: preview, Upstream: up, All: all})
	}
	for _, d := range w.Pipeline.Stages {
		k := w.kargoStages[d.Name]
		for i, s := range k.Promoted {
			preview := ""
			if d.Kind == "update" && previewOf[d.Environment] != "" {
				preview = previewOf[d.Environment] + "-" + w.Pipeline.Programs[i].Name
			}
			add(s, d.Kind, preview)
		}
		if k.Join != "" {
			add(k.Join, "join", "")
		}
	}
	return out
}

// The example pipeline's planned approval policy, on the real kube-apiserver with Kargo's Freight CRD, judges
// approvals as Kargo v1.11.2 writes them: for every Stage of the plan, each approval that skips what the Stage
// waits for is refused naming the Stage and what is missing, the approval of Freight the path brought there
// is admitted, and Kargo's controller keeps writing where the Freight is.
func TestApprovalsFollowThePath(t *testing.T) {
	in := install(t)
	project := readIntent(t).Pipeline.Project
	checkApprovals(t, in, project, examplesApprovalStages(t))
}

var freights = schema.GroupVersionResource{Group: "kargo.akuity.io", Version: "v1alpha1", Resource: "freights"}

// approvals asks the server about approvals in one project namespace.
type approvals struct {
	r       dynamic.ResourceInterface
	project string
}

// newFreight creates a Freight and, as Kargo's controller does once a Stage holds or verified it, patches its
// status (akuity/kargo v1.11.2 pkg/kubeclient/patch.go PatchStatus: a merge patch of the status subresource;
// pkg/controller/stages/regular_stages.go syncFreight and verifyStageFreight; the fields and their JSON in
// api/v1alpha1/freight_types.go FreightStatus).
func (a approvals) newFreight(name string, status map[string]any) error {
	f := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kargo.akuity.io/v1alpha1", "kind": "Freight",
		"metadata": map[string]any{"name": name, "namespace": a.project},
		"origin":   map[string]any{"kind": "Warehouse", "name": "approvals-test"},
		"commits":  []any{map[string]any{"repoURL": "https://github.com/example/repo", "id": strings.Repeat("5", 40)}},
	}}
	ctx := context.Background()
	if _, err := a.r.Create(ctx, f, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return a.patch(name, status, false)
}

// patch merges `status` into the Freight's status subresource, as Kargo's API server and controller do.
func (a approvals) patch(name string, status map[string]any, dryRun bool) error {
	raw, _ := json.Marshal(map[string]any{"status": status})
	opts := metav1.PatchOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := a.r.Patch(context.Background(), name, types.MergePatchType, raw, opts, "status")
	return err
}

func since() map[string]any { return map[string]any{"since": time.Now().UTC().Format(time.RFC3339)} }
func verifiedAt() map[string]any {
	return map[string]any{"verifiedAt": time.Now().UTC().Format(time.RFC3339)}
}

// approval is Kargo's API server's patch for `kargo approve --stage <stage>` (pkg/server/approve_freight_v1alpha1.go).
func approval(stage string) map[string]any {
	return map[string]any{"approvedFor": map[string]any{stage: map[string]any{"approvedAt": time.Now().UTC().Format(time.RFC3339)}}}
}

// with is an approval of `stage` that also takes away (null, in a merge patch) what `drop` names.
func with(patch map[string]any, field, key string, value any) map[string]any {
	m, _ := patch[field].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m[key] = value
	patch[field] = m
	return patch
}

// standing is where the path brings Freight before an approval for s: held by its preview, verified in
// every upstream it waits for (in any one, without requireAll: the first).
func standing(s approvalStage) map[string]any {
	st := map[string]any{}
	if s.Preview != "" {
		with(st, "currentlyIn", s.Preview, since())
	}
	for i, u := range s.Upstream {
		if u != s.Preview && (s.All || i == 0) {
			with(st, "verifiedIn", u, verifiedAt())
		}
	}
	return st
}

// freightName is a Freight of its own per Stage and case, a valid name whatever the Stage's.
func freightName(stage, what string) string { return "approve-" + what + "-" + stage }

// refusedFor checks an answer is the policy's refusal naming the stage and each of `missing`.
func refusedFor(err error, stage string, missing ...string) string {
	if err == nil {
		return "admitted"
	}
	msg := err.Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(msg, "may not be approved for stage "+stage+": ") {
		return "not the approval policy's refusal for stage " + stage + ": " + msg
	}
	for _, m := range missing {
		if !strings.Contains(msg, m) {
			return fmt.Sprintf("the refusal does not name %q: %s", m, msg)
		}
	}
	return ""
}

// checkApprovals runs every case for every Stage of `stages` in `project`, the Stages four at a time.
func checkApprovals(t *testing.T, in *installation, project string, stages []approvalStage) {
	a := approvals{r: in.server.Dynamic.Resource(freights).Namespace(project), project: project}
	// Until the server has loaded the policies, anything is admitted: wait for a refusal first.
	probe := freightName("probe", "unknown")
	if err := a.newFreight(probe, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(enforcedWithin)
	for {
		err := a.patch(probe, approval("no-such-stage"), true)
		if refusedFor(err, "no-such-stage", "no stage of project "+project) == "" {
			t.Logf("the API server's refusal, as Kargo's API server receives it: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an approval for a Stage the pipeline does not have is not refused %s after the plan was applied: %v", enforcedWithin, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	objects := make([]*unstructured.Unstructured, len(stages))
	byName := map[string]approvalStage{}
	for i, s := range stages {
		objects[i] = &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": s.Name}}}
		byName[s.Name] = s
	}
	start := time.Now()
	problems := inParallel(objects, func(o *unstructured.Unstructured) string {
		s := byName[o.GetName()]
		var out []string
		for _, p := range approvalCases(a, s) {
			out = append(out, "stage "+s.Name+" ("+s.Kind+"): "+p)
		}
		return strings.Join(out, "\n")
	})
	for _, p := range problems {
		t.Error(p)
	}
	kinds := map[string]int{}
	for _, s := range stages {
		kinds[s.Kind]++
	}
	t.Logf("judged approvals for %d Stages (%v) in %s", len(stages), kinds, time.Since(start).Round(time.Millisecond))
}

// approvalCases is every case for one Stage; what went other than the policy means, in words.
func approvalCases(a approvals, s approvalStage) []string {
	var problems []string
	fail := func(what, problem string) {
		if problem != "" {
			problems = append(problems, what+": "+problem)
		}
	}
	name := freightName(s.Name, "path")
	// The controller's writes, as it makes them, of where the path brought the Freight.
	if err := a.newFreight(name, standing(s)); err != nil {
		return []string{"Kargo's controller could not record where the Freight stands: " + err.Error()}
	}
	err := a.patch(name, approval(s.Name), true)
	if s.Kind == "preview" || s.Kind == "join" {
		fail("an approval for a "+s.Kind, refusedFor(err, s.Name, "it is a "+s.Kind))
		return problems
	}
	if err != nil {
		fail("the approval of Freight the path brought there", "refused: "+err.Error())
	}
	if s.Preview != "" {
		fail("without its preview holding it",
			refusedFor(a.patch(name, with(approval(s.Name), "currentlyIn", s.Preview, nil), true), s.Name, "not held by the preview "+s.Preview))
		// Verified in its preview (a preview that did not stop): nothing is skipped.
		verified := with(with(approval(s.Name), "currentlyIn", s.Preview, nil), "verifiedIn", s.Preview, verifiedAt())
		if err := a.patch(name, verified, true); err != nil {
			fail("verified in its preview", "refused: "+err.Error())
		}
	}
	var others []string
	for _, u := range s.Upstream {
		if u != s.Preview {
			others = append(others, u)
		}
	}
	if s.All {
		for _, u := range others {
			fail("not verified in "+u, refusedFor(a.patch(name, with(approval(s.Name), "verifiedIn", u, nil), true), s.Name, "not verified in "+u))
		}
	} else if len(others) > 0 {
		patch := approval(s.Name)
		for _, u := range others {
			with(patch, "verifiedIn", u, nil)
		}
		fail("verified in none of its upstream Stages", refusedFor(a.patch(name, patch, true), s.Name, "verified in none of "+strings.Join(others, ", ")))
		if len(others) > 1 {
			// Any one is enough: the last instead of the first.
			patch := with(with(approval(s.Name), "verifiedIn", others[0], nil), "verifiedIn", others[len(others)-1], verifiedAt())
			if err := a.patch(name, patch, true); err != nil {
				fail("verified in "+others[len(others)-1]+" only", "refused: "+err.Error())
			}
		}
	}
	// Approved for real; then the controller moves the Freight on (out of the preview, into the Stage,
	// verified there), and approving it again (no key gained) changes nothing: all pass, whatever it lacks now.
	if err := a.patch(name, approval(s.Name), false); err != nil {
		return append(problems, "the approval of Freight the path brought there, stored: "+err.Error())
	}
	moves := []map[string]any{with(map[string]any{}, "currentlyIn", s.Name, since()), with(map[string]any{}, "verifiedIn", s.Name, verifiedAt())}
	if s.Preview != "" {
		moves = slices.Insert(moves, 0, with(map[string]any{}, "currentlyIn", s.Preview, nil))
	}
	for _, m := range append(moves, approval(s.Name)) {
		if err := a.patch(name, m, false); err != nil {
			raw, _ := json.Marshal(m)
			fail("Kargo's status write "+string(raw)+" on approved Freight", "refused: "+err.Error())
		}
	}
	return problems
}

// largestApprovals is one project of test/kube/largest.ts's approvals: its admission objects and every Kargo
// stage with its kind, environment, program and Freight sources.
type largestApprovals struct {
	Project   string           `json:"project"`
	Admission []map[string]any `json:"admission"`
	Stages    []largestStage   `json:"stages"`
}

// largestStage is one Kargo stage of the largest pipeline, with the approval policy whose range of names holds it.
type largestStage struct {
	Name        string         `json:"name"`
	Kind        string         `json:"kind"`
	Policy      string         `json:"policy"`
	Environment string         `json:"environment"`
	Program     string         `json:"program"`
	Spec        map[string]any `json:"spec"`
}

// The largest pipeline the validation allows: its approval policies (several at this size, each judging a
// range of Stage names) judge approvals as the example's policy does, for the Stages that tell the ranges
// and kinds apart (sample): each range's first and last name, each kind in each range and environment.
func TestLargestPipelineApprovalsFollowThePath(t *testing.T) {
	in := install(t)
	a := deployLargest(t, in).Approvals
	previews := map[string]string{}
	for _, s := range a.Stages {
		if s.Kind == "preview" {
			previews[s.Environment+"\n"+s.Program] = s.Name
		}
	}
	var stages []approvalStage
	for _, s := range sample(a.Stages, func(s largestStage) string { return s.Name },
		func(s largestStage) string { return s.Policy },
		func(s largestStage) string { return s.Policy + "\n" + s.Kind },
		func(s largestStage) string { return s.Environment + "\n" + s.Kind }) {
		up, all := stageSources(s.Spec)
		st := approvalStage{Name: s.Name, Kind: s.Kind, Upstream: up, All: all}
		if s.Kind == "update" {
			st.Preview = previews[s.Environment+"\n"+s.Program]
		}
		stages = append(stages, st)
	}
	policies := 0
	for _, o := range a.Admission {
		if o["kind"] == "ValidatingAdmissionPolicy" {
			policies++
		}
	}
	if policies < 2 {
		t.Errorf("the largest pipeline's approval rules fit one policy (%d): the split by Stage name is not tried here", policies)
	}
	t.Logf("%d approval policies", policies)
	checkApprovals(t, in, a.Project, stages)
}
