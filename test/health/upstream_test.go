package health

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
)

// argoCDLua is argo-cd's util/lua/lua.go at the version lib/crds/sources.ts pins, from the module archive
// (the module cannot be built here, its archive downloads): what the VM's constants are checked against.
func argoCDLua(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(plan.RepoRoot(), "lib", "crds", "sources.ts"))
	if err != nil {
		t.Fatal(err)
	}
	pin := regexp.MustCompile(`(?m)^\s*argocd:\s*"(v\d+\.\d+\.\d+)"`).FindSubmatch(raw)
	if pin == nil {
		t.Fatal(`lib/crds/sources.ts: no pinned argocd "vX.Y.Z"`)
	}
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v3@"+string(pin[1])).Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		t.Fatalf("go mod download argo-cd %s: %v %s", pin[1], err, info.Error)
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
	start := time.Now()
	if _, err := Run(`while true do end`, anyObject, false); err == nil {
		t.Fatal("an endless script returned")
	}
	if took := time.Since(start); took < limit || took > limit*3/2+250*time.Millisecond {
		t.Errorf("an endless script stopped after %v, Argo CD stops it after %v", took, limit)
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
