package pulumiengine

import (
	"testing"
)

// Every program of the corpus, each commit through the real engine: the Job's classes are the intended ones,
// so each environment stops exactly where it should (checkCommit), and an internal-only program stops no
// environment that stops on neither cost nor every change.
func TestCorpus(t *testing.T) {
	for _, p := range corpus() {
		t.Run(p.name, func(t *testing.T) {
			verdicts := checkHistory(t, newCloud(), p.commits...)
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
							policy.Lines)
					}
				}
			}
		})
	}
}
