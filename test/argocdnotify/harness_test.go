package argocdnotify

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The names Argo CD's notification controller reads its configuration from, in its own namespace
// (argo-cd v3.4.4 cmd/argocd-notification/commands/argocd_notification.go defaults; the chart's names).
const (
	argocdNamespace = "argocd"
	configMapName   = "argocd-notifications-cm"
	secretName      = "argocd-notifications-secret"
)

// repoRoot is the repository above this module (package.json beside test/).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			return d
		}
	}
	t.Fatal("no package.json above " + wd)
	return ""
}

func node() string {
	if n := os.Getenv("NODE"); n != "" {
		return n
	}
	return "node"
}

// planDir is $PLAN_DIR (npm run test:engines writes it once), else a plan written for this test, with
// extra cluster-setup config (secrets given through PLAN_SECRET_VALUES, lib/cli/plan/projects.ts).
func planDir(t *testing.T, extra string, secrets string) string {
	t.Helper()
	if extra == "" {
		if d := os.Getenv("PLAN_DIR"); d != "" {
			return d
		}
	}
	root := repoRoot(t)
	dir := t.TempDir()
	args := []string{"--import", "tsx", "lib/cli/plan.ts", "--out", filepath.Join(dir, "plan")}
	if extra != "" {
		example, err := os.ReadFile(filepath.Join(root, "cluster-setup", "Pulumi.example.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		stackFile := filepath.Join(dir, "Pulumi.notify.yaml")
		if err := os.WriteFile(stackFile, append(example, []byte(extra)...), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--project", "cluster-setup", "--config", stackFile)
	}
	cmd := exec.Command(node(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PLAN_SECRET_VALUES="+secrets)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the offline plan: %v\n%s", err, stderr.String())
	}
	return filepath.Join(dir, "plan")
}

// resources is one project's resources.json.
type resources struct {
	Resources []struct {
		Type   string         `json:"type"`
		Inputs map[string]any `json:"inputs"`
	} `json:"resources"`
	Outputs map[string]any `json:"outputs"`
}

func readResources(t *testing.T, dir, project string) resources {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, project, "resources.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r resources
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// argoCdNotifications is the argo-cd release's `notifications` values in a cluster-setup plan.
func argoCdNotifications(t *testing.T, r resources) map[string]any {
	t.Helper()
	for _, res := range r.Resources {
		if res.Type == "kubernetes:helm.sh/v3:Release" && res.Inputs["chart"] == "argo-cd" {
			values, _ := res.Inputs["values"].(map[string]any)
			n, _ := values["notifications"].(map[string]any)
			return n
		}
	}
	t.Fatal("the cluster-setup plan has no argo-cd release")
	return nil
}

// applications are the Argo CD Applications of the kargo plan.
func applications(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kargo", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var o map[string]any
		if err := decoder.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if o != nil && o["kind"] == "Application" {
			out = append(out, &unstructured.Unstructured{Object: o})
		}
	}
	if len(out) == 0 {
		t.Fatal("the kargo plan has no Application")
	}
	return out
}

// rendered is the ConfigMap and Secret the argo-cd chart renders from its notifications values (argo-helm
// argo-cd-10.1.1 templates/argocd-configs/argocd-notifications-cm.yaml, argocd-notifications-secret.yaml):
// the context, then notifiers, templates and triggers as data keys. Secret items are the plan's "[secret]";
// the test puts in its own.
func rendered(t *testing.T, n map[string]any, secrets map[string]string) (*corev1.ConfigMap, *corev1.Secret) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: configMapName, Namespace: argocdNamespace},
		Data:       map[string]string{"context": "argocdUrl: https://argocd.example.com\n"},
	}
	for _, key := range []string{"notifiers", "templates", "triggers"} {
		m, _ := n[key].(map[string]any)
		for k, v := range m {
			cm.Data[k] = v.(string)
		}
	}
	if subs, ok := n["subscriptions"]; ok {
		raw, err := yaml.Marshal(subs)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["subscriptions"] = string(raw)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: argocdNamespace}, Data: map[string][]byte{}}
	s, _ := n["secret"].(map[string]any)
	items, _ := s["items"].(map[string]any)
	for k, v := range items {
		if v != "[secret]" {
			t.Errorf("secret item %s is in the plan in the clear: it must be a Pulumi secret", k)
		}
		value, ok := secrets[k]
		if !ok {
			t.Fatalf("the test has no value for secret item %s", k)
		}
		secret.Data[k] = []byte(value)
	}
	return cm, secret
}

// settings are Argo CD's notification settings as its controller builds them (argo-cd v3.4.4
// util/notification/settings/settings.go, GetFactorySettings and initGetVars): the Application as `app`,
// the ConfigMap's context, the Secret's data, the AppProject (none here). The helper namespaces
// expression.Spawn adds (repo, time, strings: util/notification/expression/expr.go) call Argo CD's repo
// server, which does not run here; no template of ours calls them.
func settings() api.Settings {
	return api.Settings{
		ConfigMapName: configMapName,
		SecretName:    secretName,
		InitGetVars: func(_ *api.Config, cm *corev1.ConfigMap, secret *corev1.Secret) (api.GetVars, error) {
			context := map[string]string{}
			if err := yaml.Unmarshal([]byte(cm.Data["context"]), &context); err != nil {
				return nil, err
			}
			return func(obj map[string]any, dest services.Destination) map[string]any {
				return map[string]any{
					"app":        obj,
					"context":    context,
					"secrets":    secret.Data,
					"appProject": map[string]any{},
				}
			}, nil
		},
	}
}

// sink stands in for Slack's Web API and for the webhook; it keeps what it got.
type sink struct {
	mu      sync.Mutex
	slack   []url.Values
	webhook []map[string]any
	raw     []string
}

func (s *sink) serve(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
			form, err := url.ParseQuery(string(body))
			if err != nil {
				t.Errorf("Slack got a body that is not a form: %v", err)
			}
			s.slack = append(s.slack, form)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true,"channel":"C0123","ts":"1.2"}`))
		case r.URL.Path == "/hook":
			s.raw = append(s.raw, string(body))
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("the webhook got a body that is not JSON: %v\n%s", err, body)
			}
			s.webhook = append(s.webhook, m)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
}

func (s *sink) count() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slack), len(s.webhook)
}

func (s *sink) take() ([]url.Values, []map[string]any, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slack, webhook, raw := s.slack, s.webhook, s.raw
	s.slack, s.webhook, s.raw = nil, nil, nil
	return slack, webhook, raw
}
