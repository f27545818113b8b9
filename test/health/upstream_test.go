package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
	"infra-change-platform/test/internal/upstream"
)

// argoCDLua is argo-cd's util/lua/lua.go at the version lib/crds/sources.ts pins, from the module archive
// (the module cannot be built here, its archive downloads): what the VM's constants are checked against.
func argoCDLua(t *testing.T) string {
	t.Helper()
	pin, err := plan.PinnedVersion("argocd")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v3@"+pin).Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		t.Fatalf("go mod download argo-cd %s: %v %s", pin, err, info.Error)
	}
	src, err := os.ReadFile(filepath.Join(info.Dir, "util", "lua", "lua.go"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// The VM stops a script when Argo CD's health-script timeout does, and says what Argo CD says of a status
// it does not know: both read from Argo CD's source at our pin, not from the VM's own constants.
func TestVMLimitsAndMessagesAreArgoCDs(t *testing.T) {
	src := argoCDLua(t)
	m := regexp.MustCompile(`context\.WithTimeout\(context\.Background\(\), (\d+)\s*\*\s*time\.Second\)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("argo-cd util/lua/lua.go no longer sets its timeout as the VM reads it: re-read it")
	}
	limit, _ := time.ParseDuration(m[1] + "s")
	if TimeLimit != limit {
		t.Errorf("the VM stops a script after %v, Argo CD after %v", TimeLimit, limit)
	}
	// Stopped by that limit (its context's deadline), never before it; how long after it this machine took
	// to get there is its load, not the VM's rule, so it is not judged.
	start := time.Now()
	_, err := Run(`while true do end`, anyObject, false)
	if err == nil || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Fatalf("an endless script ended with %v, not at its time limit", err)
	}
	if took := time.Since(start); took < limit {
		t.Errorf("an endless script stopped after %v, before Argo CD's %v", took, limit)
	}
	msg := regexp.MustCompile(`invalidHealthStatus\s*=\s*"([^"]+)"`).FindStringSubmatch(src)
	if msg == nil {
		t.Fatal("argo-cd util/lua/lua.go no longer names invalidHealthStatus: re-read it")
	}
	got, err := Run(`return {status = "Stalled"}`, anyObject, false)
	if err != nil || got != (Health{"Unknown", msg[1]}) {
		t.Errorf("a status Argo CD does not know gives %+v (%v), Argo CD gives Unknown, %q", got, err, msg[1])
	}
}

// pkoStackController is PKO's stack_controller.go at lib/crds/sources.ts's pin, from the snapshot `npm run
// upstream` fetches (PKO's module is not served); without one the test is skipped, saying so.
func pkoStackController(t *testing.T) string {
	t.Helper()
	pin, err := plan.PinnedVersion("pko")
	if err != nil {
		t.Fatal(err)
	}
	src, err := upstream.Show("pulumi/pulumi-kubernetes-operator", pin, "operator/internal/controller/pulumi/stack_controller.go")
	if a := (*upstream.Absent)(nil); errors.As(err, &a) {
		t.Skipf("NOT CHECKED: %v; optional", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// The model's retry limit and cooldowns are PKO's, read from its source at our pin rather than from the
// model's own constants.
func TestPKOModelRetriesAsPKODoes(t *testing.T) {
	src := pkoStackController(t)
	m := regexp.MustCompile(`const maxUpdateFailures = (\d+)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("PKO's stack_controller.go no longer declares maxUpdateFailures as the model reads it: re-read it")
	}
	if fmt.Sprint(maxUpdateFailures) != m[1] {
		t.Errorf("the model gives up after %d failures, PKO after %s", maxUpdateFailures, m[1])
	}
	b := regexp.MustCompile(`Duration:\s*(\d+) \* time\.Second,\s*Factor:\s*(\d+),\s*Cap:\s*(\d+) \* time\.Hour`).FindStringSubmatch(src)
	if b == nil {
		t.Fatal("PKO's cooldown no longer reads as the model reads it: re-read stack_controller.go cooldown")
	}
	first, _ := time.ParseDuration(b[1] + "s")
	factor, _ := strconv.Atoi(b[2])
	limit, _ := time.ParseDuration(b[3] + "h")
	want := first
	for failures := int64(0); failures < 12; failures++ {
		if got := Cooldown(failures); got != min(want, limit) {
			t.Errorf("after %d failures the model waits %v, PKO %v", failures, got, min(want, limit))
		}
		want *= time.Duration(factor)
	}
}
