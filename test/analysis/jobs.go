package analysis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// jobRun is what one Job did: the metric it measured (Rollouts' annotation), how it ended, its stderr and
// stdout (the record).
type jobRun struct {
	Name, Metric string
	Condition    batchv1.JobConditionType
	Reason       string
	Stderr       string
	Stdout       string
}

// jobController stands in for the kube Job controller, and only for it: a Job Argo Rollouts creates runs its
// one container's command with `node`, with the container's env (secretKeyRef read from the cluster) and its
// ConfigMap volumes as files, against whatever the env points at; its exit code sets the Job's Complete or
// Failed condition (through the Job's podFailurePolicy exit-code rules and backoffLimit, a failed run rerun
// as a new pod), and activeDeadlineSeconds (on the test's clock) Failed/DeadlineExceeded, as the kube Job
// controller does (kubernetes v1.34.3 pkg/controller/job/job_controller.go: syncJob's backoff limit,
// pastActiveDeadline). It is OUR model of that controller. The Job's deadline runs on the pod's clock
// (testdata/podclock.mjs), which the harness controls: it passes only while the pod waits on its timers,
// `jobSpeed` times faster than real time, so how busy this machine is never decides whether a verdict came
// before the deadline.
type jobController struct {
	t    *testing.T
	kube kubernetes.Interface
	// api is the API server as the Job's pod reaches it with its ServiceAccount's token.
	api *kubeAPI

	mu      sync.Mutex
	runs    []jobRun
	cancels map[string]context.CancelFunc
	wg      sync.WaitGroup
	// started: one of its Jobs got a slot to start (startQueue; guarded by the queue's lock).
	started bool
}

// jobSpeed is how much faster than real time the pods' clock runs while they wait on their timers: a 10 s
// interval is 10 ms. Work takes no time on that clock, so the speed bounds only how fast a run goes.
const jobSpeed = 1000

// podClock is the preload that gives node the pod's clock, with the Job's deadline (what is left of it) on
// it; none when the Job has none.
func podClock(deadline time.Duration) string {
	_, file, _, _ := runtime.Caller(0)
	url := fmt.Sprintf("file://%s?speed=%d", filepath.Join(filepath.Dir(file), "testdata", "podclock.mjs"), jobSpeed)
	if deadline < noDeadline {
		url += fmt.Sprintf("&deadline=%d", deadline.Milliseconds())
	}
	return url
}

// noDeadline is the deadline of a Job without activeDeadlineSeconds.
const noDeadline = time.Duration(1<<62 - 1)

// runJobs watches the cluster's Jobs until ctx ends; wait() then waits for the Jobs still running to stop.
func runJobs(ctx context.Context, t *testing.T, kube kubernetes.Interface, api *kubeAPI) *jobController {
	c := &jobController{t: t, kube: kube, api: api, cancels: map[string]context.CancelFunc{}}
	w, err := kube.BatchV1().Jobs("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				job, _ := e.Object.(*batchv1.Job)
				if job == nil {
					continue
				}
				switch e.Type {
				case watch.Added:
					jobCtx, cancel := context.WithCancel(ctx)
					c.mu.Lock()
					c.cancels[job.Namespace+"/"+job.Name] = cancel
					c.mu.Unlock()
					c.wg.Add(1)
					go func() { defer c.wg.Done(); c.run(jobCtx, job) }()
				case watch.Deleted:
					// Deleting a Job deletes its pod (Rollouts deletes the Jobs of a terminated run).
					c.mu.Lock()
					if cancel := c.cancels[job.Namespace+"/"+job.Name]; cancel != nil {
						cancel()
					}
					c.mu.Unlock()
				}
			}
		}
	}()
	return c
}

func (c *jobController) wait() { c.wg.Wait() }

// Runs is every Job that ended, in the order they ended.
func (c *jobController) Runs() []jobRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]jobRun(nil), c.runs...)
}

func (c *jobController) run(ctx context.Context, job *batchv1.Job) {
	record := jobRun{Name: job.Name, Metric: job.Annotations["analysisrun.argoproj.io/metric-name"]}
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		c.t.Errorf("Job %s: %d containers; the stand-in runs exactly one", job.Name, len(pod.Containers))
		return
	}
	if job.Spec.BackoffLimit == nil {
		c.t.Errorf("Job %s: no backoffLimit; the stand-in runs a pod up to backoffLimit+1 times", job.Name)
		return
	}
	deadline := noDeadline
	if s := job.Spec.ActiveDeadlineSeconds; s != nil {
		deadline = time.Duration(*s) * time.Second
	}
	command, env, err := c.resolve(ctx, job, pod)
	if err != nil {
		// The kubelet cannot start such a container: the pod waits until the Job's deadline, and nothing
		// else happens meanwhile that real time could race.
		record.Stderr = err.Error()
		select {
		case <-time.After(deadline / jobSpeed):
			record.Condition, record.Reason = batchv1.JobFailed, "DeadlineExceeded"
			c.finish(job, record)
		case <-ctx.Done():
		}
		return
	}
	// One pod after another, as the kube Job controller runs them with restartPolicy Never: the deadline
	// bounds them all, a failed pod the policy does not ignore counts, and more than backoffLimit fail the Job.
	failed := int32(0)
	fates := podFates(job)
	for attempt := 0; ; attempt++ {
		if attempt < len(fates) {
			// This pod is disrupted before it reaches a verdict: not run, it failed as the kubelet reports it.
			f := fates[attempt]
			record.Stderr += fmt.Sprintf("pod %d: %s (exit %d)\n", attempt+1, f.name, f.exit)
			action, counts := matchPodFailure(job.Spec.PodFailurePolicy, pod.Containers[0].Name, f.exit, f.conditions)
			if action == batchv1.PodFailurePolicyActionFailJob {
				record.Condition, record.Reason = batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy
				c.finish(job, record)
				return
			}
			if counts {
				failed++
			}
			if failed > *job.Spec.BackoffLimit {
				record.Condition, record.Reason = batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded
				c.finish(job, record)
				return
			}
			continue
		}
		exit, stderr, stdout, used, ran := c.exec(ctx, command, env, deadline)
		deadline -= used
		record.Stderr += stderr
		record.Stdout += stdout
		switch {
		case !ran:
			return // deleted, or the test is over
		case exit == nil:
			record.Condition = batchv1.JobComplete
		case errors.Is(exit, context.DeadlineExceeded):
			// exec kills the pod when its clock reaches the deadline; a pod that exited first reached its
			// verdict in time.
			record.Condition, record.Reason = batchv1.JobFailed, "DeadlineExceeded"
		default:
			action, counts := matchPodFailure(job.Spec.PodFailurePolicy, pod.Containers[0].Name, exitCode(exit), nil)
			if action == batchv1.PodFailurePolicyActionFailJob {
				record.Condition, record.Reason = batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy
				break
			}
			if counts {
				failed++
			}
			if failed > *job.Spec.BackoffLimit {
				record.Condition, record.Reason = batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded
				break
			}
			continue // the controller's backoff between pods is not modelled
		}
		c.finish(job, record)
		return
	}
}

// exec runs one pod: node with the container's command and env, on the pod's clock with what is left of the
// deadline; its exit (context.DeadlineExceeded when its clock reached the deadline), stderr, stdout, the
// time it took on its clock, and false when ctx ended first.
func (c *jobController) exec(ctx context.Context, command, env []string, deadline time.Duration) (error, string, string, time.Duration, bool) {
	if !starting.acquire(ctx, c) {
		return nil, "", "", 0, false
	}
	started := false
	release := func() {
		if !started {
			started = true
			starting.release()
		}
	}
	defer release()
	r, w, err := os.Pipe()
	if err != nil {
		c.t.Error(err)
		return nil, "", "", 0, false
	}
	defer r.Close()
	cmd := exec.Command("node", append([]string{"--import", podClock(deadline)}, command[1:]...)...)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{w}
	var stderr, stdout bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		w.Close()
		return err, err.Error(), "", 0, true
	}
	w.Close()
	// What the pod's clock says on fd 3: loaded, the deadline reached, and at exit how long it ran.
	said := make(chan string, 16)
	go func() {
		defer close(said)
		lines := bufio.NewScanner(r)
		for lines.Scan() {
			said <- lines.Text()
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	used := time.Duration(0)
	lines := said
	for {
		select {
		case line, ok := <-lines:
			switch {
			case !ok:
				lines = nil
			case line == "loaded":
				release()
			case line == "deadline":
				_ = cmd.Process.Kill()
				<-exited
				return context.DeadlineExceeded, stderr.String(), stdout.String(), deadline, true
			case strings.HasPrefix(line, "clock "):
				if ms, err := strconv.ParseInt(strings.TrimPrefix(line, "clock "), 10, 64); err == nil {
					used = time.Duration(ms) * time.Millisecond
				}
			}
		case err := <-exited:
			// The clock's last word comes before the exit; read what is left of it.
			for line := range said {
				if ms, perr := strconv.ParseInt(strings.TrimPrefix(line, "clock "), 10, 64); perr == nil && strings.HasPrefix(line, "clock ") {
					used = time.Duration(ms) * time.Millisecond
				}
			}
			return err, stderr.String(), stdout.String(), used, true
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			return nil, stderr.String(), stdout.String(), used, false
		}
	}
}

func (c *jobController) finish(job *batchv1.Job, record jobRun) {
	c.mu.Lock()
	c.runs = append(c.runs, record)
	c.mu.Unlock()
	ctx := context.Background()
	current, err := c.kube.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return // deleted meanwhile
	}
	now := metav1.Now()
	current.Status.Conditions = append(current.Status.Conditions, batchv1.JobCondition{
		Type: record.Condition, Status: corev1.ConditionTrue, Reason: record.Reason, LastTransitionTime: now,
	})
	if _, err := c.kube.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{}); err != nil {
		c.t.Errorf("Job %s: status: %v", job.Name, err)
	}
}

// resolve is the container's command with its ConfigMap mounts' paths on this machine, and its env with
// secretKeyRefs read from the cluster: what the kubelet gives the container, and nothing of the test's own.
func (c *jobController) resolve(ctx context.Context, job *batchv1.Job, pod corev1.PodSpec) ([]string, []string, error) {
	namespace := job.Namespace
	container := pod.Containers[0]
	command := append(append([]string(nil), container.Command...), container.Args...)
	if len(command) == 0 || command[0] != "node" {
		return nil, nil, fmt.Errorf("the stand-in runs node, not %q", command)
	}
	dir := c.t.TempDir()
	mounts := map[string]string{}
	for _, m := range container.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm, err := c.kube.CoreV1().ConfigMaps(namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			host := filepath.Join(dir, v.Name)
			if err := os.MkdirAll(host, 0o755); err != nil {
				return nil, nil, err
			}
			for key, data := range cm.Data {
				if err := os.WriteFile(filepath.Join(host, key), []byte(data), 0o444); err != nil {
					return nil, nil, err
				}
			}
			mounts[strings.TrimSuffix(m.MountPath, "/")+"/"] = host + "/"
		}
	}
	for i, arg := range command {
		for path, host := range mounts {
			if strings.HasPrefix(arg, path) {
				command[i] = host + strings.TrimPrefix(arg, path)
			}
		}
	}
	var env []string
	for _, e := range container.Env {
		value := e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			// The downward API, for the fields the Job controller and the API server set on every pod.
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.labels['batch.kubernetes.io/job-name']":
				value = job.Name
			case "metadata.namespace":
				value = namespace
			default:
				return nil, nil, fmt.Errorf("env %s: the stand-in does not resolve field %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		} else if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			if ref == nil {
				return nil, nil, fmt.Errorf("env %s: only secretKeyRef is resolved", e.Name)
			}
			s, err := c.kube.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			data, ok := s.Data[ref.Key]
			if !ok {
				return nil, nil, fmt.Errorf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			value = string(data)
		}
		env = append(env, e.Name+"="+value)
	}
	// The kubelet mounts the ServiceAccount's token (SERVICE_ACCOUNT_DIR points the script at it here) and,
	// whatever enableServiceLinks says, names the API server's service.
	if pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken && pod.ServiceAccountName != "" {
		account := filepath.Join(dir, "serviceaccount")
		if err := c.api.serviceAccount(account, namespace, job.Name); err != nil {
			return nil, nil, err
		}
		env = append(env, "SERVICE_ACCOUNT_DIR="+account, "KUBERNETES_SERVICE_HOST="+c.api.host, "KUBERNETES_SERVICE_PORT="+c.api.port)
	}
	return command, env, nil
}
