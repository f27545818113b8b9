package analysis

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"infra-change-platform/test/internal/plan"
)

// What the real engine does where no condition we write can decide, each pinned so that a change of
// Argo Rollouts or of the pipeline shows up here.
func TestWhatNoConditionDecides(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	secret := tokenSecret(t, kargo)
	for _, tr := range templateRuns(t, kargo, commit) {
		tpl, stage, base := tr.template, tr.stage, tr.base
		kind, _ := templateKind(stage, base)

		// A 2xx body that is not JSON is Successful without any condition being evaluated
		// (argo-rollouts v1.9.0 metricproviders/webmetric/webmetric.go, parseResponse; argoproj/argo-rollouts
		// #4535, fixed on master by #4770, in no release up to v1.10.0-rc1). Only Pulumi Cloud's own host
		// (pulumi.apiUrl / pulumi.selfHostedApiUrl, lib/pipeline/check-values.ts) and TLS verification stand between
		// verification and such a page.
		t.Run(tpl.GetName()+"/a 200 HTML page passes Rollouts v1.9.0", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			raw(http.StatusOK, "<!doctype html><html><body>Sign in to continue</body></html>")(c)
			if got := drive(t, against(base, c.URL), time.Minute, secret); got.Status.Phase != successful {
				t.Errorf("phase %s: Rollouts no longer passes a non-JSON 2xx; conditions now see it (%s)", got.Status.Phase, got.Status.Message)
			}
		})

		// A host that cannot show a certificate the controller trusts never answers: the web provider
		// verifies TLS unless `insecure` is set, which no template sets. A captive portal or an
		// intercepting proxy in front of Pulumi Cloud ends in Error, never Successful.
		t.Run(tpl.GetName()+"/an untrusted TLS host ends in Error", func(t *testing.T) {
			t.Parallel()
			portal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(`<html>Welcome to the hotel Wi-Fi</html>`))
			}))
			defer portal.Close()
			for _, m := range base.Spec.Metrics {
				if m.Provider.Web.Insecure {
					t.Fatalf("metric %s skips TLS verification", m.Name)
				}
			}
			if got := drive(t, against(base, portal.URL), time.Minute, secret); got.Status.Phase != errored {
				t.Errorf("phase %s, want Error: %s", got.Status.Phase, got.Status.Message)
			}
		})

		if kind != "preview" {
			continue
		}
		// "List Previews" holds only the previews since the stack's latest update (Pulumi Cloud REST API,
		// Stack Updates). When another update of the same stack finishes while this preview is verified,
		// the preview drops out of the list, and no query of that list can find it again.
		t.Run(tpl.GetName()+"/an update of the stack finishing while its preview is verified", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ops("preview", op(commit, "in-progress", t0, nil))(c)
			c.onServe = func(_ string, n int) {
				if n == 2 {
					c.stack.finishUpdate(op(other, "succeeded", t0-30, nil))
				}
			}
			got := drive(t, against(base, c.URL), time.Minute, secret)
			if got.Status.Phase != inconclusive {
				t.Errorf("phase %s: %s", got.Status.Phase, got.Status.Message)
			}
		})
		// The recovery: asking PKO for the preview again (README, Troubleshooting) records a new preview of
		// the same commit on the updated stack, which the running verification finds.
		t.Run(tpl.GetName()+"/the preview requested again after that update", func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ops("preview", op(commit, "in-progress", t0, nil))(c)
			c.onServe = func(_ string, n int) {
				switch n {
				case 2:
					c.stack.finishUpdate(op(other, "succeeded", t0-30, nil))
				case 20:
					c.stack.setPreviews(asPreview(op(commit, "succeeded", t0+600, map[string]int{"same": 4})))
				}
			}
			if got := drive(t, against(base, c.URL), time.Minute, secret); got.Status.Phase != successful {
				t.Errorf("phase %s: %s", got.Status.Phase, got.Status.Message)
			}
		})
	}
}
