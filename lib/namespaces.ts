// The namespaces the platform installs into, and those Kubernetes keeps for itself: each add-on's module
// reads its namespace from here, and no stack, Kargo project or stacks namespace may take one of them (a
// Pulumi stack that owns a Namespace object deletes everything in it when it is destroyed or replaced).
export const platformNamespaces = {
  argoCd: "argocd",
  argoRollouts: "argo-rollouts",
  argoEvents: "argo-events",
  certManager: "cert-manager",
  pulumiOperator: "pulumi-kubernetes-operator",
  kargo: "kargo",
} as const;

export const reservedNamespaces: readonly string[] = [
  "default",
  "kube-system",
  "kube-public",
  "kube-node-lease",
  ...Object.values(platformNamespaces),
];

/** Whether a namespace is the cluster's or an add-on's (every `kube-*` is Kubernetes'). */
export const isReservedNamespace = (namespace: string) =>
  reservedNamespaces.includes(namespace) || namespace.startsWith("kube-");
