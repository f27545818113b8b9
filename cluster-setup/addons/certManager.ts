import type { AddonSpec } from "../../lib/helmAddon";
import { platformNamespaces } from "../../lib/namespaces";

/** cert-manager issues the certificates of Kargo's API and webhooks. */
export const certManager: AddonSpec = {
  name: "cert-manager",
  chart: "cert-manager",
  repository: "https://charts.jetstack.io",
  version: "v1.21.1",
  namespace: platformNamespaces.certManager,
  // CRDs come with the chart; `keep` leaves them (and every Certificate) in place if the release goes.
  // Requests sized for a handful of certificates (test/capacity.test.ts counts them against the nodes).
  values: {
    crds: { enabled: true, keep: true },
    resources: { requests: { cpu: "10m", memory: "64Mi" } },
    webhook: { resources: { requests: { cpu: "10m", memory: "32Mi" } } },
    cainjector: { resources: { requests: { cpu: "10m", memory: "64Mi" } } },
  },
};
