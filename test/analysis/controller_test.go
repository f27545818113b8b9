package analysis

import (
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The controller set up here really measures: a run with one web metric and no condition ends Successful
// once it has asked the stand-in, and a run it cannot resolve (a Secret that is not there) ends in Error.
func TestControllerMeasures(t *testing.T) {
	c := newCloud(t, token)
	c.stack.setUpdates()
	url := c.URL + "/api/stacks/o/p/s/updates"
	one := intstr.FromInt32(1)
	run := &v1alpha1.AnalysisRun{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "infra"},
		Spec: v1alpha1.AnalysisRunSpec{Metrics: []v1alpha1.Metric{{
			Name:     "probe",
			Count:    &one,
			Provider: v1alpha1.MetricProvider{Web: &v1alpha1.WebMetric{URL: url, Headers: []v1alpha1.WebMetricHeader{{Key: "Authorization", Value: "token " + token}}}},
		}}},
	}
	if got := drive(t, run, time.Minute); got.Status.Phase != successful || len(c.Requests()) == 0 {
		t.Errorf("phase %s after %d requests", got.Status.Phase, len(c.Requests()))
	}
	missing := run.DeepCopy()
	missing.Spec.Args = []v1alpha1.Argument{{Name: "token", ValueFrom: &v1alpha1.ValueFrom{SecretKeyRef: &v1alpha1.SecretKeyRef{Name: "absent", Key: "accessToken"}}}}
	missing.Spec.Metrics[0].Provider.Web.Headers[0].Value = "token {{args.token}}"
	if got := drive(t, missing, time.Minute); got.Status.Phase != errored {
		t.Errorf("without the Secret: phase %s", got.Status.Phase)
	}
}
