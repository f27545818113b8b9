package analysis

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/pkg/client/clientset/versioned"
	listers "github.com/argoproj/argo-rollouts/pkg/client/listers/rollouts/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// kubeAPI stands in for the API server as a verification Job's pod reaches it (KUBERNETES_SERVICE_HOST and
// _PORT, its ServiceAccount's token and CA): it reads a Job and reads and JSON-patches an AnalysisRun, in the
// clusters the analysis controller runs against. Who may write what is the admission policy's, run on the
// real API server (test/kube TestVerificationJobWritesOnlyItsOwnMessage); here it is what Rollouts then
// does with what the Job wrote.
type kubeAPI struct {
	server *httptest.Server
	host   string
	port   string
	ca     []byte
	kube   kubernetes.Interface
	argo   versioned.Interface
	// seen is the analysis controller's view of the runs (its informer's lister).
	seen listers.AnalysisRunLister
}

func newKubeAPI(t *testing.T, kube kubernetes.Interface, argo versioned.Interface, seen listers.AnalysisRunLister) *kubeAPI {
	a := &kubeAPI{kube: kube, argo: argo, seen: seen}
	a.server = httptest.NewTLSServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.server.Close)
	u, err := url.Parse(a.server.URL)
	if err != nil {
		t.Fatal(err)
	}
	a.host, a.port = u.Hostname(), u.Port()
	a.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.server.Certificate().Raw})
	return a
}

// serviceAccount writes what the kubelet mounts for the ServiceAccount of a pod of the Job `job` into dir.
func (a *kubeAPI) serviceAccount(dir, namespace, job string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for file, data := range map[string][]byte{"token": []byte(tokenPrefix + job), "ca.crt": a.ca, "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o444); err != nil {
			return err
		}
	}
	return nil
}

func (a *kubeAPI) serve(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/apis/"), "/")
	// {group}/{version}/namespaces/{ns}/{resource}/{name}
	if len(parts) != 6 || parts[2] != "namespaces" || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "+tokenPrefix) {
		http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
		return
	}
	group, ns, resource, name := parts[0], parts[3], parts[4], parts[5]
	var got any
	var err error
	switch {
	case r.Method == http.MethodGet && group == "batch" && resource == "jobs":
		got, err = a.kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	case r.Method == http.MethodGet && group == "argoproj.io" && resource == "analysisruns":
		a.awaitMeasurement(ctx, ns, name, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "+tokenPrefix))
		got, err = a.argo.ArgoprojV1alpha1().AnalysisRuns(ns).Get(ctx, name, metav1.GetOptions{})
	case r.Method == http.MethodPatch && group == "argoproj.io" && resource == "analysisruns" &&
		r.Header.Get("Content-Type") == string(types.JSONPatchType):
		body, _ := io.ReadAll(r.Body)
		var run *v1alpha1.AnalysisRun
		run, err = a.argo.ArgoprojV1alpha1().AnalysisRuns(ns).Patch(ctx, name, types.JSONPatchType, body, metav1.PatchOptions{})
		if err != nil {
			// The API server answers a failed `test` (or any patch that does not apply) 422.
			err = apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("AnalysisRun").GroupKind(), name, nil)
		} else {
			a.awaitSeen(run)
		}
		got = run
	default:
		http.Error(w, `{"kind":"Status","code":405}`, http.StatusMethodNotAllowed)
		return
	}
	if err != nil {
		status := apierrors.APIStatus(nil)
		if s, ok := err.(apierrors.APIStatus); ok {
			status = s
		}
		code := http.StatusInternalServerError
		if status != nil {
			code = int(status.Status().Code)
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "code": code, "message": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(got)
}

// tokenPrefix starts the token of each Job's pods, which names the Job.
const tokenPrefix = "token-of-job:"

// awaitMeasurement waits (up to ten seconds, for a loaded machine) until the run lists the measurement of the
// Job asking: the controller records it just after creating the Job, long before a real pod asks, while
// here a Job's clock runs a thousand times faster.
func (a *kubeAPI) awaitMeasurement(ctx context.Context, ns, name, job string) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		run, err := a.argo.ArgoprojV1alpha1().AnalysisRuns(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		for _, r := range run.Status.MetricResults {
			for _, m := range r.Measurements {
				if m.Metadata["job-name"] == job {
					return
				}
			}
		}
	}
}

// awaitSeen answers the Job's patch once the controller's watch holds it (up to ten seconds, for a loaded
// machine): the Job then waits a moment for the same reason (run-message.mjs, settleMs), here made exact.
func (a *kubeAPI) awaitSeen(run *v1alpha1.AnalysisRun) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if seen, err := a.seen.AnalysisRuns(run.Namespace).Get(run.Name); err == nil && reflect.DeepEqual(seen.Status.MetricResults, run.Status.MetricResults) {
			return
		}
	}
}
