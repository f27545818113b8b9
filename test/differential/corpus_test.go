package differential

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The committed corpus must be what upstream decides today; UPDATE_CORPUS=1 rewrites it instead.
func TestCorpusIsWhatUpstreamDecides(t *testing.T) {
	schema := kargoBranchSchema(t)
	got := buildCorpus(func(branch string) (bool, bool) {
		kargo := len(branch) >= schema.minLength && len(branch) <= schema.maxLength && schema.pattern.MatchString(branch)
		git := exec.Command("git", "check-ref-format", "--branch", branch).Run() == nil
		return kargo, git
	}).encode()
	if os.Getenv("UPDATE_CORPUS") == "1" {
		if err := os.WriteFile(corpusFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", corpusFile)
		return
	}
	committed, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatalf("%v; write it with UPDATE_CORPUS=1 go test ./differential/ -run TestCorpus", err)
	}
	if !bytes.Equal(committed, got) {
		want, have := strings.Split(string(got), "\n"), strings.Split(string(committed), "\n")
		for i := range min(len(want), len(have)) {
			if want[i] != have[i] {
				t.Fatalf("test/differential/%s line %d is not what upstream decides:\n  committed: %s\n  upstream:  %s\n"+
					"rewrite it with UPDATE_CORPUS=1 go test ./differential/ -run TestCorpus and review the diff",
					corpusFile, i+1, have[i], want[i])
			}
		}
		t.Fatalf("test/differential/%s has %d lines, upstream's corpus %d; rewrite it with UPDATE_CORPUS=1 go test ./differential/ -run TestCorpus",
			corpusFile, len(have), len(want))
	}
}
