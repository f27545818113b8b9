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
} from "../../capacity";
import { readValidationData } from "../../crds/schema";
import { mergeValues, type Values } from "../../helmAddon";
import { ancestors, programStages, runStages, type ProgramStage } from "../../pipeline/graph";
import { stackManifest } from "../../pipeline/stack-manifest";
import { stackObjectName } from "../../pipeline/names";
import type { Pipeline } from "../../pipeline/schema";
import type { ProgramPlan } from "./harness";
import { markdownTable, replaceBetweenMarkers } from "../../markdown";

export interface PlannedCapacity {
  groups: PodGroup[];
  instanceType: string;
  nodes: number;
  maxPods: number;
  /** Program stages of the pipeline, and how many of them one Freight can run at once. */
  programStages: number;
  concurrent: number;
  report: CapacityReport;
}

/**
 * Chart defaults at the pinned versions, by release (the committed data `npm run crds` extracts); cert-manager
 * ships a schema only: its defaults are 1 replica, no requests.
 */
export function chartDefaults(): Record<string, Values> {
  const data = readValidationData();
  return {
    ...Object.fromEntries(Object.entries(data.charts).map(([chart, c]) => [chart, c.defaults as Values])),
    "cert-manager": {},
  };
}

/**
 * The most program stages one Freight can run at once: the largest set of which none comes after another in
 * the pipeline (a stage runs only once the stages before it, gates and program dependencies included, have
 * the Freight; stages side by side auto-promote together). By Dilworth's theorem, the stages minus a maximum
 * matching of "comes before" pairs; returns such a set.
 */
export function concurrentStages(p: Pipeline): ProgramStage[] {
  const all = runStages(p);
  const stages = programStages(p);
  const before = new Map(stages.map((s) => [s.name, ancestors(all, s.name)]));
  // Kuhn's augmenting paths: matchOf[v] = the u matched to v, for an edge u before v.
  const matchOf = new Map<string, string>();
  const augment = (u: string, seen: Set<string>): boolean =>
    stages.some((v) => {
      if (!before.get(v.name)!.has(u) || seen.has(v.name)) return false;
      seen.add(v.name);
      const holder = matchOf.get(v.name);
      if (holder === undefined || augment(holder, seen)) {
        matchOf.set(v.name, u);
        return true;
      }
      return false;
    });
  for (const u of stages) augment(u.name, new Set());
  // König: from the unmatched left vertices, alternate along non-matching then matching edges; the stages
  // whose left copy is reached and whose right copy is not form a maximum antichain.
  const matchedLeft = new Map([...matchOf].map(([v, u]) => [u, v]));
  const left = new Set(stages.filter((u) => !matchedLeft.has(u.name)).map((u) => u.name));
  const right = new Set<string>();
  const queue = [...left];
  while (queue.length > 0) {
    const u = queue.pop()!;
    for (const v of stages)
      if (before.get(v.name)!.has(u) && !right.has(v.name) && matchOf.get(v.name) !== u) {
        right.add(v.name);
        const next = matchOf.get(v.name);
        if (next !== undefined && !left.has(next)) {
          left.add(next);
          queue.push(next);
        }
      }
  }
  return stages.filter((s) => left.has(s.name) && !right.has(s.name));
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

/**
 * The pods of the planned releases at their effective values, kube-system's, and the workspaces one Freight
 * of `p` starts at once, on the planned base node group. More (other Freight, other stages) wait for burst
 * nodes.
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
  const groups = [
    ...kubeSystemPods,
    ...(addon("aws-ebs-csi-driver") ? ebsCsiDriverPods : []),
    ...(addon("snapshot-controller") ? snapshotControllerPods : []),
    ...platformPods(effective),
    ...workspacePods(p, concurrentStages(p)),
  ];
  const nodeGroup = plans
    .flatMap((plan) => plan.resources)
    .find((r) => r.type === "eks:index:ManagedNodeGroup")!.inputs as {
    instanceTypes: string[];
    scalingConfig: { minSize: number };
  };
  const instanceType = nodeGroup.instanceTypes[0]!;
  const nodes = nodeGroup.scalingConfig.minSize;
  const maxPods = Number(plans.find((plan) => plan.project === "cluster")!.outputs.nodeMaxPods);
  return {
    groups,
    instanceType,
    nodes,
    maxPods,
    programStages: programStages(p).length,
    concurrent: groups.filter((g) => g.owner === "workspaces").length,
    report: capacity(groups, instanceType, nodes, maxPods),
  };
}

/** What the base lacks for the platform and one Freight's workspaces, in figures, or undefined when it holds them. */
export function capacityShortfall(planned: PlannedCapacity): string | undefined {
  const { report, nodes, instanceType, concurrent } = planned;
  if (report.fits) return undefined;
  const { total, allocatable: offered } = report;
  return (
    `the platform, ${concurrent} workspaces one Freight starts at once and a rolling update need ` +
    `${total.pods} pods, ${total.cpu}m CPU and ${total.memory} MiB; ${nodes} ${instanceType} nodes offer ` +
    `${offered.pods} pods, ${offered.cpu}m, ${offered.memory} MiB: stagger the stages (a gate between ` +
    "them), shrink stacks.workspaceResources in kargo/pipeline.ts, or raise cluster's nodeMinSize/" +
    "nodeDesiredSize or nodeInstanceTypes. Workspaces beyond what the base holds wait for a burst node."
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

const NUMBERS = [
  "no",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "eleven",
  "twelve",
];
const spelled = (n: number) => NUMBERS[n] ?? String(n);

/** The capacity table (docs/capacity-and-cost.md), laid out as prettier lays out a Markdown table. */
export function capacityTable(planned: PlannedCapacity): string {
  const { groups, nodes, report, instanceType, maxPods } = planned;
  const of = (owner: (o: string) => boolean) => {
    const picked = groups.filter((g) => owner(g.owner));
    return capacity(picked, instanceType, nodes, maxPods).steady;
  };
  const kube = of((o) => o === "kube-system");
  const platform = of((o) => o !== "kube-system" && o !== "workspaces");
  const workspaces = groups.filter((g) => g.owner === "workspaces");
  const ws = of((o) => o === "workspaces");
  const each = workspaces[0]?.requests ?? { cpu: 0, memory: 0 };
  const { total, allocatable, surge } = report;
  const rows = [
    ["requests", "pods", "CPU", "memory"],
    [kubeSystemDescription(groups), `${kube.pods}`, `${kube.cpu}m`, `${kube.memory} MiB`],
    [
      "cert-manager, Argo CD, Argo Rollouts, PKO, Kargo, Karpenter",
      `${platform.pods}`,
      `${platform.cpu}m`,
      `${platform.memory} MiB`,
    ],
    [
      `${spelled(workspaces.length)} workspaces, the most one Freight starts at once of ${spelled(planned.programStages)} program stages (${each.cpu}m, ${each.memory} MiB each)`,
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
  return markdownTable(rows);
}

const START = "<!-- capacity table: generated by `npm run docs` from the plan and kargo/pipeline.ts -->";
const END = "<!-- end of capacity table -->";

/** The capacity page with its capacity table rewritten. */
export function withCapacityTable(readme: string, table: string): string {
  return replaceBetweenMarkers(readme, START, END, table);
}
