// What the node group offers pods and what the platform asks of it: the figures behind docs/capacity-and-cost.md's
// capacity table and test/capacity.test.ts. Pure functions over plain data.
import type { Values } from "./helmAddon";

/** Resource requests in the units the scheduler adds up. */
export interface Requests {
  /** millicores */
  cpu: number;
  /** MiB */
  memory: number;
}

export interface PodGroup {
  /** Helm release (or `kube-system`, `workspaces`) the pods belong to. */
  owner: string;
  name: string;
  kind: "Deployment" | "StatefulSet" | "DaemonSet" | "CronJob";
  /** Pods at once; a DaemonSet's is per node. */
  replicas: number;
  requests: Requests;
}

interface InstanceType {
  vcpus: number;
  memoryGiB: number;
  /** Elastic network interfaces and IPv4 addresses per interface: the VPC CNI's pod limit. */
  enis: number;
  ipv4PerEni: number;
}

/** The instance types the capacity figures know; extend it when you change `nodeInstanceTypes`. */
export const instanceTypes: Record<string, InstanceType> = {
  "t4g.medium": { vcpus: 2, memoryGiB: 4, enis: 3, ipv4PerEni: 6 },
  "t4g.large": { vcpus: 2, memoryGiB: 8, enis: 3, ipv4PerEni: 12 },
  "t4g.xlarge": { vcpus: 4, memoryGiB: 16, enis: 4, ipv4PerEni: 15 },
  "t3a.medium": { vcpus: 2, memoryGiB: 4, enis: 3, ipv4PerEni: 6 },
  "t3.medium": { vcpus: 2, memoryGiB: 4, enis: 3, ipv4PerEni: 6 },
};

export interface Allocatable extends Requests {
  pods: number;
}

/**
 * What one node offers pods on EKS with the VPC CNI's prefix delegation: max pods = ENIs × (addresses − 1) ×
 * 16 + 2, at most `maxPods` (cluster/platformCluster.ts maxPodsExpression); nodeadm reserves 255 MiB + 11
 * MiB per pod it allows and 6% of the first core, 1% of the second, 0.5% of the next two and 0.25% of the rest
 * for the kubelet, and evicts below 100 MiB free (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go).
 * The kernel keeps about 6% of the instance's memory, so kubelet capacity is ~94% of it (3850 MiB of 4 GiB).
 */
export function allocatable(instanceType: string, maxPods: number): Allocatable {
  const t = instanceTypes[instanceType];
  if (!t) {
    throw new Error(
      `no capacity figures for instance type "${instanceType}"; add it to instanceTypes in lib/capacity.ts`,
    );
  }
  const pods = Math.min(t.enis * (t.ipv4PerEni - 1) * 16 + 2, maxPods);
  const cores = [...Array(t.vcpus).keys()];
  const reservedCpu = cores.reduce((sum, i) => sum + (i === 0 ? 60 : i === 1 ? 10 : i < 4 ? 5 : 2.5), 0);
  const capacityMiB = Math.floor(t.memoryGiB * 1024 * 0.94);
  return {
    cpu: t.vcpus * 1000 - Math.ceil(reservedCpu),
    memory: capacityMiB - (255 + 11 * pods) - 100,
    pods,
  };
}

/** "250m" → 250 millicores, "1" → 1000; "640Mi" → 640 MiB, "1Gi" → 1024. */
export function parseQuantity(q: string | number | undefined, unit: "cpu" | "memory"): number {
  if (q === undefined) return 0;
  const m = /^(\d+(?:\.\d+)?)(m|Mi|Gi|Ki)?$/.exec(String(q));
  if (!m) throw new Error(`cannot read quantity "${q}"`);
  const n = Number(m[1]);
  if (unit === "cpu") return m[2] === "m" ? n : n * 1000;
  return { Mi: n, Gi: n * 1024, Ki: n / 1024, m: n / 1000 / 1024 / 1024 }[m[2] ?? ""] ?? n / 1024 / 1024;
}

const at = (values: Values, path: string): unknown =>
  path.split(".").reduce<unknown>((v, key) => (v as Values | undefined)?.[key], values);

const requestsAt = (values: Values, path: string): Requests => {
  const requests = at(values, path ? `${path}.resources.requests` : "resources.requests") as
    { cpu?: string; memory?: string } | undefined;
  return { cpu: parseQuantity(requests?.cpu, "cpu"), memory: parseQuantity(requests?.memory, "memory") };
};

/** A chart component: where its replicas, switch and resources sit in the chart's values. */
interface Component {
  name: string;
  kind: PodGroup["kind"];
  /** Values prefix of its `resources` ("" for the top level). */
  path: string;
  replicas?: string;
  enabled?: string;
}

/** The pods each chart runs, by the values keys of the pinned chart versions. */
const charts: Record<string, Component[]> = {
  // argo-helm argo-cd 10.1.1
  argocd: [
    {
      name: "argocd-application-controller",
      kind: "StatefulSet",
      path: "controller",
      replicas: "controller.replicas",
    },
    { name: "argocd-repo-server", kind: "Deployment", path: "repoServer", replicas: "repoServer.replicas" },
    { name: "argocd-server", kind: "Deployment", path: "server", replicas: "server.replicas" },
    { name: "argocd-redis", kind: "Deployment", path: "redis", enabled: "redis.enabled" },
    {
      name: "argocd-applicationset-controller",
      kind: "Deployment",
      path: "applicationSet",
      replicas: "applicationSet.replicas",
    },
    {
      name: "argocd-notifications-controller",
      kind: "Deployment",
      path: "notifications",
      enabled: "notifications.enabled",
    },
    { name: "argocd-dex-server", kind: "Deployment", path: "dex", enabled: "dex.enabled" },
    {
      name: "argocd-commit-server",
      kind: "Deployment",
      path: "commitServer",
      enabled: "commitServer.enabled",
    },
  ],
  // argo-helm argo-rollouts 2.41.0
  "argo-rollouts": [
    { name: "argo-rollouts", kind: "Deployment", path: "controller", replicas: "controller.replicas" },
    { name: "argo-rollouts-dashboard", kind: "Deployment", path: "dashboard", enabled: "dashboard.enabled" },
  ],
  // argo-helm argo-events 2.4.22, always installed (its EventBus, EventSource and Sensor pods are the
  // controller's, not the chart's: lib/cli/plan/capacity.ts counts them from the planned objects)
  "argo-events": [
    {
      name: "argo-events-controller-manager",
      kind: "Deployment",
      path: "controller",
      replicas: "controller.replicas",
    },
  ],
  // cert-manager v1.21.1
  "cert-manager": [
    { name: "cert-manager", kind: "Deployment", path: "", replicas: "replicaCount" },
    { name: "cert-manager-webhook", kind: "Deployment", path: "webhook", replicas: "webhook.replicaCount" },
    {
      name: "cert-manager-cainjector",
      kind: "Deployment",
      path: "cainjector",
      replicas: "cainjector.replicaCount",
      enabled: "cainjector.enabled",
    },
  ],
  // pulumi-kubernetes-operator 2.9.0
  "pulumi-kubernetes-operator": [
    { name: "pulumi-kubernetes-operator", kind: "Deployment", path: "", replicas: "replicaCount" },
  ],
  // karpenter 1.15.1 (aws/karpenter-provider-aws charts/karpenter)
  karpenter: [{ name: "karpenter", kind: "Deployment", path: "controller", replicas: "replicas" }],
  // kargo 1.11.2
  kargo: [
    { name: "kargo-api", kind: "Deployment", path: "api", replicas: "api.replicas", enabled: "api.enabled" },
    { name: "kargo-controller", kind: "Deployment", path: "controller", enabled: "controller.enabled" },
    {
      name: "kargo-management-controller",
      kind: "Deployment",
      path: "managementController",
      enabled: "managementController.enabled",
    },
    {
      name: "kargo-webhooks-server",
      kind: "Deployment",
      path: "webhooksServer",
      replicas: "webhooksServer.replicas",
      enabled: "webhooksServer.enabled",
    },
    {
      name: "kargo-external-webhooks-server",
      kind: "Deployment",
      path: "externalWebhooksServer",
      replicas: "externalWebhooksServer.replicas",
      enabled: "externalWebhooksServer.enabled",
    },
    {
      name: "kargo-garbage-collector",
      kind: "CronJob",
      path: "garbageCollector",
      enabled: "garbageCollector.enabled",
    },
  ],
};

/**
 * Every platform pod of the given releases, from their effective values (the chart's defaults with ours
 * merged over them).
 */
export function platformPods(effectiveValues: Record<string, Values>): PodGroup[] {
  return Object.entries(effectiveValues).flatMap(([release, values]) => {
    const components = charts[release];
    if (!components) throw new Error(`no pod inventory for release "${release}" in lib/capacity.ts`);
    return components
      .filter((c) => !c.enabled || at(values, c.enabled) !== false)
      .map((c) => ({
        owner: release,
        name: c.name,
        kind: c.kind,
        replicas: c.replicas ? Number(at(values, c.replicas) ?? 1) : 1,
        requests: requestsAt(values, c.path),
      }))
      .filter((g) => g.replicas > 0);
  });
}

/**
 * kube-system on EKS with the managed add-ons pulumi-eks installs (vpc-cni, kube-proxy, coredns), at
 * their default requests: aws-node 25m for each of its two containers, kube-proxy 100m, coredns 100m/70Mi
 * with two replicas.
 */
export const kubeSystemPods: PodGroup[] = [
  {
    owner: "kube-system",
    name: "aws-node",
    kind: "DaemonSet",
    replicas: 1,
    requests: { cpu: 50, memory: 0 },
  },
  {
    owner: "kube-system",
    name: "kube-proxy",
    kind: "DaemonSet",
    replicas: 1,
    requests: { cpu: 100, memory: 0 },
  },
  {
    owner: "kube-system",
    name: "coredns",
    kind: "Deployment",
    replicas: 2,
    requests: { cpu: 100, memory: 70 },
  },
];

/**
 * The EBS CSI driver add-on (cluster/ebsCsiDriver.ts), when the cluster runs it, at its chart's defaults
 * (kubernetes-sigs/aws-ebs-csi-driver charts/aws-ebs-csi-driver values.yaml and templates/controller.yaml):
 * 10m/40Mi for every container, the sidecars taking the controller's; two controller replicas of six
 * containers, the csi-snapshotter among them, as the chart adds it once the snapshot CRDs exist and the
 * snapshot-controller add-on that brings them is always installed with the driver (cluster/index.ts); and a
 * node pod of three containers on each node.
 */
export const ebsCsiDriverPods: PodGroup[] = [
  {
    owner: "kube-system",
    name: "ebs-csi-controller",
    kind: "Deployment",
    replicas: 2,
    requests: { cpu: 6 * 10, memory: 6 * 40 },
  },
  {
    owner: "kube-system",
    name: "ebs-csi-node",
    kind: "DaemonSet",
    replicas: 1,
    requests: { cpu: 3 * 10, memory: 3 * 40 },
  },
];

/**
 * The snapshot-controller add-on (cluster/snapshotController.ts), when the cluster runs it, as upstream
 * deploys it (kubernetes-csi/external-snapshotter deploy/kubernetes/snapshot-controller/
 * setup-snapshot-controller.yaml, v8.4.0): two replicas requesting nothing, so they take pod slots only. The
 * EKS build's own manifest, and any requests it sets, could not be read here.
 */
export const snapshotControllerPods: PodGroup[] = [
  {
    owner: "kube-system",
    name: "snapshot-controller",
    kind: "Deployment",
    replicas: 2,
    requests: { cpu: 0, memory: 0 },
  },
];

export interface CapacityReport {
  nodes: number;
  allocatable: Allocatable;
  /** Steady state: every platform pod and every workspace at once. */
  steady: Allocatable;
  /** A rolling update of the largest release: one extra pod per Deployment of it. */
  surge: Allocatable & { owner: string };
  total: Allocatable;
  fits: boolean;
}

const podsOf = (g: PodGroup, nodes: number) => (g.kind === "DaemonSet" ? g.replicas * nodes : g.replicas);

function sum(groups: PodGroup[], nodes: number): Allocatable {
  return groups.reduce(
    (t, g) => ({
      cpu: t.cpu + g.requests.cpu * podsOf(g, nodes),
      memory: t.memory + g.requests.memory * podsOf(g, nodes),
      pods: t.pods + podsOf(g, nodes),
    }),
    { cpu: 0, memory: 0, pods: 0 },
  );
}

/** Whether `groups` fit on `nodes` nodes of `instanceType`, with room for the largest release to roll. */
export function capacity(
  groups: PodGroup[],
  instanceType: string,
  nodes: number,
  maxPods: number,
): CapacityReport {
  const perNode = allocatable(instanceType, maxPods);
  const all = { cpu: perNode.cpu * nodes, memory: perNode.memory * nodes, pods: perNode.pods * nodes };
  const steady = sum(groups, nodes);
  const surges = [...new Set(groups.map((g) => g.owner))].map((owner) => ({
    owner,
    ...sum(
      groups.filter((g) => g.owner === owner && g.kind === "Deployment").map((g) => ({ ...g, replicas: 1 })),
      nodes,
    ),
  }));
  const surge = surges.reduce(
    (max, s) => ({
      owner: s.pods > max.pods || (s.pods === max.pods && s.memory > max.memory) ? s.owner : max.owner,
      cpu: Math.max(max.cpu, s.cpu),
      memory: Math.max(max.memory, s.memory),
      pods: Math.max(max.pods, s.pods),
    }),
    { owner: "", cpu: 0, memory: 0, pods: 0 },
  );
  const total = {
    cpu: steady.cpu + surge.cpu,
    memory: steady.memory + surge.memory,
    pods: steady.pods + surge.pods,
  };
  return {
    nodes,
    allocatable: all,
    steady,
    surge,
    total,
    fits: total.cpu <= all.cpu && total.memory <= all.memory && total.pods <= all.pods,
  };
}
