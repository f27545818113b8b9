import type { AddonSpec } from "../../lib/helmAddon";

/** Argo Rollouts runs the AnalysisRuns that verify each Kargo stage. */
export const argoRollouts: AddonSpec = {
  name: "argo-rollouts",
  chart: "argo-rollouts",
  repository: "https://argoproj.github.io/argo-helm",
  version: "2.41.0",
  namespace: "argo-rollouts",
  // Kargo turns verification off at start-up when these CRDs are missing, so the chart must install them.
  values: { installCRDs: true, keepCRDs: true, dashboard: { enabled: false } },
};
