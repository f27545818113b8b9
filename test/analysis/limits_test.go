package analysis

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
)

// What used to pass or hang verification whatever we wrote, now decided by the script the Jobs run.
func TestWhatTheWebMetricCouldNotDecide(t *testing.T) {
	t.Parallel()
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	for _, tr := range templateRuns(t, kargo, commit) {
		tpl, base := tr.template, tr.base
		kind := templateKind(base)

		// A host that cannot show a certificate node trusts never answers: a captive portal or an
		// intercepting proxy in front of Pulumi Cloud fails verification, never passes it.
		t.Run(tpl.GetName()+"/an untrusted TLS host fails", func(t *testing.T) {
			t.Parallel()
			portal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(`{"updates":[]}`))
			}))
			defer portal.Close()
			got, jobs := driveJobs(t, against(base, portal.URL), cluster...)
			if got.Status.Phase != failed {
				t.Errorf("phase %s, want Failed: %s", got.Status.Phase, got.Status.Message)
			}
			// A failed handshake takes no time on the pod's clock: the errors in a row, not the timeout, end it.
			expectReason(t, jobs, noAnswer+`fetch failed \(\w*(CERT|SIGNATURE)\w*\)$`)
		})

		// Pulumi Cloud starting to err before the timeout, too late to err 7 times in a row: the reason names
		// the error, not only the operation that was not found. The stand-in errs from the third look before
		// the Job's last: the Job looks every interval on its clock, from 0 to its timeout (verify.mjs never
		// sleeps past it), and asks the same route first each time.
		t.Run(tpl.GetName()+"/errors until the timeout are named", func(t *testing.T) {
			t.Parallel()
			timeout, err := time.ParseDuration(jobEnv(t, tr, "TIMEOUT"))
			if err != nil {
				t.Fatal(err)
			}
			interval, err := time.ParseDuration(jobEnv(t, tr, "INTERVAL"))
			if err != nil {
				t.Fatal(err)
			}
			looks := int(timeout/interval) + 1
			first := "/updates"
			if kind == "preview" {
				first = "/updates/latest/previews"
			}
			c := newCloud(t, token)
			var mu sync.Mutex
			looked := 0
			c.override = func(r *http.Request) *answer {
				mu.Lock()
				defer mu.Unlock()
				if strings.HasSuffix(r.URL.Path, first) {
					looked++
				}
				if looked <= looks-3 {
					return nil
				}
				return &answer{status: http.StatusBadGateway, body: []byte("<html>Bad Gateway</html>")}
			}
			got, jobs := driveJobs(t, against(base, c.URL), cluster...)
			if got.Status.Phase != failed {
				t.Errorf("phase %s, want Failed: %s", got.Status.Phase, got.Status.Message)
			}
			expectReason(t, jobs, erringAtTimeout+`HTTP 502 `)
		})

		if kind != "preview" {
			continue
		}
		// Item 1 of issue #18: "List Previews" of `latest` holds only the previews since the stack's latest
		// update. When an update of the same stack finishes while a newer commit's preview is verified (the
		// next Freight previews while the last one still updates), the preview is listed under the version
		// it ran against, where the Job still finds it.
		// A version whose previews list is not found (none were made against it, or it is not served) is
		// passed over, not counted as an error: the older version's preview still decides.
		t.Run(tpl.GetName()+"/a version without a previews list", func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			cloud.stack.setUpdates(op(other, "succeeded", t0-3600, nil))
			ops("preview", op(commit, "succeeded", t0, map[string]int{"same": 4}))(cloud)
			cloud.stack.finishUpdate(op(other, "succeeded", t0+30, nil))
			newest := fmt.Sprintf("/updates/%d/previews", cloud.stack.version())
			cloud.override = func(r *http.Request) *answer {
				if strings.HasSuffix(r.URL.Path, newest) {
					return &answer{status: http.StatusNotFound, body: []byte(`{"code":404,"message":"Not Found"}`)}
				}
				return nil
			}
			got, jobs := driveJobs(t, against(base, cloud.URL), cluster...)
			if got.Status.Phase != successful {
				t.Errorf("phase %s: %s (jobs %+v, requests %q)", got.Status.Phase, got.Status.Message, jobs, cloud.Requests())
			}
		})

		for _, c := range []struct {
			name    string
			result  string
			updates int
			want    string
		}{
			{"an update finishing while the preview runs, which then succeeds", "succeeded", 1, "Successful"},
			{"two updates finishing while the preview runs, which then succeeds", "succeeded", 2, "Successful"},
			{"an update finishing while the preview runs, which then fails", "failed", 1, "Failed"},
		} {
			t.Run(tpl.GetName()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				cloud := newCloud(t, token)
				cloud.stack.setUpdates(op(other, "succeeded", t0-3600, nil))
				ops("preview", op(commit, "in-progress", t0, nil))(cloud)
				before := cloud.stack.version()
				cloud.onServe = func(_ string, n int) {
					if n != 2 {
						return
					}
					for i := range c.updates {
						cloud.stack.finishUpdate(op(other, "succeeded", t0+int64(i)*30, nil))
					}
					cloud.stack.mu.Lock()
					defer cloud.stack.mu.Unlock()
					cloud.stack.previews[before] = []preview{asPreview(op(commit, c.result, t0, map[string]int{"same": 4}))}
				}
				got, jobs := driveJobs(t, against(base, cloud.URL), cluster...)
				if string(got.Status.Phase) != c.want {
					t.Errorf("phase %s, want %s: %s (jobs %+v, requests %q)", got.Status.Phase, c.want, got.Status.Message, jobs, cloud.Requests())
				}
				if c.want == "Failed" {
					expectReason(t, jobs, `^the preview of 4f1c2b9e8d7a on \S+ failed$`)
				}
			})
		}
	}
}
