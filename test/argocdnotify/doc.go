// Package argocdnotify sends the messages of a stage that fails before its verification (a failed sync of
// its Argo CD Application, a Degraded Stack) through the code that sends them in the cluster:
// argoproj/notifications-engine's controller (pkg/controller/controller.go) at the version Argo CD v3.4.4
// pins, over the ConfigMap and Secret the argo-cd chart renders from the planned values and every
// Application of the plan, with the subscriptions cluster-setup exports. Slack's API and the webhook are
// httptest servers. A module of its own (go.mod): test/go.mod holds the engine Argo Rollouts pins.
//
// Ours, models, each following the upstream file named beside it:
//   - Argo CD's settings and template variables (argo-cd v3.4.4 util/notification/settings/settings.go) and
//     its controller's setup (notification_controller/controller/controller.go);
//   - the chart's rendering of the ConfigMap and Secret (argo-helm argo-cd-10.1.1
//     templates/argocd-configs/argocd-notifications-cm.yaml, argocd-notifications-secret.yaml);
//   - the Application status Argo CD writes, with the operation Kargo starts (akuity/kargo v1.11.2
//     pkg/promotion/runner/builtin/argocd_updater.go).
package argocdnotify
