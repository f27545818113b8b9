package analysis

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// exitCode is the container's exit code as the kubelet reports it: 128 plus the signal that killed it.
func exitCode(err error) int32 {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return 128 // node did not start
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(exit.ExitCode())
}

// matchPodFailure is the kube Job controller's pod failure policy (kubernetes v1.34.3
// pkg/controller/job/pod_failure_policy.go, matchPodFailurePolicy, which is unexported and so not callable
// from here): the first rule that matches the failed pod decides, by the failed container's exit code
// (onExitCodes) or by a condition the pod carries with status True (onPodConditions); Ignore does not count
// the pod, FailJob fails the Job, Count or no matching rule counts it.
func matchPodFailure(policy *batchv1.PodFailurePolicy, container string, code int32, conditions []corev1.PodConditionType) (batchv1.PodFailurePolicyAction, bool) {
	if policy == nil || (code == 0 && len(conditions) == 0) {
		return "", true
	}
	for _, rule := range policy.Rules {
		if r := rule.OnExitCodes; r != nil {
			if r.ContainerName != nil && *r.ContainerName != container {
				continue
			}
			if (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) != slices.Contains(r.Values, code) {
				continue
			}
			return rule.Action, rule.Action != batchv1.PodFailurePolicyActionIgnore
		}
		for _, pattern := range rule.OnPodConditions {
			if pattern.Status == corev1.ConditionTrue && slices.Contains(conditions, pattern.Type) {
				return rule.Action, rule.Action != batchv1.PodFailurePolicyActionIgnore
			}
		}
	}
	return "", true
}

// podFate is what ends one of a Job's pods before it reaches a verdict, as the kubelet reports it.
type podFate struct {
	name       string
	exit       int32
	conditions []corev1.PodConditionType
}

// fates a test can give a Job's pods, in order, with the annotation podFatesAnnotation ("evicted,oom-killed"):
// an eviction or drain (SIGTERM, and the DisruptionTarget condition the eviction API adds: kubernetes v1.34.3
// pkg/registry/core/pod/storage/eviction.go), or the kernel's OOM killer (SIGKILL, no condition).
var fates = map[string]podFate{
	"evicted":    {"evicted", 128 + int32(syscall.SIGTERM), []corev1.PodConditionType{corev1.DisruptionTarget}},
	"oom-killed": {"OOM-killed", 128 + int32(syscall.SIGKILL), nil},
}

const podFatesAnnotation = "stand-in.test/pod-fates"

func podFates(job *batchv1.Job) []podFate {
	var out []podFate
	for _, name := range strings.Split(job.Annotations[podFatesAnnotation], ",") {
		if f, ok := fates[strings.TrimSpace(name)]; ok {
			out = append(out, f)
		}
	}
	return out
}
