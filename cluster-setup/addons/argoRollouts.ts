import type { AddonSpec } from "../../lib/helmAddon";
import { platformNamespaces } from "../../lib/namespaces";

/** Argo Rollouts runs the AnalysisRuns that verify each Kargo stage. */
export const argoRollouts: AddonSpec = {
  name: "argo-rollouts",
  chart: "argo-rollouts",
  repository: "https://argoproj.github.io/argo-helm",
  version: "2.41.0",
  namespace: platformNamespaces.argoRollouts,
  // Kargo turns verification off at start-up when these CRDs are missing, so the chart must install them.
  // One controller: it runs with leader election, so a second replica only waits (and takes a pod slot).
  values: {
    installCRDs: true,
    keepCRDs: true,
    dashboard: { enabled: false },
    controller: { replicas: 1, resources: { requests: { cpu: "20m", memory: "64Mi" } } },
  },
};
