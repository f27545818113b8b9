package argocdnotify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/controller"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// hostile tries to break a message: Slack markup that would ping a channel or forge a link, quotes and a
// newline that would end a JSON string or start a line of its own.
const hostile = "boom\" <!channel> <https://evil.example|click> & \n{\"event\":\"forged\"}"

var appGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// engine runs notifications-engine's controller (pkg/controller/controller.go) over Applications, as Argo CD's
// notification controller sets it up (argo-cd v3.4.4 notification_controller/controller/controller.go
// NewController: the factory over the ConfigMap and Secret, an informer of Applications). Argo CD's
// skipProcessing (a sync status older than the operation) is met by every status here: reconciledAt is
// after finishedAt. `processed` receives each Application the controller finished with.
func engine(t *testing.T, values map[string]any, secrets map[string]string) (dynamic.ResourceInterface, chan *unstructured.Unstructured) {
	t.Helper()
	cm, secret := rendered(t, values, secrets)
	if _, err := api.ParseConfig(cm, secret); err != nil {
		t.Fatalf("Argo CD's notification controller cannot read the rendered configuration: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kube := k8sfake.NewSimpleClientset(cm, secret)
	inNamespace := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(argocdNamespace))
	secrets_, configMaps := inNamespace.Core().V1().Secrets().Informer(), inNamespace.Core().V1().ConfigMaps().Informer()
	inNamespace.Start(ctx.Done())
	factory := api.NewFactory(settings(), argocdNamespace, secrets_, configMaps)

	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{appGVR: "ApplicationList"})
	apps := client.Resource(appGVR)
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			return apps.Namespace(argocdNamespace).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return apps.Namespace(argocdNamespace).Watch(ctx, o)
		},
	}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	processed := make(chan *unstructured.Unstructured, 64)
	ctrl := controller.NewController(apps, informer, factory, controller.WithEventCallback(func(e controller.NotificationEventSequence) {
		for _, err := range e.Errors {
			t.Errorf("the notification controller failed on %s: %v", e.Key, err)
		}
		if u, ok := e.Resource.(*unstructured.Unstructured); ok {
			processed <- u.DeepCopy()
		}
	}))
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), secrets_.HasSynced, configMaps.HasSynced, informer.HasSynced) {
		t.Fatal("informers did not sync")
	}
	go ctrl.Run(1, ctx.Done())
	return apps.Namespace(argocdNamespace), processed
}

// apply writes the Application (its status marked by `step`) and waits until the controller processed it.
func apply(t *testing.T, apps dynamic.ResourceInterface, processed chan *unstructured.Unstructured, app *unstructured.Unstructured, step string) {
	t.Helper()
	_ = unstructured.SetNestedField(app.Object, step, "status", "reconciledAt")
	current, err := apps.Get(context.Background(), app.GetName(), metav1.GetOptions{})
	if err != nil {
		if _, err := apps.Create(context.Background(), app, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else {
		// Keep what the controller wrote (its notified-state annotation), as Argo CD's status updates do.
		app.SetAnnotations(current.GetAnnotations())
		if _, err := apps.Update(context.Background(), app, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case u := <-processed:
			if at, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt"); u.GetName() == app.GetName() && at == step {
				return
			}
		case <-deadline:
			t.Fatalf("the notification controller did not process %s at %s", app.GetName(), step)
		}
	}
}

const stageCommit, promotion = "0123456789abcdef0123456789abcdef01234567", "dev-bucket.01jabcdefghjkmnpqrstvwxyz0.0123456"

// failedSync is the status Argo CD writes when a sync Kargo started fails (argo-cd v3.4.4
// pkg/apis/application/v1alpha1 OperationState, SyncOperationResult), with Kargo's operation info
// (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/argocd_updater.go).
func failedSync(stack string) map[string]any {
	return map[string]any{
		"sync":   map[string]any{"status": "OutOfSync", "revision": stageCommit},
		"health": map[string]any{"status": "Missing"},
		"operationState": map[string]any{
			"phase": "Failed", "message": hostile,
			"startedAt": "2026-11-27T10:00:00Z", "finishedAt": "2026-11-27T10:00:05Z",
			"operation": map[string]any{
				"initiatedBy": map[string]any{"username": "alice", "automated": false},
				"info": []any{
					map[string]any{"name": "Reason", "value": "Promotion triggered a sync of this Application resource."},
					map[string]any{"name": "kargo.akuity.io/promotion", "value": promotion},
				},
				"sync": map[string]any{"revisions": []any{}},
			},
			"syncResult": map[string]any{
				"revision": stageCommit,
				"resources": []any{map[string]any{
					"group": "pulumi.com", "version": "v1", "kind": "Stack", "name": stack,
					"status": "SyncFailed", "message": hostile, "syncPhase": "Sync",
				}},
			},
		},
	}
}

// degraded is the status once the sync succeeded and the Stack's health (stack-health.lua) is Degraded,
// kept per resource (controller.resource.health.persist, which cluster-setup sets with notifications on).
func degraded(stack string) map[string]any {
	s := failedSync(stack)
	op := s["operationState"].(map[string]any)
	op["phase"], op["message"] = "Succeeded", "successfully synced (all tasks run)"
	op["syncResult"].(map[string]any)["resources"] = []any{map[string]any{"kind": "Stack", "name": stack, "status": "Synced", "message": "stack.pulumi.com/" + stack + " created"}}
	s["sync"] = map[string]any{"status": "Synced", "revision": stageCommit}
	s["health"] = map[string]any{"status": "Degraded"}
	s["resources"] = []any{map[string]any{
		"group": "pulumi.com", "version": "v1", "kind": "Stack", "name": stack, "status": "Synced",
		"health": map[string]any{"status": "Degraded", "message": hostile},
	}}
	return s
}

func TestStageFailuresAnnounced(t *testing.T) {
	const extra = "  cluster-setup:notifySlackChannel: \"#infra-changes\"\n" +
		"  cluster-setup:notifySlackToken:\n    secure: v1:slack\n" +
		"  cluster-setup:notifyWebhookUrl:\n    secure: v1:webhook\n"
	setup := readResources(t, planDir(t, extra, `{"cluster-setup:notifySlackToken":"xoxb-plan","cluster-setup:notifyWebhookUrl":"https://hooks.example.com/plan"}`), "cluster-setup")
	values := argoCdNotifications(t, setup)
	if values["enabled"] != true {
		t.Fatalf("with destinations the argo-cd release has notifications %v, want them enabled", values["enabled"])
	}
	subscriptions, _ := setup.Outputs["argocdSubscriptions"].(map[string]any)
	if len(subscriptions) == 0 {
		t.Fatal("with destinations cluster-setup exports no argocdSubscriptions")
	}
	var got sink
	server := got.serve(t)
	defer server.Close()
	values["notifiers"].(map[string]any)["service.slack"] = values["notifiers"].(map[string]any)["service.slack"].(string) + "apiURL: " + server.URL + "/api/\n"
	apps, processed := engine(t, values, map[string]string{"notify-slack-token": "xoxb-test", "notify-webhook-url": server.URL + "/hook"})

	for i, planned := range applications(t, planDir(t, "", "")) {
		app := planned.DeepCopy()
		app.SetNamespace(argocdNamespace)
		a := app.GetAnnotations()
		facts := func(k string) string { return a["notifications.pipeline/"+k] }
		if facts("stage") == "" {
			t.Fatalf("Application %s carries no stage facts", app.GetName())
		}
		// What kargo adds to each Application from cluster-setup's output (kargo/promotionPipeline.ts).
		for k, v := range subscriptions {
			a[k] = v.(string)
		}
		app.SetAnnotations(a)
		stack := app.GetName()
		kargo := facts("kargo-project-url")
		want := map[string]string{
			"stage": facts("stage"), "program": facts("program"), "environment": facts("environment"),
			"commit": stageCommit, "promotion": promotion, "promotionUrl": kargo + "/promotion/" + promotion,
			"stageUrl": kargo + "/stage/" + facts("stage"), "stack": facts("stack-url"),
		}
		step := func(n int) string { return fmt.Sprintf("2026-11-27T11:%02d:%02dZ", i%60, n) }

		apply(t, apps, processed, app, step(0))
		if s, w := got.count(); s+w != 0 {
			t.Fatalf("%s: a new Application sent %d Slack messages and %d webhook calls", app.GetName(), s, w)
		}
		for n, c := range []struct {
			event  string
			status map[string]any
		}{{"stage-sync-failed", failedSync(stack)}, {"stage-degraded", degraded(stack)}} {
			app.Object["status"] = c.status
			apply(t, apps, processed, app, step(2*n+1))
			slack, webhook, raw := got.take()
			if len(slack) != 1 || len(webhook) != 1 {
				t.Fatalf("%s, %s: sent %d Slack messages and %d webhook calls, want one each", app.GetName(), c.event, len(slack), len(webhook))
			}
			if webhook[0]["event"] != c.event {
				t.Errorf("%s: the webhook got event %v, want %s", app.GetName(), webhook[0]["event"], c.event)
			}
			for k, v := range want {
				if webhook[0][k] != v {
					t.Errorf("%s: webhook %s = %q, want %q", c.event, k, webhook[0][k], v)
				}
			}
			if reason, _ := webhook[0]["reason"].(string); !strings.Contains(reason, hostile) {
				t.Errorf("%s: the webhook's reason %q does not hold the failure as it is", c.event, reason)
			}
			if strings.Count(raw[0], `"event"`) != 1 {
				t.Errorf("%s: a webhook body holds another event than its own: %s", c.event, raw[0])
			}
			text := slack[0].Get("text")
			if ch := slack[0].Get("channel"); ch != "#infra-changes" {
				t.Errorf("%s: Slack channel %q, want the configured one", c.event, ch)
			}
			for _, k := range []string{"stage", "program", "environment", "commit", "promotionUrl"} {
				if !strings.Contains(text, want[k]) {
					t.Errorf("%s: Slack text lacks the %s %q:\n%s", c.event, k, want[k], text)
				}
			}
			if strings.Contains(text, "<!channel>") || strings.Contains(text, "<https://evil") || !strings.Contains(text, "&lt;!channel&gt;") {
				t.Errorf("%s: Slack would read markup from the reason:\n%s", c.event, text)
			}
			if webhook[0]["drift"] != false {
				t.Errorf("%s: the webhook says drift = %v for no drift check", c.event, webhook[0]["drift"])
			}
			// The same state seen again (Argo CD reconciles every few minutes) is not told twice.
			apply(t, apps, processed, app, step(2*n+2))
			if s, w := got.count(); s+w != 0 {
				t.Errorf("%s: the same %s was told again (%d Slack, %d webhook)", app.GetName(), c.event, s, w)
				got.take()
			}
		}
		checkDriftTold(t, &got, func(status map[string]any) {
			app.Object["status"] = status
			apply(t, apps, processed, app, step(9))
		}, stack, want)
	}
}

// An Application as the example plan makes it (no destination configured) subscribes to nothing: even
// with the notification configuration in place, its failures send nothing.
func TestNoSubscriptionSendsNothing(t *testing.T) {
	dir := planDir(t, "", "")
	setup := readResources(t, dir, "cluster-setup")
	if n := argoCdNotifications(t, setup); n["enabled"] != false {
		t.Errorf("without a destination the argo-cd release has notifications %v, want them off", n)
	}
	if subs, _ := setup.Outputs["argocdSubscriptions"].(map[string]any); len(subs) != 0 {
		t.Errorf("without a destination cluster-setup exports subscriptions %v", subs)
	}
	const extra = "  cluster-setup:notifyWebhookUrl:\n    secure: v1:webhook\n"
	values := argoCdNotifications(t, readResources(t, planDir(t, extra, `{"cluster-setup:notifyWebhookUrl":"https://hooks.example.com/plan"}`), "cluster-setup"))
	var got sink
	server := got.serve(t)
	defer server.Close()
	apps, processed := engine(t, values, map[string]string{"notify-webhook-url": server.URL + "/hook"})
	app := applications(t, dir)[0].DeepCopy()
	app.SetNamespace(argocdNamespace)
	for k := range app.GetAnnotations() {
		if strings.HasPrefix(k, "notifications.argoproj.io/") {
			t.Fatalf("the example plan's Application %s subscribes: %s", app.GetName(), k)
		}
	}
	app.Object["status"] = failedSync(app.GetName())
	apply(t, apps, processed, app, "2026-11-27T12:00:00Z")
	if s, w := got.count(); s+w != 0 {
		t.Errorf("an Application without subscriptions sent %d Slack messages and %d webhook calls", s, w)
	}
}
