package promotion

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// hostileActor is a signed-in name that tries to break out of the record: quotes, markup, and a newline
// followed by a record line of its own.
const hostileActor = "email:eve\"</b><script>x</script>\n" + recordPrefix + `{"stage":"forged"}`

const recordPrefix = "Kargo-Record: "

// previewAfterGate is the first program stage accept takes that Freight reaches from a gate, and the program
// stage that takes Freight from it (the update stage its preview guards), all read from the plan; "" for
// each when the plan has none.
func previewAfterGate(t *testing.T, accept func(preview string) bool) (gate, preview, update string) {
	t.Helper()
	programs, gates, _ := stageKinds(t)
	from := map[string][]string{}
	for _, s := range kargoPlan(t).OfKind("Stage") {
		req, _, _ := unstructured.NestedSlice(s.Object, "spec", "requestedFreight")
		for _, r := range req {
			stages, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "sources", "stages")
			from[s.GetName()] = append(from[s.GetName()], stages...)
		}
	}
	for _, p := range programs {
		if !accept(p) {
			continue
		}
		for _, g := range from[p] {
			if !slices.Contains(gates, g) {
				continue
			}
			for _, u := range programs {
				if slices.Equal(from[u], []string{p}) {
					return g, p, u
				}
			}
		}
	}
	return "", "", ""
}

// recordOf is the one record line of a stage branch commit, decoded.
func recordOf(t *testing.T, r *Remote, rev string) map[string]any {
	t.Helper()
	message := gitRun(t, r.Dir, "log", "-1", "--format=%B", rev)
	var lines []string
	for _, l := range strings.Split(message, "\n") {
		if strings.HasPrefix(l, recordPrefix) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("commit %s holds %d record lines, want exactly 1:\n%s", rev, len(lines), message)
	}
	var record map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[0], recordPrefix)), &record); err != nil {
		t.Fatalf("record of %s is not JSON: %v\n%s", rev, err, lines[0])
	}
	return record
}

// TestPromotionRecord runs, through Kargo's expressions, an approval at a gate by a hostile name and the
// preview and update promotions after it, then reads the update stage's branch: its commit holds one record
// line naming the Freight, its commit, every approval with who and when, and the Kargo UI's links; the name
// stays inside its JSON string. `npm run history` then reads it back from the branches alone.
func TestPromotionRecord(t *testing.T) {
	t.Parallel()
	gate, preview, update := previewAfterGate(t, func(string) bool { return true })
	if gate == "" {
		t.Fatal("no program stage after a gate has a program stage after it")
	}
	r := newRemote(t)
	for _, s := range []string{preview, update} {
		kargoCreatedBranch(t, r, appOf(t, s).Branch)
	}
	f := freightAt(t, r, r.A)
	store := NewFreightStore(f)
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, store)
	const ui = "https://kargo.example.com"
	before := time.Now().UTC().Truncate(time.Second)
	run := func(stage, actor string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := e.Promote(ctx, Promotion{Name: stage + ".1", Stage: stage, Freight: f, Actor: actor, WorkDir: t.TempDir(), UIBaseURL: ui}); err != nil {
			t.Fatalf("promoting into %s: %v", stage, err)
		}
	}
	run(gate, hostileActor)
	run(gate, "email:carol@example.com")
	run(preview, "controller:kargo-controller")
	run(update, "controller:kargo-controller")
	after := time.Now().UTC()

	project := kargoPlan(t).OfKind("Project")[0].GetName()
	head := r.Ref(t, appOf(t, update).Branch)
	record := recordOf(t, r, head)
	want := map[string]any{
		"project": project, "stage": update, "freight": f.Name, "alias": f.Alias, "commit": r.A,
		"promotion": update + ".1", "freightUrl": ui + "/project/" + project + "/freight/" + f.Name,
		"promotionUrl": ui + "/project/" + project + "/promotion/" + update + ".1",
	}
	for k, v := range want {
		if record[k] != v {
			t.Errorf("record %s = %v, want %v", k, record[k], v)
		}
	}
	var approved bool
	var gateAt []any
	approvals, _ := record["approvals"].([]any)
	for _, a := range approvals {
		a := a.(map[string]any)
		if a["gate"] != gate {
			continue
		}
		approved = true
		by, _ := a["by"].([]any)
		at, _ := a["at"].([]any)
		gateAt = at
		if len(by) != 2 || len(at) != 2 || by[0] != promotionActor(hostileActor) || by[1] != "carol@example.com" {
			t.Errorf("approvals at %s: by %v at %v, want the hostile name then carol's, each with a time", gate, by, at)
		}
		for _, when := range at {
			ts, err := time.Parse(time.RFC3339, when.(string))
			if err != nil || ts.Before(before) || ts.After(after) {
				t.Errorf("approval time %v (%v), want RFC 3339 between %s and %s", when, err, before, after)
			}
		}
	}
	if !approved {
		t.Errorf("the record of %s holds no approval at %s: %v", update, gate, record["approvals"])
	}

	// The history command reads the same record from the branches, with git only.
	environment := environmentOf(t, update)
	cmd := exec.Command(plan.Node(), "--import", "tsx", "lib/cli/history.ts", environment, "--repository", r.Dir, "--ref-prefix", "refs/heads/")
	cmd.Dir = plan.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm run history -- %s: %v\n%s", environment, err, out)
	}
	text := string(out)
	// As the history prints it: a JSON string, markup left as it is.
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(promotionActor(hostileActor)); err != nil {
		t.Fatal(err)
	}
	quoted := strings.TrimSpace(buf.String())
	// Who let it through the gate and when, each approval with its time: from git, with the default config.
	approvedLine := "approved at " + gate + ": "
	if len(gateAt) == 2 {
		approvedLine += fmt.Sprintf(`%s at %q, "carol@example.com" at %q`, quoted, gateAt[0], gateAt[1])
	}
	for _, w := range []string{update + " (update", preview + " (preview", r.A, quoted, "preview " + preview, want["freightUrl"].(string), approvedLine} {
		if !strings.Contains(text, w) {
			t.Errorf("history of %s lacks %q:\n%s", environment, w, text)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "forged") && !strings.Contains(l, quoted) {
			t.Errorf("history prints the hostile name outside its quotes: %q", l)
		}
	}
}

// environmentOf is the environment of an update stage, as `npm run programs` lists it.
func environmentOf(t *testing.T, stage string) string {
	t.Helper()
	cmd := exec.Command(plan.Node(), "--import", "tsx", "lib/cli/programs.ts")
	cmd.Dir = plan.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm run programs: %v", err)
	}
	var report struct {
		Stages []struct{ Name, Environment string } `json:"stages"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatal(err)
	}
	for _, s := range report.Stages {
		if s.Name == stage {
			return s.Environment
		}
	}
	t.Fatalf("npm run programs lists no update stage %s", stage)
	return ""
}
