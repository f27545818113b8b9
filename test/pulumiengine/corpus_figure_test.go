package pulumiengine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	corpusOnce sync.Once
	corpusRuns [][]verdict
)

// corpusVerdicts is the Job's verdicts on every commit of the corpus, by program: the engine runs each
// program's history once for the test and the figure (one node for all).
func corpusVerdicts(t *testing.T) [][]verdict {
	corpusOnce.Do(func() {
		var cases []verdictCase
		var counts []int
		for _, p := range corpus() {
			runs := history(t, newCloud(), p.commits...)
			cases, counts = append(cases, runs...), append(counts, len(runs))
		}
		all := judge(t, cases...)
		for _, n := range counts {
			corpusRuns, all = append(corpusRuns, all[:n]), all[n:]
		}
	})
	if corpusRuns == nil {
		t.Fatal("the corpus did not run (see the first test that ran it)")
	}
	return corpusRuns
}

// Every program of the corpus, each commit through the real engine: the Job's classes are the intended ones,
// so each environment stops exactly where it should (checkCommit), and an internal-only program stops no
// environment that stops on neither cost nor every change.
func TestCorpus(t *testing.T) {
	t.Parallel()
	all := corpusVerdicts(t)
	for k, p := range corpus() {
		t.Run(p.name, func(t *testing.T) {
			verdicts := all[k]
			for i, c := range p.commits {
				checkCommit(t, c, verdicts[i])
			}
			if !p.internal {
				return
			}
			for i, v := range verdicts {
				for stopOn, policy := range v.Preview.Policies {
					if stopOn == "all" || overlaps([]string{"cost"}, splitStopOn(stopOn)) {
						continue
					}
					if len(policy.Stopped) > 0 {
						t.Errorf("%s: an internal-only program stops STOP_ON=%q: %v", p.commits[i].name, stopOn,
							names(policy.Stopped))
					}
				}
			}
		})
	}
}

// figure is the corpus's stops in each environment of the plan (and where every change stops), commit by
// commit, and the count of stops, false stops (a stop no intended class explains) and missed ones.
func figure(t *testing.T) string {
	policies := append(environmentPolicies(t), policy{"stopEveryPreview", "all"})
	var b strings.Builder
	b.WriteString("The corpus: typical programs, each a first deploy and a routine change through the engine, with the " +
		"type tokens, unknowns and replacements pulumi-aws and pulumi-kubernetes give them (`test/pulumiengine/corpus_test.go`). " +
		"Each cell is what the environment's preview stage decides:\n\n| program | commit |")
	for _, p := range policies {
		fmt.Fprintf(&b, " `%s` |", p.environment)
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" --- |", len(policies)) + "\n")
	stopped := make([]int, len(policies))
	falseStops, missed, previews := 0, 0, 0
	all := corpusVerdicts(t)
	for k, prog := range corpus() {
		for i, v := range all[k] {
			c := prog.commits[i]
			previews++
			fmt.Fprintf(&b, "| %s | %s |", prog.name, c.name)
			for j, p := range policies {
				got := v.Preview.Policies[p.stopOn].Stopped
				want := map[string]bool{}
				for _, s := range v.Preview.Operations {
					if p.stopOn == "all" || overlaps(c.want[opName(s)], splitStopOn(p.stopOn)) {
						want[opName(s)] = true
					}
				}
				classes := map[string]bool{}
				for _, s := range got {
					if !want[opName(s)] {
						falseStops++
					}
					delete(want, opName(s))
					for _, cl := range s.Classes {
						if contains(splitStopOn(p.stopOn), cl) {
							classes[cl] = true
						}
					}
				}
				missed += len(want)
				if len(got) == 0 {
					b.WriteString(" passes |")
					continue
				}
				stopped[j]++
				why := ""
				if p.stopOn != "all" {
					why = " (" + strings.Join(slices.Sorted(maps.Keys(classes)), ", ") + ")"
				}
				fmt.Fprintf(&b, " stops: %d resource(s)%s |", len(got), why)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nPreviews stopped, of " + fmt.Sprint(previews) + " (" + fmt.Sprint(len(corpus())) + " programs):")
	for j, p := range policies {
		fmt.Fprintf(&b, " `%s` (stops on %s) %d;", p.environment, stopOnWords(p.stopOn), stopped[j])
	}
	fmt.Fprintf(&b, " false stops (a stopped resource no intended class explains): %d; missed stops: %d.\n",
		falseStops, missed)
	return b.String()
}

func stopOnWords(stopOn string) string {
	switch stopOn {
	case "all":
		return "every change"
	case "":
		return "nothing"
	}
	return strings.ReplaceAll(stopOn, ",", ", ")
}
