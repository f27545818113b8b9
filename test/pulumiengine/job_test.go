package pulumiengine

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cloudapi "github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// The verification Job itself (kargo/verification/verify.mjs, in node, as its container runs it) over one
// commit's preview and update, served by a stand-in for Pulumi Cloud's routes (pulumi-cloud-sdk
// apiclient/stacks_.go: GetLatestStackPreviews, GetStackUpdates, GetStackUpdate, GetEngineEvents_preview
// and _update, answered with that SDK's types): its exit code and reason are what verdicts.mjs says of the
// same events, so the Go tests' verdicts are the Job's.
func TestTheJobItselfOnTheEnginesEvents(t *testing.T) {
	t.Parallel()
	service := serviceBehindLoadBalancer().commits[0]
	drift := versioningDrift()
	runs := [][]commit{{service}, drift}
	var cases []verdictCase
	for _, commits := range runs {
		cases = append(cases, history(t, newCloud(), commits...)...)
	}
	verdicts := judge(t, cases...)
	policies := environmentPolicies(t)
	stopOn := policies[len(policies)-1].stopOn

	// The service's first deploy: the preview stops where its policy says, with the same lines; its update
	// passes.
	stopped := verdicts[0].Preview.Policies[stopOn].Stopped
	code, out := runJob(t, cases[0], "preview", stopOn)
	if (code == 0) != (len(stopped) == 0) {
		t.Errorf("the Job exits %d on the preview under STOP_ON=%q, the verdict stops %v:\n%s", code, stopOn,
			names(stopped), out)
	}
	for _, s := range stopped {
		if !strings.Contains(out, s.Line) {
			t.Errorf("the Job's reason lacks %q:\n%s", s.Line, out)
		}
	}
	if code, out := runJob(t, cases[0], "update", stopOn); code != 0 {
		t.Errorf("the Job fails the service's update (exit %d):\n%s", code, out)
	}
	// Versioning suspended by hand after the preview: the update fails, naming the step.
	last := len(cases) - 1
	code, out = runJob(t, cases[last], "update", stopOn)
	if code == 0 || len(verdicts[last].Update.Unexpected) == 0 {
		t.Fatalf("the Job passes an update its preview did not show (exit %d):\n%s", code, out)
	}
	for _, u := range verdicts[last].Update.Unexpected {
		if !strings.Contains(out, u.Line) {
			t.Errorf("the Job's reason lacks %q:\n%s", u.Line, out)
		}
	}
}

const jobCommit = "0123456789abcdef0123456789abcdef01234567"

// runJob runs verify.mjs over one commit's preview and update, and answers its exit code and output.
func runJob(t *testing.T, c verdictCase, operation, stopOn string) (int, string) {
	t.Helper()
	info := func(kind string, version, start int) cloudapi.AppUpdateInfo {
		return cloudapi.AppUpdateInfo{Kind: cloudapi.AppUpdateKind(kind), Result: "succeeded", Version: version, StartTime: int64(start),
			EndTime: int64(start + 10), Environment: map[string]string{"git.head": jobCommit}}
	}
	preview, update := info("preview", 0, 1_700_000_000), info("update", 1, 1_700_000_100)
	events := func(raw []json.RawMessage) cloudapi.GetUpdateEventsResponse {
		var out cloudapi.GetUpdateEventsResponse
		for _, r := range raw {
			var e cloudapi.EngineEvent
			if err := json.Unmarshal(r, &e); err != nil {
				t.Fatal(err)
			}
			out.Events = append(out.Events, e)
		}
		return out
	}
	routes := map[string]any{
		"/updates/latest/previews": cloudapi.GetStackUpdatesResponse{},
		"/updates/1/previews":      cloudapi.GetStackUpdatesResponse{},
		"/updates/0/previews": cloudapi.GetStackUpdatesResponse{Updates: []cloudapi.UpdateInfo{
			{Info: preview, UpdateID: "preview-1"}}},
		// The history lists the operations themselves (test/analysis/pulumicloud.go answers it the same way).
		"/updates":                  map[string]any{"updates": []cloudapi.AppUpdateInfo{update}},
		"/updates/1":                cloudapi.UpdateInfo{Info: update, UpdateID: "update-1", Version: 1},
		"/preview/preview-1/events": events(c.Preview),
		"/update/update-1/events":   events(c.Update),
	}
	if operation == "preview" {
		// Before the update: the preview is the latest version's.
		routes["/updates/latest/previews"] = routes["/updates/0/previews"]
		routes["/updates"] = map[string]any{"updates": []cloudapi.AppUpdateInfo{}}
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer, ok := routes[strings.TrimPrefix(r.URL.Path, "/api/stacks/org/app/dev")]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":404,"message":"not found"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(answer)
	}))
	defer server.Close()
	cmd := exec.Command(node(), filepath.Join("..", "..", "kargo", "verification", "verify.mjs"))
	cmd.Env = append(os.Environ(), "PULUMI_API_URL="+server.URL, "PULUMI_CONSOLE_URL=https://app.pulumi.com",
		"PULUMI_ORGANIZATION=org", "PULUMI_PROJECT=app", "PULUMI_STACK=dev", "COMMIT="+jobCommit,
		"OPERATION="+operation, "STOP_ON="+stopOn, "DECIDERS=deciders", "APPROVE_STAGE=update-stage", "KARGO_PROJECT=project",
		"INTERVAL=1s", "TIMEOUT=60s", "PAGE_SIZE=10", "ERROR_LIMIT=3", "PULUMI_ACCESS_TOKEN=token", "JOB_NAME=")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), output.String()
	}
	if err != nil {
		t.Fatalf("node verify.mjs: %v", err)
	}
	return 0, output.String()
}
