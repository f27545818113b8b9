package promotion

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Several programs promoted by one pipeline: each declared preview or update stage is one Stage per program,
// and a join (a control-flow Stage) stands for a declared stage that others take Freight from.

// verificationArg is a Stage's literal verification argument, "" when it has none.
func verificationArg(t testing.TB, stage, name string) string {
	t.Helper()
	args, _, _ := unstructured.NestedSlice(kargoPlan(t).Object(t, "Stage", stage).Object, "spec", "verification", "args")
	for _, a := range args {
		if m, ok := a.(map[string]any); ok && m["name"] == name {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// organization is the Pulumi organization the AnalysisTemplates verify in.
func organization(t testing.TB) string {
	t.Helper()
	for _, tpl := range kargoPlan(t).OfKind("AnalysisTemplate") {
		args, _, _ := unstructured.NestedSlice(tpl.Object, "spec", "args")
		for _, a := range args {
			if m, ok := a.(map[string]any); ok && m["name"] == "organization" {
				if v, _ := m["value"].(string); v != "" {
					return v
				}
			}
		}
	}
	t.Fatal("no AnalysisTemplate names the Pulumi organization")
	return ""
}

// programDir is the folder of a Pulumi project at a commit: the one folder among the Warehouse's
// includePaths (what makes Freight) whose Pulumi.yaml names that project.
func programDir(t testing.TB, r *Remote, project, commit string) string {
	t.Helper()
	subs, _, _ := unstructured.NestedSlice(kargoPlan(t).OfKind("Warehouse")[0].Object, "spec", "subscriptions")
	paths, _, _ := unstructured.NestedStringSlice(subs[0].(map[string]any), "git", "includePaths")
	var found []string
	for _, dir := range paths {
		raw, ok := r.File(t, commit, path.Join(dir, "Pulumi.yaml"))
		if !ok {
			continue
		}
		var p struct {
			Name string `json:"name"`
		}
		if err := yaml.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatalf("%s/Pulumi.yaml at %s: %v", dir, commit, err)
		}
		if p.Name == project {
			found = append(found, dir)
		}
	}
	if len(found) != 1 {
		t.Fatalf("at %s, the Warehouse's includePaths %v hold %d folders of Pulumi project %s, want one", commit, paths, len(found), project)
	}
	return found[0]
}

// checkRunsItsProgram asserts a stage branch's Stack runs the stage's own program: from that program's
// folder at the Freight's commit (where its stack config is too), on the stack its verification checks.
func checkRunsItsProgram(t *testing.T, r *Remote, stage, commit string, manifest map[string]any) {
	t.Helper()
	project, stack := verificationArg(t, stage, "project"), verificationArg(t, stage, "stack")
	if project == "" || stack == "" {
		t.Errorf("%s: no verification argument names its program's project and stack", stage)
		return
	}
	dir := programDir(t, r, project, commit)
	if got, _, _ := unstructured.NestedString(manifest, "spec", "repoDir"); got != dir {
		t.Errorf("%s: the Stack runs repoDir %q, want its program's folder %s", stage, got, dir)
	}
	if _, ok := r.File(t, commit, path.Join(dir, "Pulumi."+stack+".yaml")); !ok {
		t.Errorf("%s: %s holds no Pulumi.%s.yaml at %s", stage, dir, stack, commit)
	}
	want := organization(t) + "/" + project + "/" + stack
	if got, _, _ := unstructured.NestedString(manifest, "spec", "stack"); got != want {
		t.Errorf("%s: the Stack runs stack %q, want %s (what its verification checks)", stage, got, want)
	}
}

// otherProgramStages are the program stages, in plan order, that run another program than the stage does.
func otherProgramStages(t testing.TB, stage string) []string {
	t.Helper()
	programs, _, _ := stageKinds(t)
	var out []string
	for _, s := range programs {
		if verificationArg(t, s, "project") != verificationArg(t, stage, "project") {
			out = append(out, s)
		}
	}
	// A pipeline of one program: its other stages, so the scenarios still cover a stage of their own.
	for _, s := range programs {
		if len(out) == 0 && s != stage {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = []string{stage}
	}
	return out
}

func pipelineOf(t testing.TB) *Pipeline {
	t.Helper()
	p, err := NewPipeline(kargoPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// joinOfPrograms is the first join of the plan whose sources are program stages of two or more Pulumi
// projects: a declared environment stage that several programs run in, and their stages.
func joinOfPrograms(t testing.TB) (join string, members []string) {
	t.Helper()
	programs, _, joins := stageKinds(t)
	for _, j := range joins {
		members = pipelineOf(t).Stage(j).Upstream()
		projects := map[string]bool{}
		all := true
		for _, m := range members {
			all = all && slices.Contains(programs, m)
			projects[verificationArg(t, m, "project")] = true
		}
		if all && len(projects) >= 2 {
			return j, members
		}
	}
	t.Skip("NOT RUN: the pipeline promotes one program, so no join takes Freight from the stages of two")
	return "", nil
}

// Joins are what Kargo's control-flow Stages are: no promotion steps, no verification, no Application
// (nothing to deploy), Freight taken only once verified in every upstream Stage.
func TestJoinsAreControlFlowStages(t *testing.T) {
	t.Parallel()
	programs, gates, joins := stageKinds(t)
	if len(joins) == 0 || len(programs) == 0 || len(gates) == 0 {
		t.Fatalf("program stages %v, gates %v, joins %v: the pipeline has each", programs, gates, joins)
	}
	p := pipelineOf(t)
	project := kargoPlan(t).OfKind("Project")[0].GetName()
	for _, j := range joins {
		stage := kargoPlan(t).Object(t, "Stage", j)
		if _, found, _ := unstructured.NestedFieldNoCopy(stage.Object, "spec", "verification"); found {
			t.Errorf("join %s verifies: a control-flow Stage runs no AnalysisRun", j)
		}
		for _, a := range kargoPlan(t).OfKind("Application") {
			if a.GetAnnotations()["kargo.akuity.io/authorized-stage"] == project+":"+j {
				t.Errorf("Application %s is authorized for join %s, which deploys nothing", a.GetName(), j)
			}
		}
		for _, req := range p.Stage(j).Requested {
			if req.Sources.AvailabilityStrategy != "All" || req.Sources.Direct || len(req.Sources.Stages) == 0 {
				t.Errorf("join %s takes Freight from %+v; a join takes it once verified in all of its program stages", j, req.Sources)
			}
		}
		if len(p.Downstream(j)) == 0 {
			t.Errorf("nothing takes Freight from join %s", j)
		}
	}
	for _, s := range programs {
		appOf(t, s) // fails the test without one
	}
}

// One Freight (one commit) through the two-program pipeline up to one declared environment stage: each
// program stage is promoted as soon as Kargo lets it (the Stage graph is where each program's dependencies
// are), so a program runs in an environment only after the programs it depends on were updated there; each
// stage branch then holds exactly what that stage runs; and the join verifies the Freight only once every
// program's stage has.
func TestOneFreightThroughEveryProgram(t *testing.T) {
	t.Parallel()
	join, members := joinOfPrograms(t)
	p := pipelineOf(t)
	programs, _, _ := stageKinds(t)
	r := newRemote(t)
	pulumiUp(t, r)
	f := freightAt(t, r, r.A)
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(f))
	v := p.NewVerifications(f)
	route := p.Order(p.Ancestors(join))

	if err := v.Promotable(f.Name, join); err == nil {
		t.Errorf("join %s could be promoted into", join)
	}
	round := map[string]int{}
	var branches []string
	for n := 0; ; n++ {
		// Every Stage of the route the Freight is available to now: what auto-promotion (or an approver, at
		// a gate) promotes next.
		var ready []string
		for _, s := range route {
			if _, done := round[s]; !done && v.Available(f.Name, s) {
				ready = append(ready, s)
			}
		}
		if len(ready) == 0 {
			break
		}
		for _, s := range ready {
			round[s] = n
			if slices.Contains(programs, s) {
				kargoCreatedBranch(t, r, appOf(t, s).Branch)
			}
			res, err := promoteWith(t, e, s, f)
			if err != nil {
				t.Fatalf("round %d: promoting into %s: %v", n, s, err)
			}
			if slices.Contains(programs, s) {
				checkPromoted(t, r, s, r.A, res)
				checkOnlyKargo(t, r, s, res)
				branches = append(branches, s)
			}
			if err := v.Verified(f.Name, s); err != nil {
				t.Fatal(err)
			}
			verifiedAll := true
			for _, m := range members {
				verifiedAll = verifiedAll && v.VerifiedIn(f.Name, m)
			}
			if got := v.VerifiedIn(f.Name, join); got != verifiedAll {
				t.Errorf("after %s verified the Freight, join %s has it verified: %v; want %v (every one of %v)", s, join, got, verifiedAll, members)
			}
		}
	}
	for _, s := range route {
		if _, done := round[s]; !done && !p.Stage(s).ControlFlow {
			t.Errorf("the Freight never became available to %s (rounds %v)", s, round)
		}
	}
	if !v.VerifiedIn(f.Name, join) {
		t.Fatalf("join %s did not verify the Freight after %v", join, route)
	}
	// Dependency order: a program stage that takes Freight (through others) from another program's stage
	// of the same declared stage runs only after it.
	dependent := 0
	for _, a := range members {
		for _, b := range members {
			if a != b && slices.Contains(p.Ancestors(b), a) {
				dependent++
				if round[a] >= round[b] {
					t.Errorf("%s (round %d) was promoted no later than %s (round %d), which depends on it", b, round[b], a, round[a])
				}
			}
		}
	}
	if dependent == 0 {
		t.Errorf("no program of %s depends on another (%v): the scenario needs one that does (kargo/pipeline.ts, dependsOn)", join, members)
	}
	// Each program runs from its own folder: no two of the declared stage's Stacks run the same one.
	dirs := map[string]string{}
	for _, m := range members {
		dir := programDir(t, r, verificationArg(t, m, "project"), r.A)
		if other, seen := dirs[dir]; seen {
			t.Errorf("%s and %s both run %s", m, other, dir)
		}
		dirs[dir] = m
	}
	checkBranches(t, r, branches...)
	t.Logf("promotion order: %s", orderByRound(route, round))
}

func orderByRound(route []string, round map[string]int) string {
	var parts []string
	for _, s := range route {
		if n, ok := round[s]; ok {
			parts = append(parts, fmt.Sprintf("%d:%s", n, s))
		}
	}
	return strings.Join(parts, " ")
}

// promoteWith runs the stage's promotion of f with an engine shared across stages (one Freight store).
