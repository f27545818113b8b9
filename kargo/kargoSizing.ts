import type { Values } from "../lib/helmAddon";

/**
 * Requests of Kargo's components (the chart sets none), so the scheduler accounts for them beside the
 * workspaces the pipeline can run at once, one per program stage (test/capacity.test.ts).
 */
export const kargoSizing: Values = {
  api: { resources: { requests: { cpu: "50m", memory: "128Mi" } } },
  controller: { resources: { requests: { cpu: "50m", memory: "128Mi" } } },
  managementController: { resources: { requests: { cpu: "20m", memory: "64Mi" } } },
  webhooksServer: { resources: { requests: { cpu: "20m", memory: "64Mi" } } },
  externalWebhooksServer: { resources: { requests: { cpu: "20m", memory: "64Mi" } } },
  garbageCollector: { resources: { requests: { cpu: "10m", memory: "64Mi" } } },
};
