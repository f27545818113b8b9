package analysis

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"infra-change-platform/test/internal/plan"
)

// Steps of each risk class, as the classifier (kargo/verification/classify.mjs) sees them, beside steps
// that carry none.
var (
	harmless = []step{
		{op: "same", typ: "pulumi:pulumi:Stack", name: "app-dev"},
		{op: "update", typ: "aws:s3/bucketV2:BucketV2", name: "logs", diffs: []string{"tags"}},
		{op: "create", typ: "aws:s3/bucketObjectv2:BucketObjectv2", name: "readme", inputs: map[string]any{"key": "README"}},
	}
	ofClass = map[string][]step{
		"loss": {
			{op: "create-replacement", typ: "aws:s3/bucketV2:BucketV2", name: "data", diffs: []string{"bucket"}},
			{op: "replace", typ: "aws:s3/bucketV2:BucketV2", name: "data", diffs: []string{"bucket"}},
			{op: "delete-replaced", typ: "aws:s3/bucketV2:BucketV2", name: "data"},
		},
		"privilege": {{op: "update", typ: "aws:iam/role:Role", name: "deployer", diffs: []string{"assumeRolePolicy"}}},
		"exposure": {{op: "create", typ: "aws:ec2/securityGroup:SecurityGroup", name: "web",
			inputs: map[string]any{"ingress": []any{map[string]any{"cidrBlocks": []any{"0.0.0.0/0"}, "fromPort": 443}}}}},
		"cost": {{op: "update", typ: "aws:rds/instance:Instance", name: "db", diffs: []string{"instanceClass"}}},
	}
	riskClasses = []string{"loss", "privilege", "exposure", "cost"}
)

// withArgs is the run with some of its arguments set, as a Stage passes them.
func withArgs(run *v1alpha1.AnalysisRun, args map[string]string) *v1alpha1.AnalysisRun {
	run = run.DeepCopy()
	for i := range run.Spec.Args {
		if v, ok := args[run.Spec.Args[i].Name]; ok {
			run.Spec.Args[i].Value = &v
		}
	}
	return run
}

// previewWith is a succeeded preview of the commit holding these steps.
func previewWith(c *cloud, steps ...step) preview {
	p := asPreview(op(commit, "succeeded", t0, nil))
	c.stack.setPreviews(p)
	c.stack.setEvents("preview", p.UpdateID, engineEvents(true, steps...))
	return p
}

// templateOf is the plan's run of the template verifying `kind`, with the cluster objects its Jobs read.
func templateOf(t *testing.T, kind string) (templateRun, []runtime.Object, *plan.Project) {
	t.Helper()
	kargo := plan.Load(t, "kargo")
	for _, tr := range templateRuns(t, kargo, commit) {
		if templateKind(tr.base) == kind {
			return tr, inCluster(t, kargo), kargo
		}
	}
	t.Fatalf("the plan has no template verifying %ss", kind)
	return templateRun{}, nil, nil
}

// recordOf is the JSON record a Job printed on stdout.
func recordOf(t *testing.T, j jobRun) map[string]any {
	t.Helper()
	for _, line := range strings.Split(j.Stdout, "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil && r["record"] == "pulumi-verification" {
			return r
		}
	}
	t.Fatalf("no record on stdout: %q", j.Stdout)
	return nil
}

// A preview stops on each class its environment lists, saying what and who decides, and passes when its
// changes carry no class the environment lists: through the plan's preview template, Argo Rollouts' analysis
// controller and the Job.
func TestPreviewStopsOnEachClass(t *testing.T) {
	t.Parallel()
	tr, cluster, _ := templateOf(t, "preview")
	for _, class := range riskClasses {
		for _, c := range []struct {
			name, stopOn string
			want         v1alpha1.AnalysisPhase
		}{
			{"stops on " + class, class, failed},
			{"stops on " + class + " among others", strings.Join(riskClasses, ","), failed},
			{"stops on " + class + " with all", "all", failed},
			{"passes " + class + " where the environment does not stop on it", strings.Join(without(riskClasses, class), ","), successful},
			{"passes " + class + " where the environment stops for nothing", "", successful},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				cloud := newCloud(t, token)
				steps := append(append([]step{}, harmless...), ofClass[class]...)
				p := previewWith(cloud, steps...)
				run := withArgs(against(tr.base, cloud.URL), map[string]string{"stop-on": c.stopOn, "deciders": "security-approvers", "approve-stage": "qa-bucket"})
				got, jobs := driveJobs(t, run, cluster...)
				if got.Status.Phase != c.want {
					t.Fatalf("phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
				}
				record := recordOf(t, jobs[0])
				if ops := record["operations"].([]any); len(ops) != len(steps)-1 {
					t.Errorf("the record holds %d operations, want every change (%d): %v", len(ops), len(steps)-1, ops)
				}
				if c.want == successful {
					return
				}
				// The Job wrote its reason into its measurement (kargo/verification/run-message.mjs), and Argo
				// Rollouts carried it into the run's message (argo-rollouts v1.9.0 analysis/analysis.go,
				// assessRunStatus), which Kargo shows as the stage's verification message (akuity/kargo v1.11.2
				// pkg/controller/stages/regular_stages.go, Message: ar.Status.Message) and, in its AnalysisRun view, the
				// run's summary (ui/src/features/common/analysis-modal/analysis-modal.tsx).
				reason := reasonOf(jobs[0].Stderr)
				if want := `Metric "` + run.Spec.Metrics[0].Name + `" assessed Failed due to failed (1) > failureLimit (0): "Error Message: ` + reason + `"`; got.Status.Message != want {
					t.Errorf("the run's message, which the Kargo UI shows on the stage, is %q, not %q", got.Status.Message, want)
				}
				// What an approver reads: each stopped resource, its op, its class and changed keys; the preview's
				// page in Pulumi Cloud; who decides and how.
				project, stack := *argValue(run, "project"), *argValue(run, "stack")
				stopped := ofClass[class]
				if c.stopOn == "all" {
					stopped = steps[1:]
				}
				// First who decides, the Freight the run verifies (its owner) waiting, and the whole command.
				decides := "Error Message: Freight " + freightName + " waits for a decision of security-approvers, not a failure:\n" +
					"To let it through, a member of security-approvers runs: kargo approve --project " + run.Namespace + " --freight " + freightName + " --stage qa-bucket\n"
				if !strings.Contains(got.Status.Message, decides+"the preview of ") {
					t.Errorf("the run's message does not open with %q: %q", decides, got.Status.Message)
				}
				lines := []string{regexp.QuoteMeta("https://app.pulumi.com/" + *argValue(run, "organization") + "/" + project + "/" + stack + "/previews/" + p.UpdateID)}
				for _, s := range stopped {
					line := `- ` + regexp.QuoteMeta(s.name+" ("+s.typ+"): "+s.op+", ") + `[a-z, ]*`
					if c.stopOn != "all" {
						line += class
					}
					lines = append(lines, line)
				}
				// ... each read from the run's message, where the approver sees it in Kargo.
				for _, l := range lines {
					if re := regexp.MustCompile(`(?m)the preview of 4f1c2b9e8d7a on \S+ stops on [^\n]*(\n.*)*` + l); !re.MatchString(got.Status.Message) {
						t.Errorf("the run's message does not say %q: %q", l, got.Status.Message)
					}
				}
				if n := len(record["stopped"].([]any)); n != len(stopped) {
					t.Errorf("the record holds %d stopped operations, want %d", n, len(stopped))
				}
			})
		}
	}
}

func without(list []string, x string) []string {
	var out []string
	for _, v := range list {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// An update passes when it did what its preview of the same commit on the same stack showed, and fails,
// saying which resource and why, when it did more, or when it cannot be compared.
func TestUpdateComparedWithItsPreview(t *testing.T) {
	t.Parallel()
	tr, cluster, _ := templateOf(t, "update")
	changed := append(append(append([]step{}, harmless...), ofClass["privilege"]...), ofClass["cost"]...)
	for _, c := range []struct {
		name            string
		preview, update []step
		setup           func(c *cloud)
		want            v1alpha1.AnalysisPhase
		why             string
	}{
		{name: "an update that did what its preview showed", preview: changed, update: changed, want: successful},
		{name: "an update that did less: an unknown turned out unchanged", preview: changed,
			update: append(append([]step{}, harmless...), step{op: "same", typ: "aws:iam/role:Role", name: "deployer"}), want: successful},
		{name: "an update that created a resource its preview did not show", preview: harmless,
			update: append(append([]step{}, harmless...), step{op: "create", typ: "aws:iam/rolePolicy:RolePolicy", name: "admin"}), want: failed,
			why: `(?m)^- admin \(aws:iam/rolePolicy:RolePolicy\): create: a new resource the preview did not show$`},
		{name: "an update that became a replace", preview: append(append([]step{}, harmless...), step{op: "update", typ: "aws:s3/bucketV2:BucketV2", name: "data", diffs: []string{"bucket"}}),
			update: append(append([]step{}, harmless...), ofClass["loss"]...), want: failed,
			why: `(?m)^- data \(aws:s3/bucketV2:BucketV2\): replace: the preview showed update, not replace: the update became a loss`},
		{name: "an update where the preview showed no change", preview: append(append([]step{}, harmless...), step{op: "same", typ: "aws:iam/role:Role", name: "deployer"}),
			update: append(append([]step{}, harmless...), ofClass["privilege"]...), want: failed,
			why: `(?m)^- deployer \(aws:iam/role:Role\): update: the preview showed no change \(same\)`},
		{name: "an update that changed more keys", preview: ofClass["cost"],
			update: []step{{op: "update", typ: "aws:rds/instance:Instance", name: "db", diffs: []string{"instanceClass", "publiclyAccessible"}}}, want: failed,
			why: `changed publiclyAccessible, which the preview did not show changing`},
		{name: "no preview of the commit", update: changed, setup: func(c *cloud) { c.stack.previews = nil }, want: failed,
			why: `(?m): no succeeded preview of 4f1c2b9e8d7a against the state this update changed \(version 0\), so it cannot be shown to do only what was approved\.$`},
		{name: "only a failed preview of the commit", update: changed, want: failed, setup: func(c *cloud) {
			c.stack.mu.Lock()
			defer c.stack.mu.Unlock()
			for v, list := range c.stack.previews {
				for i := range list {
					list[i].Info.Result = "failed"
				}
				c.stack.previews[v] = list
			}
		}, why: `no succeeded preview of 4f1c2b9e8d7a against the state this update changed`},
		{name: "the preview's events without their summary", preview: changed, update: changed, want: failed, setup: func(c *cloud) {
			for id, e := range c.stack.events {
				if e.kind == "preview" {
					c.stack.setEvents("preview", id, e.events[:len(e.events)-1])
				}
			}
		}, why: `^events incomplete: no summary event among \d+ event\(s\); still so after 7 looks over \d+s$`},
		{name: "the update's events with a page lost", preview: changed, update: changed, want: failed, setup: func(c *cloud) {
			e := c.stack.events[updateID(1)]
			c.stack.setEvents("update", updateID(1), append(append([]apitype.EngineEvent{}, e.events[:2]...), e.events[3:]...))
		}, why: `^events incomplete: the summary counts \d+ [a-z]+\(s\), the events hold \d+; still so after 7 looks over \d+s$`},
		{name: "an events page that is not JSON", preview: changed, update: changed, want: failed, setup: func(c *cloud) {
			c.override = func(r *http.Request) *answer {
				if strings.HasSuffix(r.URL.Path, "/events") && r.URL.Query().Get("continuationToken") != "" {
					return &answer{status: http.StatusOK, body: []byte("<html>Sign in</html>")}
				}
				return nil
			}
		}, why: noAnswer + `\S+/events\?continuationToken=after-2 answered HTTP 200 with a body that is not JSON$`},
		{name: "the update's events answered 404", preview: changed, update: changed, want: failed, setup: func(c *cloud) {
			c.override = func(r *http.Request) *answer {
				if strings.Contains(r.URL.Path, "/update/") {
					return &answer{status: http.StatusNotFound, body: []byte(`{"code":404,"message":"Update not found"}`)}
				}
				return nil
			}
		}, why: `^no succeeded update of ` + commit + ` on \S+ within \d+[smh]; Pulumi Cloud still answers update/\S+/events: HTTP 404, Update not found`},
		{name: "events never answered", preview: changed, update: changed, want: failed, why: noAnswer + `.*aborted due to timeout`, setup: func(c *cloud) {
			c.override = func(r *http.Request) *answer {
				if strings.HasSuffix(r.URL.Path, "/events") {
					return &answer{held: true}
				}
				return nil
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			ops("update", op(commit, "succeeded", t0, nil))(cloud)
			cloud.stack.setEvents("update", updateID(1), engineEvents(false, c.update...))
			if c.preview != nil {
				for id, v := range cloud.stack.previewed {
					if v == 1 {
						cloud.stack.setEvents("preview", id, engineEvents(true, c.preview...))
					}
				}
			}
			if c.setup != nil {
				c.setup(cloud)
			}
			got, jobs := driveJobs(t, against(tr.base, cloud.URL), cluster...)
			if got.Status.Phase != c.want {
				t.Fatalf("phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
			}
			if c.why != "" {
				expectReason(t, jobs, c.why)
			}
			if c.want == successful {
				record := recordOf(t, jobs[0])
				changes := 0
				for _, s := range c.update {
					if s.op != "same" {
						changes++
					}
				}
				if n := len(record["matched"].([]any)); n != changes {
					t.Errorf("the record holds %d matched operations, want %d: %v", n, changes, record)
				}
				if p, _ := record["preview"].(map[string]any); p == nil || !strings.Contains(p["link"].(string), "/previews/") {
					t.Errorf("the record names no preview: %v", record)
				}
			}
		})
	}
}

// The events are read page after page, whatever their number: every page asked once, in order.
func TestEventsPaged(t *testing.T) {
	t.Parallel()
	tr, cluster, _ := templateOf(t, "preview")
	cloud := newCloud(t, token)
	cloud.eventsPerPage = 1
	steps := append(append([]step{}, harmless...), ofClass["loss"]...)
	p := previewWith(cloud, steps...)
	got, jobs := driveJobs(t, withArgs(against(tr.base, cloud.URL), map[string]string{"stop-on": "loss"}), cluster...)
	if got.Status.Phase != failed {
		t.Fatalf("phase %s: %s (jobs %+v)", got.Status.Phase, got.Status.Message, jobs)
	}
	var pages []string
	for _, r := range cloud.Requests() {
		if strings.Contains(r, "/preview/"+p.UpdateID+"/events") {
			pages = append(pages, r)
		}
	}
	// A prelude, the steps and the summary, one a page.
	if want := len(steps) + 2; len(pages) != want {
		t.Fatalf("%d pages asked, want %d: %q", len(pages), want, pages)
	}
	for i, r := range pages[1:] {
		if !strings.HasSuffix(r, "?continuationToken=after-"+strconv.Itoa(i+1)) {
			t.Errorf("page %d asked as %s", i+2, r)
		}
	}
	// The stop saw the replacement, whose steps came on separate pages.
	expectReason(t, jobs, `(?m)^- data \(aws:s3/bucketV2:BucketV2\): delete-replaced, loss$`)
}

// A stop, its approval, and both outcomes of the update it lets through, through Argo Rollouts' analysis
// controller: a preview Stage of the plan whose environment stops on a class stops on it, naming the update
// Stage whose Freight approval lets it through (Kargo's approval itself, and who may give it, are the API
// server's: test/kube); that Stage verifies the same stack with the update template, and its update passes
// when it did what the stopped preview showed, and fails when it did more.
func TestStopApprovalAndUpdate(t *testing.T) {
	t.Parallel()
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	var stage *unstructured.Unstructured
	var stopOn string
	for _, s := range kargo.OfKind("Stage") {
		if _, ok, _ := unstructured.NestedMap(s.Object, "spec", "verification"); !ok {
			continue
		}
		for _, a := range stageVerification(t, s).Args {
			if a.Name == "stop-on" && a.Value != "" && a.Value != "all" {
				stage, stopOn = s, a.Value
			}
		}
	}
	if stage == nil {
		t.Fatal("no preview Stage of the plan stops on a class")
	}
	class := strings.Split(stopOn, ",")[0]
	shown := append(append([]step{}, harmless...), ofClass[class]...)
	for _, c := range []struct {
		name   string
		update []step
		want   v1alpha1.AnalysisPhase
	}{
		{"the update did what the approved preview showed", shown, successful},
		{"the update did more than the approved preview showed", append(append([]step{}, shown...), step{op: "create", typ: "aws:iam/policy:Policy", name: "admin"}), failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			cloud.stack.unpreviewed = true
			previewWith(cloud, shown...)
			preview, jobs := driveJobs(t, against(newRun(t, kargo, stage, gitCommit{RepoURL: repoURL(t, kargo), ID: commit}), cloud.URL), cluster...)
			if preview.Status.Phase != failed {
				t.Fatalf("%s: the preview did not stop on %s: %s %s", stage.GetName(), class, preview.Status.Phase, preview.Status.Message)
			}
			// The decider runs the command where Kargo shows the stop (the run's message): its project, Freight, stage.
			m := regexp.MustCompile(`kargo approve --project (\S+) --freight (\S+) --stage (\S+)\n`).FindStringSubmatch(preview.Status.Message)
			if m == nil || m[1] != stage.GetNamespace() || m[2] != freightName {
				t.Fatalf("the stop's command, in the run's message, is not for project %s and Freight %s: %q (the Job said %q)", stage.GetNamespace(), freightName, preview.Status.Message, jobs[0].Stderr)
			}
			m = m[2:]
			approve := kargo.Object(t, "Stage", m[1])
			if approve.GetNamespace() != stage.GetNamespace() {
				t.Fatalf("the stop names %s in another project", m[1])
			}
			run := newRun(t, kargo, approve, gitCommit{RepoURL: repoURL(t, kargo), ID: commit})
			if templateKind(run) != "update" {
				t.Fatalf("%s, which the stop names, does not verify an update", m[1])
			}
			previewRun := newRun(t, kargo, stage, gitCommit{RepoURL: repoURL(t, kargo), ID: commit})
			for _, arg := range []string{"project", "stack"} {
				if *argValue(run, arg) != *argValue(previewRun, arg) {
					t.Fatalf("%s verifies %s %s, the stopped preview %s", m[1], arg, *argValue(run, arg), *argValue(previewRun, arg))
				}
			}
			// Approved: Kargo promotes the Freight to that Stage, PKO updates the stack, the Stage verifies it.
			cloud.stack.finishUpdate(op(commit, "succeeded", t0+600, nil))
			cloud.stack.setEvents("update", updateID(cloud.stack.version()), engineEvents(false, c.update...))
			got, jobs := driveJobs(t, against(run, cloud.URL), cluster...)
			if got.Status.Phase != c.want {
				t.Fatalf("update: phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
			}
			if c.want == failed {
				expectReason(t, jobs, `(?m)^- admin \(aws:iam/policy:Policy\): create: a new resource the preview did not show$`)
			}
		})
	}
}
