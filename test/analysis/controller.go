package analysis

import (
	"context"
	"testing"
	"time"

	"github.com/argoproj/argo-rollouts/analysis"
	"github.com/argoproj/argo-rollouts/controller/metrics"
	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/argoproj/argo-rollouts/pkg/client/clientset/versioned/fake"
	informers "github.com/argoproj/argo-rollouts/pkg/client/informers/externalversions"
	"github.com/argoproj/argo-rollouts/utils/queue"
	"github.com/argoproj/argo-rollouts/utils/record"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// drive hands the run to Argo Rollouts' analysis controller, set up as its own controller tests set it up
// (argo-rollouts v1.9.0 analysis/controller_test.go, newController), with `secrets` in the cluster for
// valueFrom arguments, and returns the run once it reaches a terminal phase (the test fails after `limit`).
func drive(t *testing.T, run *v1alpha1.AnalysisRun, limit time.Duration, secrets ...*corev1.Secret) *v1alpha1.AnalysisRun {
	t.Helper()
	client := fake.NewSimpleClientset(run)
	kube := k8sfake.NewSimpleClientset()
	for _, s := range secrets {
		if _, err := kube.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	kubeFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	runs := factory.Argoproj().V1alpha1().AnalysisRuns()
	work := fastQueue{workqueue.NewNamedRateLimitingQueue(queue.DefaultArgoRolloutsRateLimiter(), "AnalysisRuns")}
	controller := analysis.NewController(analysis.ControllerConfig{
		KubeClientSet:        kube,
		ArgoProjClientset:    client,
		AnalysisRunInformer:  runs,
		JobInformer:          kubeFactory.Batch().V1().Jobs(),
		AnalysisRunWorkQueue: work,
		MetricsServer: metrics.NewMetricsServer(metrics.ServerConfig{
			K8SRequestProvider: &metrics.K8sRequestsCountProvider{},
		}),
		Recorder: record.NewFakeEventRecorder(),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Workers stop only once their queue shuts down (argo-rollouts v1.9.0 utils/controller/controller.go).
	defer func() { cancel(); work.ShutDown(); <-done }()
	factory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), runs.Informer().HasSynced)
	go func() {
		defer close(done)
		_ = controller.Run(ctx, 1)
	}()

	deadline := time.Now().Add(limit)
	for {
		current, err := client.ArgoprojV1alpha1().AnalysisRuns(run.Namespace).Get(ctx, run.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if current.Status.Phase.Completed() {
			return current
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AnalysisRun is still %q after %s: %+v", current.Status.Phase, limit, current.Status.MetricResults)
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
