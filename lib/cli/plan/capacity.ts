// What the planned platform and this pipeline's workspaces ask of the planned nodes: the figures of the
// capacity table of docs/capacity-and-cost.md (`npm run docs` writes it) and of test/capacity.test.ts.
import {
  capacity,
  ebsCsiDriverPods,
  kubeSystemPods,
  parseQuantity,
  platformPods,
  type CapacityReport,
  type PodGroup,
} from "../../capacity";
import { readValidationData } from "../../crds/schema";
import { mergeValues, type Values } from "../../helmAddon";
import { programStages } from "../../pipeline/graph";
import { stackManifest } from "../../pipeline/stack-manifest";
import { stackObjectName } from "../../pipeline/names";
import type { Pipeline } from "../../pipeline/schema";
import type { ProgramPlan } from "./harness";
import { markdownTable, replaceBetweenMarkers } from "../../markdown";

export interface PlannedCapacity {
  groups: PodGroup[];
  instanceType: string;
  nodes: number;
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

/** One workspace pod per program stage: each may run at once (Kargo promotes them independently). */
export function workspacePods(p: Pipeline): PodGroup[] {
  return programStages(p).map((stage) => {
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

/** The pods of the planned releases at their effective values, kube-system's, and `p`'s workspaces, on the planned node group. */
export function plannedCapacity(plans: ProgramPlan[], p: Pipeline): PlannedCapacity {
  const defaults = chartDefaults();
  const releases = plans.flatMap((plan) =>
    plan.resources.filter((r) => r.type === "kubernetes:helm.sh/v3:Release"),
  );
  const effective = Object.fromEntries(
    releases.map((r) => [r.name, mergeValues(defaults[r.name] ?? {}, r.inputs.values as Values)]),
  );
  const ebsCsiDriver = plans.some((plan) =>
    plan.resources.some(
      (r) => r.type === "aws:eks/addon:Addon" && r.inputs.addonName === "aws-ebs-csi-driver",
    ),
  );
  const groups = [
    ...kubeSystemPods,
    ...(ebsCsiDriver ? ebsCsiDriverPods : []),
    ...platformPods(effective),
    ...workspacePods(p),
  ];
  const nodeGroup = plans
    .flatMap((plan) => plan.resources)
    .find((r) => r.type === "eks:index:ManagedNodeGroup")!.inputs as {
    instanceTypes: string[];
    scalingConfig: { minSize: number };
  };
  const instanceType = nodeGroup.instanceTypes[0]!;
  const nodes = nodeGroup.scalingConfig.minSize;
  return { groups, instanceType, nodes, report: capacity(groups, instanceType, nodes) };
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
export function capacityTable({ groups, nodes, report }: PlannedCapacity): string {
  const of = (owner: (o: string) => boolean) => {
    const picked = groups.filter((g) => owner(g.owner));
    return capacity(picked, "t4g.medium", nodes).steady;
  };
  const kube = of((o) => o === "kube-system");
  const platform = of((o) => o !== "kube-system" && o !== "workspaces");
  const workspaces = groups.filter((g) => g.owner === "workspaces");
  const ws = of((o) => o === "workspaces");
  const each = workspaces[0]?.requests ?? { cpu: 0, memory: 0 };
  const { total, allocatable, surge } = report;
  const rows = [
    ["requests", "pods", "CPU", "memory"],
    [
      groups.some((g) => g.name === "ebs-csi-node")
        ? "kube-system (aws-node, kube-proxy, ebs-csi-node on each node; two coredns, two ebs-csi-controller)"
        : "kube-system (aws-node, kube-proxy on each node; two coredns)",
      `${kube.pods}`,
      `${kube.cpu}m`,
      `${kube.memory} MiB`,
    ],
    [
      "cert-manager, Argo CD, Argo Rollouts, PKO, Kargo",
      `${platform.pods}`,
      `${platform.cpu}m`,
      `${platform.memory} MiB`,
    ],
    [
      `${spelled(workspaces.length)} workspaces (every program stage can run at once: ${each.cpu}m, ${each.memory} MiB)`,
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
      `**total** / what ${spelled(nodes)} nodes offer`,
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
