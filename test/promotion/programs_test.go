package promotion

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
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
	if len(out) == 0 {
		t.Fatalf("every program stage runs the program %s does: the pipeline promotes one program", stage)
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
	t.Fatal("no join takes Freight from the stages of two or more programs")
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
			if req.Sources.AvailabilityStrategy != "All" || req.Sources.Direct || len(req.Sources.Stages) < 2 {
				t.Errorf("join %s takes Freight from %+v; a join takes it once verified in all of two or more Stages", j, req.Sources)
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
func promoteWith(t *testing.T, e *Engine, stage string, f *Freight) (*Result, error) {
	t.Helper()
	return e.Promote(t.Context(), Promotion{
		Name: stage + "." + f.Alias, Stage: stage, Freight: f, Actor: "email:alice@example.com", WorkDir: t.TempDir(),
	})
}

// pass moves the Freight through the stages in order, as far as the model goes: each verifies it, after a
// `kargo approve` where it is not available otherwise (how a Freight skips a Stage); joins verify by
// themselves.
func pass(t *testing.T, v *Verifications, freight string, stages ...string) {
	t.Helper()
	for _, s := range stages {
		if v.Pipeline.Stage(s).ControlFlow {
			continue
		}
		if v.Promotable(freight, s) != nil {
			if err := v.Approve(freight, s); err != nil {
				t.Fatal(err)
			}
		}
		if err := v.Verified(freight, s); err != nil {
			t.Fatal(err)
		}
	}
}

// A gate downstream of joins is available to Freight only once every program stage of each upstream
// environment verified that same Freight: a program stage short (even one skipped by approvals downstream
// of it), or the stages of one join split between two Freight, keep it closed.
func TestGateAfterJoinsWaitsForEveryProgramStage(t *testing.T) {
	t.Parallel()
	p := pipelineOf(t)
	programs, gates, _ := stageKinds(t)
	origin := FreightOrigin{Kind: "Warehouse", Name: kargoPlan(t).OfKind("Warehouse")[0].GetName()}
	f1 := &Freight{Name: strings.Repeat("1", 40), Origin: origin}
	f2 := &Freight{Name: strings.Repeat("2", 40), Origin: origin}
	tested := 0
	for _, g := range gates {
		joins := p.Stage(g).Upstream()
		if len(joins) == 0 || slices.ContainsFunc(joins, func(s string) bool { return !p.Stage(s).ControlFlow }) {
			continue
		}
		tested++
		route := p.Order(p.Ancestors(g))
		// memberOf: each program stage of an upstream environment, and its join.
		memberOf := map[string]string{}
		for _, j := range joins {
			for _, m := range p.Stage(j).Upstream() {
				if !slices.Contains(programs, m) {
					t.Errorf("join %s takes Freight from %s, which is no program stage", j, m)
				}
				memberOf[m] = j
			}
		}
		except := func(skip string) []string {
			return slices.DeleteFunc(slices.Clone(route), func(s string) bool { return s == skip })
		}
		t.Run(g+"/every program stage verified it", func(t *testing.T) {
			v := p.NewVerifications(f1)
			pass(t, v, f1.Name, route...)
			if !v.Available(f1.Name, g) {
				t.Errorf("after %v verified the Freight, %s is not available to it", route, g)
			}
			for _, j := range joins {
				if !v.VerifiedIn(f1.Name, j) {
					t.Errorf("join %s did not verify it", j)
				}
			}
		})
		members := slices.Sorted(maps.Keys(memberOf))
		for _, m := range members {
			j := memberOf[m]
			t.Run(g+"/all but "+m, func(t *testing.T) {
				v := p.NewVerifications(f1, f2)
				pass(t, v, f1.Name, except(m)...)
				if v.VerifiedIn(f1.Name, j) {
					t.Errorf("join %s verified the Freight without %s", j, m)
				}
				for _, other := range joins {
					if other != j && !v.VerifiedIn(f1.Name, other) {
						t.Errorf("join %s did not verify the Freight every one of its stages verified", other)
					}
				}
				if v.Available(f1.Name, g) {
					t.Errorf("%s is available to Freight %s did not verify", g, m)
				}
				// Another Freight verified only there does not complete the join either.
				pass(t, v, f2.Name, m)
				if v.VerifiedIn(f2.Name, j) || v.VerifiedIn(f1.Name, j) || v.Available(f1.Name, g) || v.Available(f2.Name, g) {
					t.Errorf("the stages of join %s verified different Freight, and the join or %s let one through", j, g)
				}
				pass(t, v, f1.Name, m)
				if !v.VerifiedIn(f1.Name, j) || !v.Available(f1.Name, g) {
					t.Errorf("once %s verified it too, %s is not available to the Freight", m, g)
				}
				if v.Available(f2.Name, g) {
					t.Errorf("%s is available to Freight verified in %s alone", g, m)
				}
			})
		}
		// Kargo makes Freight approved for a join verified there (ListFreightAvailableToStage lists approved
		// Freight too): which is why no role may promote (and so approve) into a join (test/kube, reach).
		t.Run(g+"/approved for a join", func(t *testing.T) {
			v := p.NewVerifications(f1)
			for _, j := range joins {
				if err := v.Approve(f1.Name, j); err != nil {
					t.Fatal(err)
				}
			}
			if !v.Available(f1.Name, g) {
				t.Errorf("Freight approved for %v is not available to %s", joins, g)
			}
		})
	}
	if tested == 0 {
		t.Fatal("no gate takes Freight from joins only")
	}
}

// The model follows Kargo's Stage.IsFreightAvailable on the request shapes Kargo knows, not only the plan's.
func TestAvailabilityFollowsKargo(t *testing.T) {
	t.Parallel()
	stage := func(name string, controlFlow bool, sources string) string {
		steps := "\n  promotionTemplate:\n    spec:\n      steps:\n      - uses: fake"
		if controlFlow {
			steps = ""
		}
		return fmt.Sprintf("apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: %s\nspec:%s\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: %s\n", name, steps, sources)
	}
	docs := strings.Join([]string{
		stage("a", false, "{direct: true}"),
		stage("b", false, "{direct: true}"),
		stage("oneof", false, "{stages: [a, b]}"),
		stage("all", false, "{stages: [a, b], availabilityStrategy: All}"),
		stage("join", true, "{stages: [a, b], availabilityStrategy: All}"),
		stage("after", false, "{stages: [join]}"),
	}, "---\n")
	objects, err := plan.Documents([]byte(docs))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPipeline(&plan.Project{Name: "synthetic", Objects: objects})
	if err != nil {
		t.Fatal(err)
	}
	f := &Freight{Name: "f", Origin: FreightOrigin{Kind: "Warehouse", Name: "w"}}
	elsewhere := &Freight{Name: "g", Origin: FreightOrigin{Kind: "Warehouse", Name: "other"}}
	v := p.NewVerifications(f, elsewhere)
	check := func(when string, want map[string]bool) {
		t.Helper()
		for s, w := range want {
			if got := v.Available(f.Name, s); got != w {
				t.Errorf("%s: available to %s: %v, want %v", when, s, got, w)
			}
		}
	}
	check("nothing verified", map[string]bool{"a": true, "oneof": false, "all": false, "join": false, "after": false})
	if v.Available(elsewhere.Name, "a") {
		t.Error("Freight of another origin is available")
	}
	if err := v.Verified(f.Name, "a"); err != nil {
		t.Fatal(err)
	}
	check("verified in a", map[string]bool{"oneof": true, "all": false, "join": false, "after": false})
	if err := v.Approve(f.Name, "all"); err != nil {
		t.Fatal(err)
	}
	check("approved for all", map[string]bool{"all": true, "join": false})
	if err := v.Verified(f.Name, "b"); err != nil {
		t.Fatal(err)
	}
	check("verified in a and b", map[string]bool{"join": true, "after": true})
	if !v.VerifiedIn(f.Name, "join") {
		t.Error("the control-flow Stage did not verify Freight available to it")
	}
	if err := v.Promotable(f.Name, "join"); err == nil {
		t.Error("a control-flow Stage is promotable")
	}
	if err := v.Verified(f.Name, "join"); err != nil {
		t.Errorf("verifying Freight a join already verified: %v", err)
	}
	if err := v.Verified(elsewhere.Name, "oneof"); err == nil {
		t.Error("Freight not available to a Stage was verified there")
	}
	if _, err := NewPipeline(&plan.Project{Objects: mustDocs(t, stage("x", false, "{stages: [a], requiredSoakTime: 1h}"))}); err == nil {
		t.Error("a request with a field the model does not follow was read")
	}
}

func mustDocs(t *testing.T, raw string) []*unstructured.Unstructured {
	t.Helper()
	objects, err := plan.Documents([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return objects
}
