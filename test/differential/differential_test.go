package differential

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/akuity/kargo/pkg/pattern"
)

// inputsPerKind is how many selectors, regexps and branch names one run generates; DIFFERENTIAL_COUNT and
// DIFFERENTIAL_SEED search further (e.g. DIFFERENTIAL_COUNT=20000 DIFFERENTIAL_SEED=7 go test ./differential/).
func inputs(t *testing.T) input {
	count, seed := 1500, uint64(1)
	if v, err := strconv.Atoi(os.Getenv("DIFFERENTIAL_COUNT")); err == nil {
		count = v
	}
	if v, err := strconv.ParseUint(os.Getenv("DIFFERENTIAL_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d generated inputs per kind, seed %d", count, seed)
	return generate(seed, count)
}

var (
	verdictsOnce sync.Once
	in           input
	verdicts     output
)

func load(t *testing.T) (input, output) {
	verdictsOnce.Do(func() {
		in = inputs(t)
		verdicts = ours(t, in)
	})
	return in, verdicts
}

// isOurBaseDirRule: ours refuses base directories Kargo would accept but that can never select a file of the
// repository (absolute, or climbing out with ".."): a stricter rule of ours, not a disagreement.
func isOurBaseDirRule(selector string) bool {
	return !strings.HasPrefix(selector, "glob:") && !strings.HasPrefix(selector, "regex:") &&
		!strings.HasPrefix(selector, "regexp:") &&
		(path.IsAbs(selector) || filepath.IsAbs(selector) || strings.HasPrefix(selector, `\`) ||
			(len(selector) > 1 && selector[1] == ':') || strings.Contains("/"+selector+"/", "/../"))
}

func TestWarehousePathFiltersAgreeWithKargo(t *testing.T) {
	in, ours := load(t)
	disagreements := 0
	for i, selector := range in.Selectors {
		matcher, err := pattern.ParsePathPattern(selector)
		got := ours.Selectors[i]
		switch {
		case err != nil && got.Error == "":
			t.Errorf("%q: Kargo refuses it (%v), ours accepts it", selector, err)
			disagreements++
		case err == nil && got.Error != "":
			if !got.Stricter && !isOurBaseDirRule(selector) {
				t.Errorf("%q: Kargo accepts it, ours refuses it: %s", selector, got.Error)
				disagreements++
			}
		case err == nil:
			for j, file := range in.Files {
				if want := matcher.Matches(file); got.Matches[j] != want {
					t.Errorf("%q on %q: Kargo says %v, ours %v", selector, file, want, got.Matches[j])
					disagreements++
					break
				}
			}
		}
		if disagreements > 40 {
			t.Fatal("too many disagreements to list")
		}
	}
}

func TestRegexpsAgreeWithGo(t *testing.T) {
	in, ours := load(t)
	disagreements := 0
	for i, source := range in.Regexps {
		compiled, err := regexp.Compile(source)
		got := ours.Regexps[i]
		switch {
		case err != nil && got.Error == "":
			t.Errorf("%q: Go refuses it (%v), ours accepts it", source, err)
			disagreements++
		case err == nil && got.Error != "":
			t.Errorf("%q: Go accepts it, ours refuses it: %s", source, got.Error)
			disagreements++
		case err == nil:
			for j, file := range in.Files {
				if want := compiled.MatchString(file); got.Matches[j] != want {
					t.Errorf("%q on %q: Go says %v, ours %v", source, file, want, got.Matches[j])
					disagreements++
					break
				}
			}
		}
		if disagreements > 40 {
			t.Fatal("too many disagreements to list")
		}
	}
}

// The Warehouse branch must pass Kargo's subscription schema (akuity/kargo v1.11.2
// pkg/subscription/schemas/git.json) and git itself; ours also refuses the stage branches promotions write.
func TestBranchNamesAgreeWithKargoAndGit(t *testing.T) {
	in, ours := load(t)
	schema := kargoBranchSchema(t)
	for i, branch := range in.Branches {
		kargoAccepts := len(branch) >= schema.minLength && len(branch) <= schema.maxLength && schema.pattern.MatchString(branch)
		gitAccepts := exec.Command("git", "check-ref-format", "--branch", branch).Run() == nil
		want := kargoAccepts && gitAccepts && !strings.HasPrefix(branch, "stage/")
		got := len(ours.Branches[i].Problems) == 0
		if got != want {
			t.Errorf("%q: Kargo's schema %v, git %v; ours accepts it: %v (%v)", branch, kargoAccepts, gitAccepts, got, ours.Branches[i].Problems)
		}
	}
}

type branchSchema struct {
	pattern              *regexp.Regexp
	minLength, maxLength int
}

func kargoBranchSchema(t *testing.T) branchSchema {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/akuity/kargo").Output()
	if err != nil {
		t.Fatalf("locating Kargo's module: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "subscription", "schemas", "git.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Branch struct {
				Pattern   string `json:"pattern"`
				MinLength int    `json:"minLength"`
				MaxLength int    `json:"maxLength"`
			} `json:"branch"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	b := schema.Properties.Branch
	return branchSchema{regexp.MustCompile(b.Pattern), b.MinLength, b.MaxLength}
}
