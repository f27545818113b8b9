// What the planned platform and this pipeline's workspaces ask of the planned nodes: the figures of the
// capacity table of docs/capacity-and-cost.md (`npm run docs` writes it) and of test/capacity.test.ts.
import {
  capacity,
  ebsCsiDriverPods,
  kubeSystemPods,
  parseQuantity,
  platformPods,
  snapshotControllerPods,
  type CapacityReport,
  type PodGroup,
  type Requests,
} from "../../capacity";
import { routerPodResources } from "../../pipeline/events";
import { readValidationData } from "../../crds/schema";
import { mergeValues, type Values } from "../../helmAddon";
import { concurrentStages } from "../../pipeline/concurrency";
import { programStages, type ProgramStage } from "../../pipeline/graph";
import { stackManifest } from "../../pipeline/stack-manifest";
import { stackObjectName } from "../../pipeline/names";
import { driftIntervalSeconds, driftStages } from "../../pipeline/drift";
import type { Pipeline } from "../../pipeline/schema";
import type { ProgramPlan } from "./harness";
import { markdownTable, replaceBetweenMarkers } from "../../markdown";
import { burstNeed, driftSentence, spelled, type BurstNeed, type DriftNeed } from "./capacity-burst";

export { driftShortfall, type BurstNeed, type DriftNeed } from "./capacity-burst";

export interface PlannedCapacity {
  /** The base's pods: kube-system's, the platform's, and `baseWorkspaces` workspaces. */
  groups: PodGroup[];
  instanceType: string;
  nodes: number;
  maxPods: number;
  /** Workspaces the base is sized for (cluster:baseWorkspaces), whatever the pipeline. */
  baseWorkspaces: number;
  /** Program stages of the pipeline, and how many of them one Freight can run at once. */
  programStages: number;
  concurrent: number;
  /** What one Freight's workspaces beyond the base ask of burst nodes. */
  burst: BurstNeed;
  /** The update stages' drift checks (lib/pipeline/drift.ts), which run whether or not a Freight moves. */
  drift: DriftNeed;
  report: CapacityReport;
}

/**
 * Chart defaults at the pinned versions, by release (the committed data `npm run crds` extracts); cert-manager
 * ships a schema only: its defaults are 1 replica, no requests. argo-events' chart values are not in that
 * data (argo-helm is no Go module): its add-on sets every value the inventory reads, the controller's
 * replicas and requests (cluster-setup/addons/argoEvents.ts; test/event-router.test.ts holds them).
 */
export function chartDefaults(): Record<string, Values> {
  const data = readValidationData();
  return {
    ...Object.fromEntries(Object.entries(data.charts).map(([chart, c]) => [chart, c.defaults as Values])),
    "cert-manager": {},
    "argo-events": {},
  };
}

/** The workspace pods of `stages` (by default every program stage), at their programs' requests. */
export function workspacePods(p: Pipeline, stages: ProgramStage[] = programStages(p)): PodGroup[] {
  return stages.map((stage) => {
    const { resources } = stackManifest(p, stage).spec.workspaceTemplate!.spec!;
    const requests = (resources as { requests: Record<string, string> }).requests;
    return {
      owner: "workspaces",
      name: `${stackObjectName(p, stage.name)}-workspace`,
      kind: "StatefulSet" as const,
      replicas: 1,
      requests: { cpu: parseQuantity(requests.cpu, "cpu"), memory: parseQuantity(requests.memory, "memory") },
    };
  });
}

/** The largest workspace any program stage asks for: what the base keeps room for, `baseWorkspaces` times. */
function largestWorkspace(p: Pipeline): PodGroup {
  const [largest] = workspacePods(p).sort(
    (a, b) => b.requests.memory - a.requests.memory || b.requests.cpu - a.requests.cpu,
  );
  return { ...largest!, name: "workspace" };
}

/**
 * The pods of the planned releases at their effective values, kube-system's, and `cluster:baseWorkspaces`
 * workspaces of the largest program's requests, on the planned base node group: the base, whose size no
 * pipeline changes. The workspaces one Freight of `p` starts at once beyond those take burst nodes.
 */
export function plannedCapacity(plans: ProgramPlan[], p: Pipeline): PlannedCapacity {
  const defaults = chartDefaults();
  const releases = plans.flatMap((plan) =>
    plan.resources.filter((r) => r.type === "kubernetes:helm.sh/v3:Release"),
  );
  const effective = Object.fromEntries(
    releases.map((r) => [r.name, mergeValues(defaults[r.name] ?? {}, r.inputs.values as Values)]),
  );
  const addon = (name: string) =>
    plans.some((plan) =>
      plan.resources.some((r) => r.type === "aws:eks/addon:Addon" && r.inputs.addonName === name),
    );
  const cluster = plans.find((plan) => plan.project === "cluster")!.outputs;
  const baseWorkspaces = Number(cluster.baseWorkspaces);
  const workspace = largestWorkspace(p);
  const kube = [
    ...kubeSystemPods,
    ...(addon("aws-ebs-csi-driver") ? ebsCsiDriverPods : []),
    ...(addon("snapshot-controller") ? snapshotControllerPods : []),
  ];
  const groups = [
    ...kube,
    ...platformPods(effective),
    ...eventRouterPods(plans),
    ...(baseWorkspaces > 0 ? [{ ...workspace, replicas: baseWorkspaces }] : []),
  ];
  const nodeGroup = plans
    .flatMap((plan) => plan.resources)
    .find((r) => r.type === "eks:index:ManagedNodeGroup")!.inputs as {
    instanceTypes: string[];
    scalingConfig: { minSize: number };
  };
  const instanceType = nodeGroup.instanceTypes[0]!;
  const nodes = nodeGroup.scalingConfig.minSize;
  const maxPods = Number(cluster.nodeMaxPods);
  const concurrent = concurrentStages(p).length;
  const burstWorkspaces = Math.max(0, concurrent - baseWorkspaces);
  const checks = driftStages(p).length;
  const intervalSeconds = driftIntervalSeconds(p);
  const atOnce = concurrent + checks;
  const drift: DriftNeed = {
    checks,
    intervalSeconds,
    runsPerDay: intervalSeconds ? Math.round((checks * 86400) / intervalSeconds) : 0,
    concurrent,
    atOnce,
    baseWorkspaces,
    burst: burstNeed(plans, kube, workspace, Math.max(0, atOnce - baseWorkspaces), instanceType, maxPods),
  };
  return {
    drift,
    groups,
    instanceType,
    nodes,
    maxPods,
    baseWorkspaces,
    programStages: programStages(p).length,
    concurrent,
    burst: burstNeed(plans, kube, workspace, burstWorkspaces, instanceType, maxPods),
    report: capacity(groups, instanceType, nodes, maxPods),
  };
}

const sumRequests = (list: unknown[]): Requests =>
  list.reduce<Requests>(
    (sum, r) => {
      const q = (r ?? {}) as { cpu?: string; memory?: string };
      return {
        cpu: sum.cpu + parseQuantity(q.cpu, "cpu"),
        memory: sum.memory + parseQuantity(q.memory, "memory"),
      };
    },
    { cpu: 0, memory: 0 },
  );

/**
 * The pods Argo Events' controller runs for the planned objects, which no chart lists: the EventBus's
 * JetStream servers (a StatefulSet of three containers each), and one Deployment per EventSource and Sensor
 * (argo-events v1.9.10 pkg/reconciler/{eventbus/installer/jetstream.go,eventsource,sensor}/resource.go).
 * A Sensor's spec is a secret with a webhook: its pod then requests what ours always do.
 */
function eventRouterPods(plans: ProgramPlan[]): PodGroup[] {
  const objects = (kind: string) =>
    plans.flatMap((plan) =>
      plan.resources.filter((r) => r.type === `kubernetes:argoproj.io/v1alpha1:${kind}`),
    );
  const bus = objects("EventBus").map((r): PodGroup => {
    const js = ((r.inputs.spec as { jetstream?: Record<string, unknown> }).jetstream ?? {}) as Record<
      string,
      { resources?: { requests?: unknown } } | number
    >;
    const containers = ["containerTemplate", "reloaderContainerTemplate", "metricsContainerTemplate"];
    return {
      owner: "argo-events",
      name: "eventbus-jetstream",
      kind: "StatefulSet",
      replicas: Number(js.replicas ?? 3),
      requests: sumRequests(
        containers.map((c) => (js[c] as { resources?: { requests?: unknown } })?.resources?.requests),
      ),
    };
  });
  const deployments = ["EventSource", "Sensor"].flatMap((kind) =>
    objects(kind).map((r): PodGroup => {
      const spec = r.inputs.spec as { template?: { container?: { resources?: { requests?: unknown } } } };
      const requests =
        typeof spec === "object"
          ? spec.template?.container?.resources?.requests
          : routerPodResources.requests;
      return {
        owner: "argo-events",
        name: `${kind.toLowerCase()}-${(r.inputs.metadata as { name: string }).name}`,
        kind: "Deployment",
        replicas: 1,
        requests: sumRequests([requests]),
      };
    }),
  );
  return [...bus, ...deployments];
}

/** What the base lacks for the platform and `cluster:baseWorkspaces` workspaces, in figures, or undefined when it holds them. */
export function capacityShortfall(planned: PlannedCapacity): string | undefined {
  const { report, nodes, instanceType, baseWorkspaces } = planned;
  if (report.fits) return undefined;
  const { total, allocatable: offered } = report;
  return (
    `the platform, the ${baseWorkspaces} workspaces of cluster:baseWorkspaces and a rolling update need ` +
    `${total.pods} pods, ${total.cpu}m CPU and ${total.memory} MiB; ${nodes} ${instanceType} nodes offer ` +
    `${offered.pods} pods, ${offered.cpu}m, ${offered.memory} MiB: lower cluster:baseWorkspaces (more ` +
    "workspaces then wait for a burst node), shrink stacks.workspaceResources in kargo/pipeline.ts, or raise " +
    "cluster's nodeMinSize/nodeDesiredSize or nodeInstanceTypes."
  );
}

/**
 * When the NodePool's limits cannot hold every workspace one Freight starts beyond the base at once: the
 * figures, or undefined. Not a failure: the rest wait for a workspace to finish.
 */
export function burstShortfall(planned: PlannedCapacity): string | undefined {
  const { burst, instanceType, concurrent, baseWorkspaces } = planned;
  if (burst.nodes <= burst.allowedNodes) return undefined;
  return (
    `one Freight starts ${concurrent} workspaces at once, ${burst.workspaces} beyond the ${baseWorkspaces} ` +
    `on the base: ${burst.nodes} burst ${instanceType} nodes of ${burst.perNode} each, where ` +
    `cluster-setup:burstCpuLimit (${burst.limits.cpu}) and burstMemoryGiB (${burst.limits.memoryGiB}) allow ` +
    `${burst.allowedNodes}; the others wait for one to finish, or raise those limits.`
  );
}

/** The kube-system row's label: DaemonSets run on each node, Deployments at their replicas. */
function kubeSystemDescription(groups: PodGroup[]): string {
  const kube = groups.filter((g) => g.owner === "kube-system");
  const daemons = kube.filter((g) => g.kind === "DaemonSet").map((g) => g.name);
  const deployments = kube
    .filter((g) => g.kind !== "DaemonSet")
    .map((g) => `${spelled(g.replicas)} ${g.name}`);
  return `kube-system (${daemons.join(", ")} on each node; ${deployments.join(", ")})`;
}

/** The capacity table (docs/capacity-and-cost.md), laid out as prettier lays out a Markdown table. */
export function capacityTable(planned: PlannedCapacity): string {
  const { groups, nodes, report, instanceType, maxPods } = planned;
  const of = (owner: (o: string) => boolean) => {
    const picked = groups.filter((g) => owner(g.owner));
    return capacity(picked, instanceType, nodes, maxPods).steady;
  };
  const kube = of((o) => o === "kube-system");
  const platform = of((o) => o !== "kube-system" && o !== "workspaces");
  const ws = of((o) => o === "workspaces");
  const each = groups.find((g) => g.owner === "workspaces")?.requests ?? { cpu: 0, memory: 0 };
  const { total, allocatable, surge } = report;
  const rows = [
    ["requests", "pods", "CPU", "memory"],
    [kubeSystemDescription(groups), `${kube.pods}`, `${kube.cpu}m`, `${kube.memory} MiB`],
    [
      "cert-manager, Argo CD, Argo Rollouts, PKO, Kargo, Karpenter, Argo Events",
      `${platform.pods}`,
      `${platform.cpu}m`,
      `${platform.memory} MiB`,
    ],
    [
      `${spelled(planned.baseWorkspaces)} workspaces (\`cluster:baseWorkspaces\`; ${each.cpu}m, ${each.memory} MiB each, the largest program's)`,
      `${ws.pods}`,
      `${ws.cpu}m`,
      `${ws.memory} MiB`,
    ],
    [
      "a rolling update (one extra pod per Deployment of a release; the largest of each)",
      `${surge.pods}`,
      `${surge.cpu}m`,
      `${surge.memory} MiB`,
    ],
    [
      `**total** / what ${spelled(nodes)} ${instanceType} nodes offer (at most ${maxPods} pods each)`,
      `**${total.pods}** / ${allocatable.pods}`,
      `**${total.cpu}m** / ${allocatable.cpu}m`,
      `**${total.memory}** / ${allocatable.memory} MiB`,
    ],
  ];
  return `${markdownTable(rows)}\n\n${burstSentence(planned)}`;
}

/** What one Freight of the pipeline starts beyond the base, and what the burst limits hold. */
function burstSentence(planned: PlannedCapacity): string {
  const { concurrent, baseWorkspaces, burst, instanceType } = planned;
  const beyond =
    burst.workspaces === 0
      ? "none waits for a burst node"
      : `${spelled(burst.workspaces)} beyond the base take${burst.workspaces === 1 ? "s" : ""} burst nodes`;
  return (
    `One Freight of \`kargo/pipeline.ts\` runs at most ${spelled(concurrent)} of its ` +
    `${spelled(planned.programStages)} program stages at once, so ${beyond}. A burst ${instanceType} ` +
    `holds ${spelled(burst.perNode)} workspaces beside its DaemonSets, and the NodePool's limits ` +
    `(${burst.limits.cpu} vCPUs, ${burst.limits.memoryGiB} GiB) allow ${spelled(burst.allowedNodes)} such ` +
    `nodes: ${burst.perNode * burst.allowedNodes} workspaces at once beyond the base's ${spelled(baseWorkspaces)}.` +
    driftSentence(planned.drift)
  );
}

const START = "<!-- capacity table: generated by `npm run docs` from the plan and kargo/pipeline.ts -->";
const END = "<!-- end of capacity table -->";

/** The capacity page with its capacity table rewritten. */
export function withCapacityTable(readme: string, table: string): string {
  return replaceBetweenMarkers(readme, START, END, table);
}
