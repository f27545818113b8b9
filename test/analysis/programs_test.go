package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"infra-change-platform/test/internal/plan"
)

// A declared environment stage several programs run in: one Kargo Stage per program, each verified by its
// own AnalysisRun against its own stack, and a join (a control-flow Stage) that verifies the Freight once
// every one of them has (akuity/kargo v1.11.2 pkg/controller/stages/control_flow_stages.go; the join takes
// Freight verified in all its upstream Stages, api/v1alpha1/stage_types.go IsFreightAvailable).

// joinPhase is what the join makes of its upstream Stages' verifications of one Freight: verified only
// when every run is Successful; failed when any run ended otherwise (Kargo marks Freight verified in a
// Stage only on a Successful verification, regular_stages.go markFreightVerifiedForStage, so the join can
// never take it); running while any is still running.
func joinPhase(runs []*v1alpha1.AnalysisRun) v1alpha1.AnalysisPhase {
	phase := successful
	for _, r := range runs {
		switch {
		case !r.Status.Phase.Completed():
			if phase == successful {
				phase = v1alpha1.AnalysisPhaseRunning
			}
		case r.Status.Phase != successful:
			return failed
		}
	}
	return phase
}

// programStage is one program's Stage of the declared stage: its run, and its stack in the stand-in.
type programStage struct {
	stage          *unstructured.Unstructured
	project, stack string
	run            *v1alpha1.AnalysisRun
}

// updateJoin is the first join of the plan whose upstream Stages all verify with the update template: a
// declared update stage that several programs run in, and those Stages.
func updateJoin(t *testing.T, kargo *plan.Project) (string, []*unstructured.Unstructured) {
	t.Helper()
	stages := map[string]*unstructured.Unstructured{}
	for _, s := range kargo.OfKind("Stage") {
		stages[s.GetName()] = s
	}
	for _, s := range kargo.OfKind("Stage") {
		if steps, _, _ := unstructured.NestedSlice(s.Object, "spec", "promotionTemplate", "spec", "steps"); len(steps) > 0 {
			continue // not a control-flow Stage (api/v1alpha1/stage_types.go IsControlFlow)
		}
		requested, _, _ := unstructured.NestedSlice(s.Object, "spec", "requestedFreight")
		var members []*unstructured.Unstructured
		for _, r := range requested {
			names, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "sources", "stages")
			for _, n := range names {
				members = append(members, stages[n])
			}
		}
		update := len(members) >= 2
		for _, m := range members {
			update = update && m != nil && len(stageVerification(t, m).AnalysisTemplates) == 1 &&
				stageVerification(t, m).AnalysisTemplates[0].Name == "pulumi-update"
		}
		if update {
			return s.GetName(), members
		}
	}
	t.Skip("NOT RUN: the pipeline promotes one program, so no join takes Freight from two Stages verified by pulumi-update")
	return "", nil
}

// twoPrograms is the runs Kargo creates for the join's upstream Stages verifying one Freight, each with its
// own arguments (project, stack, commit) from the Stage's verification, pointed at one stand-in holding
// every program's stack under its own project.
func twoPrograms(t *testing.T, kargo *plan.Project, c *cloud) []*programStage {
	t.Helper()
	_, members := updateJoin(t, kargo)
	org := ""
	var out []*programStage
	for _, m := range members {
		run := against(newRun(t, kargo, m, gitCommit{RepoURL: repoURL(t, kargo), ID: commit}), c.URL)
		run.UID = types.UID("uid-" + m.GetName()) // the API server's; Rollouts names each run's Jobs after it
		p := &programStage{stage: m, run: run}
		for name, into := range map[string]*string{"project": &p.project, "stack": &p.stack, "organization": &org} {
			if v := argValue(run, name); v != nil {
				*into = *v
			}
		}
		if v := argValue(run, "commit"); v == nil || *v != commit {
			t.Fatalf("%s verifies commit %v, want the Freight's %s", m.GetName(), v, commit)
		}
		out = append(out, p)
	}
	projects := map[string]bool{}
	for _, p := range out {
		if p.project == "" || p.stack != out[0].stack || projects[p.project] {
			t.Fatalf("the join's Stages verify %s/%s: one stack per program, the same environment", p.project, p.stack)
		}
		projects[p.project] = true
		c.addStack(org, p.project, p.stack)
	}
	return out
}

// seed gives program i's stack `mine` and every other program's stack `others`.
func seed(c *cloud, ps []*programStage, i int, mine, others []updateInfo) {
	for j, p := range ps {
		if j == i {
			p.stackOf(c).setUpdates(mine...)
		} else {
			p.stackOf(c).setUpdates(others...)
		}
	}
}

func (p *programStage) stackOf(c *cloud) *stack {
	for key, s := range c.stacks {
		if strings.HasSuffix(key, "/"+p.project+"/"+p.stack) {
			return s
		}
	}
	return nil
}

func phases(runs []*v1alpha1.AnalysisRun) string {
	var out []string
	for _, r := range runs {
		out = append(out, fmt.Sprintf("%s %s", r.Name, r.Status.Phase))
	}
	return strings.Join(out, ", ")
}

// A two-program stage: the AnalysisRuns of both program stages of one declared update stage, each with its
// own project, stack and commit, run side by side against one Pulumi Cloud stand-in holding both programs'
// stacks; their phases combined as the join combines them.
func TestTwoProgramStage(t *testing.T) {
	t.Parallel()
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	join, members := updateJoin(t, kargo)
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.GetName()
	}
	t.Logf("join %s of %v", join, names)

	// drive runs both; at the first look at which `when` holds, `then` changes the stand-in (once). It
	// returns the runs' last phases, and whether `when` was ever seen.
	type step struct {
		when func(runs []*v1alpha1.AnalysisRun) bool
		then func(runs []*v1alpha1.AnalysisRun)
	}
	drive := func(t *testing.T, c *cloud, ps []*programStage, stop bool, s *step) ([]*v1alpha1.AnalysisRun, bool) {
		t.Helper()
		runs := make([]*v1alpha1.AnalysisRun, len(ps))
		for i, p := range ps {
			runs[i] = p.run
		}
		seen := false
		got, _ := driveTogether(t, runs, func(current []*v1alpha1.AnalysisRun) bool {
			if s == nil || seen || !s.when(current) {
				return false
			}
			seen = true
			if s.then != nil {
				s.then(current)
			}
			return stop
		}, cluster...)
		for i, p := range ps {
			if !got[i].Status.Phase.Completed() {
				continue // stopped while it runs: it may not have asked yet
			}
			// Each run asked Pulumi Cloud about its own program's stack, under its own project's path.
			prefix := "/api/stacks/" + *argValue(runs[i], "organization") + "/" + p.project + "/" + p.stack + "/updates"
			if !slices.ContainsFunc(c.Requests(), func(r string) bool { return strings.HasPrefix(r, prefix) }) {
				t.Errorf("%s never asked for %s (requests %q)", p.stage.GetName(), prefix, c.Requests())
			}
		}
		return got, seen
	}
	// phaseIs: the run of program i is in that phase ("" for still running).
	phaseIs := func(i int, want v1alpha1.AnalysisPhase) func(runs []*v1alpha1.AnalysisRun) bool {
		return func(runs []*v1alpha1.AnalysisRun) bool {
			if want == "" {
				return !runs[i].Status.Phase.Completed()
			}
			return runs[i].Status.Phase == want
		}
	}
	allBut := func(i int, want v1alpha1.AnalysisPhase) func(runs []*v1alpha1.AnalysisRun) bool {
		return func(runs []*v1alpha1.AnalysisRun) bool {
			for j, r := range runs {
				if j != i && r.Status.Phase != want {
					return false
				}
			}
			return true
		}
	}
	and := func(a, b func([]*v1alpha1.AnalysisRun) bool) func([]*v1alpha1.AnalysisRun) bool {
		return func(runs []*v1alpha1.AnalysisRun) bool { return a(runs) && b(runs) }
	}

	t.Run("both succeeded", func(t *testing.T) {
		t.Parallel()
		c := newCloud(t, token)
		ps := twoPrograms(t, kargo, c)
		for _, p := range ps {
			p.stackOf(c).setUpdates(op(commit, "succeeded", t0, nil))
		}
		got, _ := drive(t, c, ps, false, nil)
		if p := joinPhase(got); p != successful {
			t.Errorf("join %s, want verified (Successful): %s", p, phases(got))
		}
	})

	for i, m := range names {
		// One program's update succeeded, the other's still runs: not verified; verified once it succeeds.
		t.Run(m+" still running", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ps := twoPrograms(t, kargo, c)
			seed(c, ps, i, []updateInfo{op(commit, "in-progress", t0, nil), op(other, "succeeded", t0-3600, nil)}, []updateInfo{op(commit, "succeeded", t0, nil)})
			got, seen := drive(t, c, ps, false, &step{
				when: and(phaseIs(i, ""), allBut(i, successful)),
				then: func(runs []*v1alpha1.AnalysisRun) {
					if p := joinPhase(runs); p != v1alpha1.AnalysisPhaseRunning {
						t.Errorf("with %s still running, join %s, want Running (not verified): %s", m, p, phases(runs))
					}
					ps[i].stackOf(c).setUpdates(op(commit, "succeeded", t0, nil), op(other, "succeeded", t0-3600, nil))
				},
			})
			if !seen {
				t.Fatalf("never saw %s running while the others succeeded: %s", m, phases(got))
			}
			if p := joinPhase(got); p != successful {
				t.Errorf("once %s's update succeeded too, join %s, want Successful: %s", m, p, phases(got))
			}
		})

		// One program's update failed: the join fails, even while the other still runs.
		t.Run(m+" failed while the other runs", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ps := twoPrograms(t, kargo, c)
			seed(c, ps, i, []updateInfo{op(commit, "failed", t0, nil)}, []updateInfo{op(commit, "in-progress", t0, nil)})
			var at []*v1alpha1.AnalysisRun
			got, seen := drive(t, c, ps, true, &step{when: func(runs []*v1alpha1.AnalysisRun) bool {
				at = runs
				return runs[i].Status.Phase.Completed()
			}})
			if !seen || got[i].Status.Phase != failed {
				t.Fatalf("%s's run did not fail: %s", m, phases(got))
			}
			if p := joinPhase(at); p != failed {
				t.Errorf("join %s, want Failed: %s", p, phases(at))
			}
		})
		// A program whose latest update is of another commit (here the other program's stack holds ours)
		// never counts: it stays running until its own commit's update succeeds, or fails at the timeout.
		t.Run(m+" updated another commit, then ours", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ps := twoPrograms(t, kargo, c)
			seed(c, ps, i, []updateInfo{op(other, "succeeded", t0+100, nil)}, []updateInfo{op(commit, "succeeded", t0, nil)})
			got, seen := drive(t, c, ps, false, &step{
				when: and(phaseIs(i, ""), allBut(i, successful)),
				then: func(runs []*v1alpha1.AnalysisRun) {
					if p := joinPhase(runs); p != v1alpha1.AnalysisPhaseRunning {
						t.Errorf("with %s's latest update of another commit, join %s, want Running: %s", m, p, phases(runs))
					}
					ps[i].stackOf(c).finishUpdate(op(commit, "succeeded", t0+200, nil))
				},
			})
			if !seen {
				t.Fatalf("never saw %s running while the others succeeded: %s", m, phases(got))
			}
			if p := joinPhase(got); p != successful {
				t.Errorf("join %s, want Successful once %s updated our commit: %s", p, m, phases(got))
			}
		})
		if i != len(names)-1 {
			continue // the 45 minutes until the timeout, for one program only
		}
		t.Run(m+" updated another commit only", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ps := twoPrograms(t, kargo, c)
			seed(c, ps, i, []updateInfo{op(other, "succeeded", t0+100, nil), op(other, "failed", t0, nil)}, []updateInfo{op(commit, "succeeded", t0, nil)})
			running := false
			got, _ := drive(t, c, ps, false, &step{when: func(runs []*v1alpha1.AnalysisRun) bool {
				if allBut(i, successful)(runs) && phaseIs(i, "")(runs) {
					running = running || joinPhase(runs) == v1alpha1.AnalysisPhaseRunning
				}
				return false
			}})
			if !running {
				t.Errorf("the join was never seen running while %s waited for its own commit: %s", m, phases(got))
			}
			if got[i].Status.Phase != failed || joinPhase(got) != failed {
				t.Errorf("%s %s, join %s; want both Failed at the timeout", m, got[i].Status.Phase, joinPhase(got))
			}
		})
	}
}
