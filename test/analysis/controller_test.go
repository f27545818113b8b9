package analysis

import (
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The controller and the Job stand-in set up here really measure: a job metric whose node exits 0 is
// Successful, one that exits 1 is Failed, and one whose container cannot start (its Secret is not there)
// fails at the Job's deadline.
func TestControllerMeasures(t *testing.T) {
	t.Parallel()
	one := intstr.FromInt32(1)
	deadline := int64(600)
	probe := func(script string, env ...corev1.EnvVar) *v1alpha1.AnalysisRun {
		var backoff int32
		return &v1alpha1.AnalysisRun{
			ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "infra", UID: "probe-uid"},
			Spec: v1alpha1.AnalysisRunSpec{Metrics: []v1alpha1.Metric{{
				Name:  "probe",
				Count: &one,
				Provider: v1alpha1.MetricProvider{Job: &v1alpha1.JobMetric{Spec: batchv1.JobSpec{
					BackoffLimit:          &backoff,
					ActiveDeadlineSeconds: &deadline,
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "probe", Command: []string{"node", "-e", script}, Env: env,
					}}}},
				}}},
			}}},
		}
	}
	if got, jobs := driveJobs(t, probe(`process.exit(0)`)); got.Status.Phase != successful || len(jobs) != 1 {
		t.Errorf("exit 0: phase %s, jobs %+v %+v", got.Status.Phase, jobs, got.Status.MetricResults)
	}
	if got, jobs := driveJobs(t, probe(`process.stderr.write("no\n"); process.exit(1)`)); got.Status.Phase != failed || jobs[0].Stderr != "no\n" {
		t.Errorf("exit 1: phase %s, jobs %+v %+v", got.Status.Phase, jobs, got.Status.MetricResults)
	}
	// A script that sleeps a day on the pod's clock is still running when its clock reaches the deadline.
	if got, jobs := driveJobs(t, probe(`setTimeout(() => {}, 86_400_000)`)); got.Status.Phase != failed || jobs[0].Reason != "DeadlineExceeded" {
		t.Errorf("past the deadline: phase %s, jobs %+v", got.Status.Phase, jobs)
	}
	missing := corev1.EnvVar{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "accessToken"}}}
	if got, jobs := driveJobs(t, probe(`process.exit(0)`, missing)); got.Status.Phase != failed || jobs[0].Reason != "DeadlineExceeded" {
		t.Errorf("without the Secret: phase %s, jobs %+v", got.Status.Phase, jobs)
	}
}
