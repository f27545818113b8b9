package analysis

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/analysis"
	"github.com/argoproj/argo-rollouts/controller/metrics"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/pkg/client/clientset/versioned/fake"
	informers "github.com/argoproj/argo-rollouts/pkg/client/informers/externalversions"
	"github.com/argoproj/argo-rollouts/utils/queue"
	"github.com/argoproj/argo-rollouts/utils/record"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// drive hands the run to Argo Rollouts' analysis controller, set up as its own controller tests set it up
// (argo-rollouts v1.9.0 analysis/controller_test.go, newController), with `objects` (Secrets, ConfigMaps) in
// the cluster and the kube Job controller's stand-in running the Jobs it creates, and returns the run once
// it reaches a terminal phase.
func drive(t *testing.T, run *v1alpha1.AnalysisRun, objects ...runtime.Object) *v1alpha1.AnalysisRun {
	t.Helper()
	got, _ := driveJobs(t, run, objects...)
	return got
}

// driveJobs is drive, also returning what each Job did.
func driveJobs(t *testing.T, run *v1alpha1.AnalysisRun, objects ...runtime.Object) (*v1alpha1.AnalysisRun, []jobRun) {
	t.Helper()
	got, jobs := driveTogether(t, []*v1alpha1.AnalysisRun{run}, nil, objects...)
	if !got[0].Status.Phase.Completed() {
		t.Fatalf("the AnalysisRun is still %q: %+v", got[0].Status.Phase, got[0].Status.MetricResults)
	}
	return got[0], jobs
}

// driveTogether hands several runs to one analysis controller at once (as Kargo verifies several Stages
// in one cluster: each run with its own UID, which names its Jobs) and looks at them every 20 ms, calling
// observe (when set) with each look; it returns the runs as last seen once every run reached a terminal
// phase or observe returns true, and what each Job did. No span of this machine's time decides it: every
// Job ends, at the latest when its clock reaches its deadline (jobs.go), however slowly this machine runs
// it. Only go test's -timeout, when set, stops a hung test, after saying where each run stood.
func driveTogether(t *testing.T, runs []*v1alpha1.AnalysisRun, observe func([]*v1alpha1.AnalysisRun) bool, objects ...runtime.Object) ([]*v1alpha1.AnalysisRun, []jobRun) {
	t.Helper()
	seed := make([]runtime.Object, len(runs))
	for i, r := range runs {
		if r.UID == "" {
			// The API server's; Rollouts names each run's Jobs after it, and the Job's patch tests it.
			r.UID = types.UID(fmt.Sprintf("uid-%d-%s", i, r.Name))
		}
		seed[i] = r
	}
	client := fake.NewSimpleClientset(seed...)
	kube := k8sfake.NewSimpleClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	runInformer := factory.Argoproj().V1alpha1().AnalysisRuns()
	work := fastQueue{workqueue.NewNamedRateLimitingQueue(queue.DefaultArgoRolloutsRateLimiter(), "AnalysisRuns")}
	controller := analysis.NewController(analysis.ControllerConfig{
		KubeClientSet:        kube,
		ArgoProjClientset:    client,
		AnalysisRunInformer:  runInformer,
		JobInformer:          kubeFactory.Batch().V1().Jobs(),
		AnalysisRunWorkQueue: work,
		MetricsServer: metrics.NewMetricsServer(metrics.ServerConfig{
			K8SRequestProvider: &metrics.K8sRequestsCountProvider{},
		}),
		Recorder: record.NewFakeEventRecorder(),
	})
	// A real API server answers the controller's write of the run's status only after the Job it created
	// just before is in flight to the Job informer; the in-memory clientsets answer at once, and the
	// controller would then look for the Job before its informer saw it (job.go, Resume: "not found").
	jobInformer := kubeFactory.Batch().V1().Jobs()
	client.PrependReactor("*", "analysisruns", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "update" || a.GetVerb() == "patch" {
			awaitJobInformer(kube, jobInformer.Lister())
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	jobs := runJobs(ctx, t, kube, newKubeAPI(t, kube, client, runInformer.Lister()))
	// Workers stop only once their queue shuts down (argo-rollouts v1.9.0 utils/controller/controller.go).
	defer func() { cancel(); work.ShutDown(); <-done; jobs.wait() }()
	factory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), runInformer.Informer().HasSynced, kubeFactory.Batch().V1().Jobs().Informer().HasSynced)
	go func() {
		defer close(done)
		_ = controller.Run(ctx, 1)
	}()

	var deadline time.Time
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-10 * time.Second)
	}
	for {
		current := make([]*v1alpha1.AnalysisRun, len(runs))
		completed := true
		for i, r := range runs {
			got, err := client.ArgoprojV1alpha1().AnalysisRuns(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			current[i] = got
			completed = completed && got.Status.Phase.Completed()
		}
		if (observe != nil && observe(current)) || completed {
			return current, jobs.Runs()
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			for _, r := range current {
				t.Errorf("the AnalysisRun %s is %q at go test's -timeout: %+v", r.Name, r.Status.Phase, r.Status.MetricResults)
			}
			t.FailNow()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// speed is how much faster than real time the analysis controller's clock runs: every emitted interval,
// initial delay and count stays as it is, and a 45-minute verification takes about three seconds. Argo
// Rollouts reads the time only through utils/time (its own controller tests set it the same way).
const speed = 1000

// fastQueue is the controller's workqueue on the test's clock: the controller asks to look again after a
// delay it computes from utils/time (`speed` times faster than real time), so the wait is that much shorter.
type fastQueue struct {
	workqueue.RateLimitingInterface
}

func (q fastQueue) AddAfter(item any, d time.Duration) {
	q.RateLimitingInterface.AddAfter(item, d/speed)
}

// awaitJobInformer waits (up to ten seconds, for a loaded test machine) until the Job informer holds every Job in the cluster.
func awaitJobInformer(kube *k8sfake.Clientset, lister batchlisters.JobLister) {
	all, err := kube.BatchV1().Jobs("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		seen := 0
		for _, j := range all.Items {
			if _, err := lister.Jobs(j.Namespace).Get(j.Name); err == nil {
				seen++
			}
		}
		if seen == len(all.Items) {
			return
		}
	}
}
