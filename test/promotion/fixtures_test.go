package promotion

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// kargoPlan is the kargo project of the offline plan, loaded once per test binary.
func kargoPlan(t testing.TB) *plan.Project {
	t.Helper()
	kargoOnce.Do(func() { kargoProject = plan.Load(t, "kargo") })
	if kargoProject == nil {
		t.Fatal("the kargo plan did not load")
	}
	return kargoProject
}

var (
	kargoOnce    sync.Once
	kargoProject *plan.Project
)

// repoURL is the repository the Warehouse subscribes to: the one Freight comes from and stage branches live in.
func repoURL(t testing.TB) string {
	t.Helper()
	w := kargoPlan(t).OfKind("Warehouse")
	if len(w) != 1 {
		t.Fatalf("the kargo plan has %d Warehouses, the harness expects one", len(w))
	}
	subs, _, _ := unstructured.NestedSlice(w[0].Object, "spec", "subscriptions")
	url, _, _ := unstructured.NestedString(subs[0].(map[string]any), "git", "repoURL")
	return url
}

// stageKinds sorts the plan's Stages three ways. A Stage with no promotionTemplate steps is a control-flow
// Stage, a join (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go IsControlFlow): no Promotion runs there,
// Freight is verified in it once it is available (pkg/controller/stages/control_flow_stages.go). Of the
// others, program stages run the PromotionTask (one program in one environment); gates run anything else.
func stageKinds(t testing.TB) (programs, gates, joins []string) {
	t.Helper()
	for _, s := range kargoPlan(t).OfKind("Stage") {
		steps, _, _ := unstructured.NestedSlice(s.Object, "spec", "promotionTemplate", "spec", "steps")
		task := false
		for _, st := range steps {
			if _, ok := st.(map[string]any)["task"]; ok {
				task = true
			}
		}
		switch {
		case len(steps) == 0:
			joins = append(joins, s.GetName())
		case task:
			programs = append(programs, s.GetName())
		default:
			gates = append(gates, s.GetName())
		}
	}
	return programs, gates, joins
}

// environmentStages are the Stages whose promotion runs a PromotionTask (each program's stage of a declared
// preview or update stage); gates are those whose promotion runs other steps. Joins are neither.
func environmentStages(t testing.TB) (envs, gates []string) {
	t.Helper()
	envs, gates, _ = stageKinds(t)
	return envs, gates
}

// stageApp is what Argo CD tracks for a stage: the Application authorized for it, its branch and manifest,
// and an update stage's drift check beside it (Drift, "" for none).
type stageApp struct {
	Name, Namespace, Branch, Manifest, Drift string
}

func appOf(t testing.TB, stage string) stageApp { t.Helper(); return appIn(t, kargoPlan(t), stage) }

// appIn is appOf in another pipeline's kargo project (a generated fork's).
func appIn(t testing.TB, k *plan.Project, stage string) stageApp {
	t.Helper()
	project := k.OfKind("Project")[0].GetName()
	for _, a := range k.OfKind("Application") {
		if a.GetAnnotations()["kargo.akuity.io/authorized-stage"] == project+":"+stage {
			branch, _, _ := unstructured.NestedString(a.Object, "spec", "source", "targetRevision")
			include, _, _ := unstructured.NestedString(a.Object, "spec", "source", "directory", "include")
			files := plan.IncludedFiles(include)
			app := stageApp{Name: a.GetName(), Namespace: a.GetNamespace(), Branch: branch, Manifest: files[0]}
			if len(files) > 1 {
				app.Drift = files[1]
			}
			return app
		}
	}
	t.Fatalf("no Application is authorized for stage %s", stage)
	return stageApp{}
}

// git runs git in dir with a fixed identity and returns its trimmed output; the test fails on an error.
func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, stderr.String())
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// Remote is the pipeline's GitHub repository as a bare repository on disk: main holds this repository's
// own files (workflows included), at two commits, A and B (B changes every Stack template).
type Remote struct {
	Dir  string
	URL  string
	A, B string
	// handMade is every path someone committed to a stage branch by hand.
	handMade map[string]bool
}

// commitByHand commits files to a branch of the remote as a person would, outside any promotion.
func (r *Remote) commitByHand(t *testing.T, branch string, files map[string]string) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "hand")
	gitRun(t, filepath.Dir(work), "clone", "--quiet", "--branch", branch, r.Dir, work)
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if r.handMade == nil {
			r.handMade = map[string]bool{}
		}
		r.handMade[p] = true
	}
	gitRun(t, work, "add", "-A")
	gitRun(t, work, "commit", "--quiet", "-m", "A fix by hand")
	gitRun(t, work, "push", "--quiet", "origin", branch)
}

func newRemote(t *testing.T) *Remote {
	t.Helper()
	mainOnce.Do(func() { mainRepo, mainErr = buildTemplate(repoURL(t)) })
	if mainErr != nil {
		t.Fatalf("the template repository: %v", mainErr)
	}
	r := &Remote{Dir: filepath.Join(t.TempDir(), "remote.git"), URL: mainRepo.URL, A: mainRepo.A, B: mainRepo.B}
	gitRun(t, filepath.Dir(r.Dir), "clone", "--quiet", "--bare", mainRepo.Dir, r.Dir)
	return r
}

var (
	mainOnce sync.Once
	mainRepo *Remote
	mainErr  error
)

// buildTemplate makes the repository every test clones: main with this repository's files at A, and B.
func buildTemplate(url string) (*Remote, error) {
	base, err := os.MkdirTemp("", "promotion-remote-")
	if err != nil {
		return nil, err
	}
	r := &Remote{Dir: filepath.Join(base, "remote.git"), URL: url}
	work := filepath.Join(base, "main")
	root := plan.RepoRoot()
	steps := [][]string{{base, "init", "--quiet", "--bare", "-b", "main", r.Dir}, {base, "init", "--quiet", "-b", "main", work}}
	for _, s := range steps {
		if _, err := gitErr(s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	list, err := gitErr(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Split(list, "\x00") {
		if fi, err := os.Lstat(filepath.Join(root, f)); f == "" || err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a link such as node_modules
		}
		raw, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(work, filepath.Dir(f)), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(work, f), raw, 0o644); err != nil {
			return nil, err
		}
	}
	commit := func(msg string) (string, error) {
		if _, err := gitErr(work, "add", "-A"); err != nil {
			return "", err
		}
		if _, err := gitErr(work, "commit", "--quiet", "-m", msg); err != nil {
			return "", err
		}
		return gitErr(work, "rev-parse", "HEAD")
	}
	if r.A, err = commit("The platform and the promoted program"); err != nil {
		return nil, err
	}
	templates, _ := filepath.Glob(filepath.Join(work, "stacks", "*.yaml"))
	if len(templates) == 0 {
		return nil, fmt.Errorf("no Stack templates in stacks/")
	}
	for _, f := range templates {
		raw, _ := os.ReadFile(f)
		changed := strings.Replace(string(raw), "workspaceReclaimPolicy: Delete", "workspaceReclaimPolicy: Retain", 1)
		if changed == string(raw) {
			return nil, fmt.Errorf("%s: no workspaceReclaimPolicy to change for Freight B", f)
		}
		if err := os.WriteFile(f, []byte(changed), 0o644); err != nil {
			return nil, err
		}
	}
	if r.B, err = commit("Keep failed workspaces"); err != nil {
		return nil, err
	}
	if _, err := gitErr(work, "push", "--quiet", r.Dir, "main"); err != nil {
		return nil, err
	}
	return r, nil
}

// Ref is the commit a branch of the remote points at, "" if there is no such branch.
func (r *Remote) Ref(t testing.TB, branch string) string {
	t.Helper()
	out, err := gitErr(r.Dir, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return out
}

// Tree is every file at a commit, path → content.
func (r *Remote) Tree(t testing.TB, rev string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, p := range strings.Split(gitRun(t, r.Dir, "ls-tree", "-r", "-z", "--name-only", rev), "\x00") {
		if p != "" {
			files[p] = gitRun(t, r.Dir, "show", rev+":"+p) + "\n"
		}
	}
	return files
}

// File is one file at a commit ("" and false when the commit holds no such file).
func (r *Remote) File(t testing.TB, rev, path string) (string, bool) {
	t.Helper()
	out, err := gitErr(r.Dir, "show", rev+":"+path)
	if err != nil {
		return "", false
	}
	return out + "\n", true
}

// Commit is one commit of a branch's history.
type Commit struct {
	ID, Subject, Author string
	// Changed is every path the commit adds, changes or removes against its first parent (or, for a root
	// commit, every path it holds).
	Changed []string
}

// History is the branch's commits, newest first.
func (r *Remote) History(t testing.TB, branch string) []Commit {
	t.Helper()
	var out []Commit
	for _, line := range strings.Split(gitRun(t, r.Dir, "log", "--first-parent", "--format=%H%x00%s%x00%an <%ae>", branch), "\n") {
		parts := strings.Split(line, "\x00")
		c := Commit{ID: parts[0], Subject: parts[1], Author: parts[2]}
		changed := gitRun(t, r.Dir, "diff-tree", "--root", "--no-commit-id", "-r", "-z", "--name-only", c.ID)
		for _, p := range strings.Split(changed, "\x00") {
			if p != "" {
				c.Changed = append(c.Changed, p)
			}
		}
		sort.Strings(c.Changed)
		out = append(out, c)
	}
	return out
}

// pulumiUp does to the remote what `pulumi up` of the kargo project does to the repository: each
// github RepositoryFile the plan declares, on its branch (created from its source branch when
// autocreateBranch is set), and each github Branch from its source branch.
func pulumiUp(t *testing.T, r *Remote) {
	t.Helper()
	k := kargoPlan(t)
	for _, b := range k.ResourcesOfType("github:index/branch:Branch") {
		source, _ := b.Inputs["sourceBranch"].(string)
		if source == "" {
			source = "main"
		}
		gitRun(t, r.Dir, "branch", b.Inputs["branch"].(string), source)
	}
	for _, f := range k.ResourcesOfType("github:index/repositoryFile:RepositoryFile") {
		branch, _ := f.Inputs["branch"].(string)
		if branch == "" {
			branch = "main"
		}
		work := filepath.Join(t.TempDir(), "file")
		gitRun(t, filepath.Dir(work), "clone", "--quiet", r.Dir, work)
		if r.Ref(t, branch) == "" {
			if auto, _ := f.Inputs["autocreateBranch"].(bool); !auto {
				t.Fatalf("%s: branch %s does not exist and autocreateBranch is off", f.Name, branch)
			}
			source, _ := f.Inputs["autocreateBranchSourceBranch"].(string)
			if source == "" {
				source = "main"
			}
			gitRun(t, work, "checkout", "--quiet", "-b", branch, "origin/"+source)
		} else {
			gitRun(t, work, "checkout", "--quiet", branch)
		}
		path := filepath.Join(work, f.Inputs["file"].(string))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(fmt.Sprint(f.Inputs["content"])), 0o644); err != nil {
			t.Fatal(err)
		}
		gitRun(t, work, "add", "-A")
		msg, _ := f.Inputs["commitMessage"].(string)
		gitRun(t, work, "commit", "--quiet", "-m", msg)
		gitRun(t, work, "push", "--quiet", "origin", branch)
	}
}

// freightAt is Freight of the Warehouse's origin holding that commit of main.
func freightAt(t testing.TB, r *Remote, commit string) *Freight {
	t.Helper()
	w := kargoPlan(t).OfKind("Warehouse")[0]
	return &Freight{
		Name:    commit, // Freight names are 40 hex digits, like a commit ID
		Alias:   "freight-" + commit[:7],
		Origin:  FreightOrigin{Kind: "Warehouse", Name: w.GetName()},
		Commits: []GitCommit{{RepoURL: r.URL, ID: commit, Branch: "main", Message: "test"}},
	}
}

// promote runs the stage's promotion of f against the remote, as Kargo's controller would.
func promote(t *testing.T, r *Remote, stage string, f *Freight) (*Result, error) {
	t.Helper()
	e := NewEngine(kargoPlan(t), map[string]string{r.URL: r.Dir}, NewFreightStore(f))
	previewedEverywhere(t, e, f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return e.Promote(ctx, Promotion{
		Name:    fmt.Sprintf("%s.%d", stage, time.Now().UnixNano()),
		Stage:   stage,
		Freight: f,
		Actor:   "controller:kargo-controller",
		WorkDir: t.TempDir(),
	})
}

// kargoAuthor is the controller's git identity as a commit shows it: the kargo release's controller.gitClient
// over Kargo's chart defaults at our pin (controllerGitUser), not a name the harness makes up.
func kargoAuthor(t testing.TB) string {
	t.Helper()
	u, err := controllerGitUser(kargoPlan(t))
	if err != nil {
		t.Fatal(err)
	}
	return u.Name + " <" + u.Email + ">"
}
