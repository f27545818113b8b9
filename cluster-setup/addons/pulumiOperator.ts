import type { AddonSpec } from "../../lib/helmAddon";
import { platformNamespaces } from "../../lib/namespaces";

/** The Pulumi Kubernetes Operator runs `pulumi preview` and `pulumi up` for each Stack object. */
export const pulumiOperator: AddonSpec = {
  name: "pulumi-kubernetes-operator",
  chart: "oci://ghcr.io/pulumi/helm-charts/pulumi-kubernetes-operator",
  version: "2.9.0",
  namespace: platformNamespaces.pulumiOperator,
  values: { image: { tag: "v2.9.0" } },
};
