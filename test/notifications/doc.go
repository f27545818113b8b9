// Package notifications sends every message the platform's notifications promise, through the code that
// sends them in the cluster: Argo Rollouts v1.9.0's event recorder (utils/record/record.go), which its
// analysis controller calls as each AnalysisRun ends (analysis/analysis.go, "AnalysisRun" + phase), and which
// runs argoproj/notifications-engine (at the version Argo Rollouts pins, test/go.mod) over the ConfigMap and
// Secret the argo-rollouts chart renders from the planned values. Slack's API and the webhook are httptest
// servers; everything else is upstream's.
//
// Ours, models, each following the upstream file named beside it:
//   - the chart's rendering of the notification ConfigMap and Secret (argoproj/argo-helm argo-rollouts-2.41.0
//     charts/argo-rollouts/templates/controller/notifications-configmap.yaml, notifications-secret.yaml);
//   - the AnalysisRun Kargo builds for a Stage's verification: its templates and arguments, the Stage's
//     analysisRunMetadata, the stage label and the Freight owner (akuity/kargo v1.11.2
//     pkg/rollouts/analysis_run_builder.go, pkg/controller/stages/regular_stages.go).
package notifications
