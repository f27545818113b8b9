package analysis

import (
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"

	"infra-change-platform/test/internal/plan"
)

// A verification Job's pod that is evicted, drained or killed for memory before it reaches a verdict is
// replaced and the verdict still reached; a real verdict is never asked again. Each template of the plan,
// driven by Argo Rollouts' analysis controller, with the Job's own podFailurePolicy and backoffLimit as
// emitted, run by the Job controller's stand-in.
func TestVerificationSurvivesDisruption(t *testing.T) {
	t.Parallel()
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	for _, tr := range templateRuns(t, kargo, commit) {
		kind := templateKind(tr.base)
		backoff := *tr.base.Spec.Metrics[0].Provider.Job.Spec.BackoffLimit
		repeat := func(fate string, n int32) string {
			return strings.TrimSuffix(strings.Repeat(fate+",", int(n)), ",")
		}
		for _, c := range []struct {
			name   string
			fates  string
			result string
			want   v1alpha1.AnalysisPhase
			reason string
		}{
			// Ignored, so more of them than backoffLimit allows failures.
			{"evicted more times than backoffLimit, then the verdict", repeat("evicted", backoff+1), "succeeded", successful, ""},
			{"OOM-killed as many times as backoffLimit allows, then the verdict", repeat("oom-killed", backoff), "succeeded", successful, ""},
			{"OOM-killed once more than backoffLimit allows", repeat("oom-killed", backoff+1), "succeeded", failed, batchv1.JobReasonBackoffLimitExceeded},
			{"a failed operation: the verdict, not asked again", "", "failed", failed, batchv1.JobReasonPodFailurePolicy},
			{"evicted, then a failed operation", "evicted", "failed", failed, batchv1.JobReasonPodFailurePolicy},
		} {
			t.Run(tr.template.GetName()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				cloud := newCloud(t, token)
				ops(kind, op(commit, c.result, t0, nil))(cloud)
				run := against(tr.base, cloud.URL)
				for i := range run.Spec.Metrics {
					job := run.Spec.Metrics[i].Provider.Job
					if job.Metadata.Annotations == nil {
						job.Metadata.Annotations = map[string]string{}
					}
					job.Metadata.Annotations[podFatesAnnotation] = c.fates
				}
				got, jobs := driveJobs(t, run, cluster...)
				if got.Status.Phase != c.want {
					t.Fatalf("phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
				}
				if c.reason == "" {
					return
				}
				for _, j := range jobs {
					if j.Condition == batchv1.JobFailed && j.Reason == c.reason {
						// A verdict ran once: one line of it, after the disrupted pods' lines.
						if c.reason == batchv1.JobReasonPodFailurePolicy && strings.Count(j.Stderr, "failed\n") != 1 {
							t.Errorf("the verdict was asked more than once: %q", j.Stderr)
						}
						return
					}
				}
				t.Errorf("no Job failed with reason %s: %+v", c.reason, jobs)
			})
		}
	}
}
