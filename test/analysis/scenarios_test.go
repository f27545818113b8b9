package analysis

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"infra-change-platform/test/internal/plan"

	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

const (
	commit = "4f1c2b9e8d7a6c5b4a3928171605f4e3d2c1b0a9"
	other  = "9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b"
	token  = "pul-test-token"
	t0     = int64(1_763_700_000)
)

var (
	successful = v1alpha1.AnalysisPhaseSuccessful
	failed     = v1alpha1.AnalysisPhaseFailed
	errored    = v1alpha1.AnalysisPhaseError
)

// op is one operation on the stack: kind "update" in the history, or a preview.
func op(head string, result string, start int64, changes map[string]int) updateInfo {
	var env map[string]string
	if head != "" {
		env = map[string]string{"git.head": head, "git.headName": "refs/heads/stage/dev", "exec.kind": "auto.inline"}
	}
	end := start + 60
	if result == "in-progress" {
		end = 0
	}
	return updateInfo{
		Kind: apitype.AppUpdateKindUpdate, StartTime: start, Environment: env, Result: apitype.AppUpdateResult(result), EndTime: end,
		Config:          map[string]apitype.AppConfigValue{"aws:region": {String: "us-west-2"}},
		ResourceChanges: changes,
	}
}

// scenario: what Pulumi Cloud holds (or answers), and the phase Rollouts must reach.
type scenario struct {
	name string
	// setup fills the stand-in for a template verifying `kind` ("update" or "preview").
	setup func(c *cloud)
	// want is the run's phase for the update template and for the preview template.
	update, preview v1alpha1.AnalysisPhase
	// why matches the reason a failed Job gave last (reason), the message a user reads in its log.
	why string
	// updateOnly: only the history holds operations of other kinds (refresh, destroy).
	updateOnly bool
}

func ops(kind string, list ...updateInfo) func(c *cloud) {
	return func(c *cloud) {
		if kind == "update" {
			c.stack.setUpdates(list...)
			return
		}
		previews := make([]preview, len(list))
		for i, u := range list {
			previews[i] = asPreview(u)
		}
		c.stack.setPreviews(previews...)
	}
}

// raw answers every list request (the history, previews) with this; an operation's own routes (its
// version, its events) answer from the stack.
func raw(status int, body string) func(c *cloud) {
	return func(c *cloud) {
		c.override = func(r *http.Request) *answer {
			if strings.HasSuffix(r.URL.Path, "/updates") || strings.HasSuffix(r.URL.Path, "/previews") {
				return &answer{status: status, body: []byte(body)}
			}
			return nil
		}
	}
}

// same is one phase for every template.
func same(s scenario, phase v1alpha1.AnalysisPhase) scenario {
	s.update, s.preview = phase, phase
	return s
}

const (
	notFound = `^no succeeded (preview|update) of ` + commit + ` on \S+ within \d+[smh]$`
	noAnswer = `^Pulumi Cloud \(.*\) gave no usable answer 7 times in a row; last: `
	// The timeout came while Pulumi Cloud was failing to answer, fewer than 7 times in a row.
	// The stack (or its latest version) was still missing at the timeout.
	stillMissing    = `^no succeeded (preview|update) of ` + commit + ` on \S+ within \d+[smh][^;]*; Pulumi Cloud still answers .*HTTP 404, Stack .* not found \(has the stack been created`
	erringAtTimeout = `^no succeeded (preview|update) of ` + commit + ` on \S+ within \d+[smh][^;]*; Pulumi Cloud \(.*\) gave no usable answer the last [1-6] time\(s\); last: `
)

// scenarios is the table every template in the plan runs. Lists hold operations in the order Pulumi Cloud
// lists them: the history newest first; previews oldest first (the REST API's default) unless said. The job
// provider has no Inconclusive: what used to wait out the count now fails at the timeout, saying so.
func scenarios(kind string) []scenario {
	return []scenario{
		// The stack has no update before this operation: a preview runs against version 0, which is `latest`
		// until the first update, so latest/previews lists it; the history holds only this update.
		same(scenario{name: "succeeded for the commit, on a stack never updated before", setup: ops(kind, op(commit, "succeeded", t0, map[string]int{"same": 4}))}, successful),
		same(scenario{name: "failed for the commit", why: `^the (preview|update) of 4f1c2b9e8d7a on \S+ failed$`, setup: ops(kind, op(commit, "failed", t0, nil))}, failed),
		same(scenario{name: "still running for the commit", why: notFound, setup: ops(kind, op(commit, "in-progress", t0, nil))}, failed),
		same(scenario{name: "not started", why: notFound, setup: ops(kind, op(commit, "not-started", t0, nil))}, failed),
		same(scenario{name: "only other commits", why: notFound, setup: ops(kind, op(other, "succeeded", t0, nil), op(other, "failed", t0-100, nil))}, failed),
		same(scenario{name: "another commit's newer operation", setup: ops(kind, op(other, "failed", t0+100, nil), op(commit, "succeeded", t0, nil))}, successful),
		same(scenario{name: "retry succeeded after a failure, newest first",
			setup: ops(kind, op(commit, "succeeded", t0+100, nil), op(commit, "failed", t0, nil))}, successful),
		same(scenario{name: "retry succeeded after a failure, oldest first",
			setup: ops(kind, op(commit, "failed", t0, nil), op(commit, "succeeded", t0+100, nil))}, successful),
		same(scenario{name: "retry failed after a success, newest first",
			setup: ops(kind, op(commit, "failed", t0+100, nil), op(commit, "succeeded", t0, nil))}, failed),
		same(scenario{name: "retry failed after a success, oldest first",
			setup: ops(kind, op(commit, "succeeded", t0, nil), op(commit, "failed", t0+100, nil))}, failed),
		same(scenario{name: "empty list", why: notFound, setup: ops(kind)}, failed),
		same(scenario{name: "a failed refresh of the commit after its update", updateOnly: true, setup: func(c *cloud) {
			refresh := op(commit, "failed", t0+100, nil)
			refresh.Kind = "refresh"
			ops(kind, refresh, op(commit, "succeeded", t0, nil))(c)
		}}, successful),
		same(scenario{name: "only a destroy of the commit", updateOnly: true, why: notFound, setup: func(c *cloud) {
			destroy := op(commit, "succeeded", t0, nil)
			destroy.Kind = "destroy"
			ops(kind, destroy)(c)
		}}, failed),
		// Go encodes an empty list as null: an answer, not an error.
		same(scenario{name: "updates: null", why: notFound, setup: raw(http.StatusOK, `{"updates":null}`)}, failed),
		same(scenario{name: "null environment and null entries beside ours",
			setup: func(c *cloud) {
				ours := op(commit, "succeeded", t0, nil)
				anon := op("", "failed", t0+100, nil)
				ops(kind, ours)(c)
				ours.Version = 1
				if kind == "update" {
					history := `{"updates":[null,` + mustJSON(anon) + `,` + mustJSON(ours) + `]}`
					c.override = func(r *http.Request) *answer {
						if strings.HasSuffix(r.URL.Path, "/updates") {
							return &answer{status: http.StatusOK, body: []byte(history)}
						}
						return nil
					}
					return
				}
				raw(http.StatusOK, `{"updates":[{"updateID":"x"},{"info":null},`+mustJSON(asPreview(anon))+`,`+mustJSON(asPreview(ours))+`]}`)(c)
			}}, successful),
		same(scenario{name: "null environment only", why: notFound, setup: ops(kind, op("", "succeeded", t0, nil))}, failed),
		same(scenario{name: "running, then succeeded", setup: func(c *cloud) {
			ops(kind, op(commit, "in-progress", t0, nil))(c)
			c.onServe = func(_ string, n int) {
				if n == 3 {
					ops(kind, op(commit, "succeeded", t0, nil))(c)
				}
			}
		}}, successful),
		// Anything but the JSON the REST API documents is an error, never a verdict: 7 in a row fail the Job.
		same(scenario{name: "a 200 HTML page", why: noAnswer + `.* with a body that is not JSON$`,
			setup: raw(http.StatusOK, "<!doctype html><html><body>Sign in to continue</body></html>")}, failed),
		same(scenario{name: "a 200 JSON of another shape", why: noAnswer + `.* answered JSON without an updates list$`,
			setup: raw(http.StatusOK, `{"items":[{"result":"succeeded"}],"status":"ok"}`)}, failed),
		same(scenario{name: "a 200 JSON list", why: noAnswer + `.* answered JSON without an updates list$`,
			setup: raw(http.StatusOK, `[{"result":"succeeded"}]`)}, failed),
		same(scenario{name: "a 200 JSON whose updates is not a list", why: noAnswer + `.* not a list$`,
			setup: raw(http.StatusOK, `{"updates":{"result":"succeeded"}}`)}, failed),
		same(scenario{name: "no updates key", why: noAnswer, setup: raw(http.StatusOK, `{}`)}, failed),
		same(scenario{name: "401: the token is refused", why: noAnswer + `HTTP 401 `, setup: func(c *cloud) { c.token = "another" }}, failed),
		// Pulumi Cloud's own 404 is an answer: the stack does not exist before PKO's first run creates it (nor a
		// version before its first update). Wait for it, and say so at the timeout; anyone else's 404 is an error.
		same(scenario{name: "404 from Pulumi Cloud until the timeout", why: stillMissing,
			setup: raw(http.StatusNotFound, `{"code":404,"message":"Stack 'your-org/infra/dev' not found"}`)}, failed),
		same(scenario{name: "404 from Pulumi Cloud, more times than the error limit, then the answer", setup: func(c *cloud) {
			ops(kind, op(commit, "succeeded", t0, nil))(c)
			c.override = func(r *http.Request) *answer {
				if len(c.Requests()) <= 12 {
					return &answer{status: http.StatusNotFound, body: []byte(`{"code":404,"message":"Stack 'your-org/infra/dev' not found"}`)}
				}
				return nil
			}
		}}, successful),
		same(scenario{name: "404 page not from Pulumi Cloud", why: noAnswer + `HTTP 404 `, setup: raw(http.StatusNotFound, `<html>Not Found</html>`)}, failed),
		same(scenario{name: "500", why: noAnswer + `HTTP 500 `, setup: raw(http.StatusInternalServerError, `{"code":500,"message":"Internal Server Error"}`)}, failed),
		same(scenario{name: "500, then the answer", setup: func(c *cloud) {
			ops(kind, op(commit, "succeeded", t0, nil))(c)
			c.override = func(r *http.Request) *answer {
				if len(c.Requests()) <= 6 {
					return &answer{status: http.StatusInternalServerError, body: []byte(`{"code":500}`)}
				}
				return nil
			}
		}}, successful),
		// Pulumi Cloud never answering: each request's own timeout (cloud.mjs) is an error, and 7 in a row fail
		// the Job long before its timeout.
		same(scenario{name: "no answer", why: noAnswer + `.*aborted due to timeout`, setup: func(c *cloud) {
			c.override = func(*http.Request) *answer {
				return &answer{held: true}
			}
		}}, failed),
	}
}

func mustJSON(v any) string { return string(jsonAnswer(v).body) }

// templateKind reads what a template verifies from its Job's OPERATION.
func templateKind(run *v1alpha1.AnalysisRun) (kind string) {
	for _, e := range run.Spec.Metrics[0].Provider.Job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "OPERATION" {
			kind = e.Value
		}
	}
	return kind
}

// Every AnalysisTemplate the plan emits, each through the Stage that uses it first, driven by Argo
// Rollouts' analysis controller over the whole table.
func TestVerificationPhases(t *testing.T) {
	t.Parallel()
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	for _, tr := range templateRuns(t, kargo, commit) {
		tpl, base := tr.template, tr.base
		kind := templateKind(base)
		for _, sc := range append(scenarios(kind), driftScenarios(kind)...) {
			if sc.updateOnly && kind != "update" {
				continue
			}
			t.Run(tpl.GetName()+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				c := newCloud(t, token)
				sc.setup(c)
				run := against(base, c.URL)
				want := sc.update
				if kind == "preview" {
					want = sc.preview
				}
				got, jobs := driveJobs(t, run, cluster...)
				if got.Status.Phase != want {
					t.Errorf("phase %s, want %s: %s (requests: %d; jobs: %+v)", got.Status.Phase, want, got.Status.Message, len(c.Requests()), jobs)
				}
				if want == failed && sc.why != "" {
					expectReason(t, jobs, sc.why)
				}
				if want == failed && sc.why != "" {
					// The run's message names the template's one metric (argo-rollouts v1.9.0
					// analysis/analysis.go, assessRunStatus).
					if prefix := `Metric "` + base.Spec.Metrics[0].Name + `" assessed Failed`; !strings.HasPrefix(got.Status.Message, prefix) {
						t.Errorf("message %q, want %s...", got.Status.Message, prefix)
					}
				}
			})
		}
	}
}

// inCluster is what the kargo project puts in the namespace the Jobs run in: the verification token Secret
// each Job's env reads (holding the stand-in's token: the plan's value is a Pulumi secret, unknown offline)
// and the script's ConfigMap, as the plan emits it.
func inCluster(t *testing.T, kargo *plan.Project) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, tpl := range kargo.OfKind("AnalysisTemplate") {
		var spec v1alpha1.AnalysisTemplate
		plan.Into(t, tpl.Object, &spec)
		for _, m := range spec.Spec.Metrics {
			if m.Provider.Job == nil {
				t.Fatalf("%s/%s: not a job metric", tpl.GetName(), m.Name)
			}
			pod := m.Provider.Job.Spec.Template.Spec
			for _, c := range pod.Containers {
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && len(out) == 0 {
						s := kargo.Object(t, "Secret", e.ValueFrom.SecretKeyRef.Name)
						out = append(out, &corev1.Secret{
							ObjectMeta: metav1.ObjectMeta{Name: s.GetName(), Namespace: s.GetNamespace()},
							Data:       map[string][]byte{e.ValueFrom.SecretKeyRef.Key: []byte(token)},
						})
					}
				}
			}
			for _, v := range pod.Volumes {
				if v.ConfigMap != nil && len(out) == 1 {
					var cm corev1.ConfigMap
					plan.Into(t, kargo.Object(t, "ConfigMap", v.ConfigMap.Name).Object, &cm)
					out = append(out, &cm)
				}
			}
		}
	}
	if len(out) != 2 {
		t.Fatal("no AnalysisTemplate's Job reads its token from a Secret and its script from a ConfigMap")
	}
	return out
}

func stageUsing(t *testing.T, kargo *plan.Project, template string) *unstructured.Unstructured {
	t.Helper()
	for _, s := range kargo.OfKind("Stage") {
		names, _, _ := unstructured.NestedSlice(s.Object, "spec", "verification", "analysisTemplates")
		for _, n := range names {
			if ref, ok := n.(map[string]any); ok && ref["name"] == template {
				return s
			}
		}
	}
	t.Fatalf("no Stage verifies with AnalysisTemplate %s", template)
	return nil
}

// repoURL is the repository the Warehouse subscribes to: the one commitFrom() is asked about.
func repoURL(t *testing.T, kargo *plan.Project) string {
	t.Helper()
	subs, _, _ := unstructured.NestedSlice(kargo.OfKind("Warehouse")[0].Object, "spec", "subscriptions")
	url, _, _ := unstructured.NestedString(subs[0].(map[string]any), "git", "repoURL")
	if url == "" {
		t.Fatal("the Warehouse subscribes to no git repository")
	}
	return url
}

// templateRun is an AnalysisTemplate of the plan, the first Stage verifying with it, and the AnalysisRun
// Kargo would create for that Stage's Freight at the given commit.
type templateRun struct {
	template *unstructured.Unstructured
	stage    *unstructured.Unstructured
	base     *v1alpha1.AnalysisRun
}

func templateRuns(t *testing.T, kargo *plan.Project, commitID string) []templateRun {
	t.Helper()
	var out []templateRun
	for _, tpl := range kargo.OfKind("AnalysisTemplate") {
		stage := stageUsing(t, kargo, tpl.GetName())
		out = append(out, templateRun{tpl, stage, newRun(t, kargo, stage, gitCommit{RepoURL: repoURL(t, kargo), ID: commitID})})
	}
	return out
}

// expectReason: a Job failed, and the reason it gave last matches `why`: its last line, or its whole last
// message (the lines after its last line of progress: "error N in a row", "not there yet", a pod's fate),
// which a stop or a comparison spreads over several lines.
func expectReason(t *testing.T, jobs []jobRun, why string) {
	t.Helper()
	re := regexp.MustCompile(why)
	var reasons []string
	for _, j := range jobs {
		if j.Condition != batchv1.JobFailed {
			continue
		}
		last := reasonOf(j.Stderr)
		lines := strings.Split(last, "\n")
		if re.MatchString(lines[len(lines)-1]) || re.MatchString(last) {
			return
		}
		reasons = append(reasons, j.Metric+": "+last)
	}
	t.Errorf("no failed Job says %q; they say %q", why, reasons)
}

var progress = regexp.MustCompile(`^(error \d+ in a row: |not there yet: |look \d+: |pod \d+: )`)

// reasonOf is the last message a Job wrote on stderr: the lines after its last line of progress.
func reasonOf(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	// After the reason, the Job says where it wrote it (run-message.mjs): not part of the reason.
	if n := len(lines); n > 1 && strings.HasPrefix(lines[n-1], "the reason in the AnalysisRun: ") {
		lines = lines[:n-1]
	}
	from := 0
	for i, l := range lines {
		if progress.MatchString(l) {
			from = i + 1
		}
	}
	if from == len(lines) {
		from = len(lines) - 1
	}
	return strings.Join(lines[from:], "\n")
}
