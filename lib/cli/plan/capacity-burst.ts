// What workspaces beyond the base ask of burst nodes: one Freight's, and the update stages' drift checks
// (lib/pipeline/drift.ts), which run whether or not a Freight moves. Figures for lib/cli/plan/capacity.ts.
import { allocatable, instanceTypes, parseQuantity, type PodGroup } from "../../capacity";
import type { ProgramPlan } from "./harness";

/** Burst nodes of the base's instance type that workspaces beyond the base fill, and what the NodePool allows. */
export interface BurstNeed {
  workspaces: number;
  /** Workspaces one burst node holds beside its DaemonSets. */
  perNode: number;
  nodes: number;
  /** The NodePool's limits (cluster-setup:burstCpuLimit, burstMemoryGiB), in vCPUs and GiB. */
  limits: { cpu: number; memoryGiB: number };
  /** Burst nodes those limits allow, and so the workspaces that can run on burst nodes at once. */
  allowedNodes: number;
}

/**
 * Drift checks: one workspace per update stage every `verification.driftInterval`, each at its own stage's
 * time. At worst all of them at once beside one Freight's: `burst` is what that asks of burst nodes.
 */
export interface DriftNeed {
  checks: number;
  /** Seconds between a stage's checks; undefined when they are off. */
  intervalSeconds: number | undefined;
  /** Workspace runs a day, all stages together. */
  runsPerDay: number;
  /** One Freight's workspaces and every drift check at once, and the base's own. */
  concurrent: number;
  atOnce: number;
  baseWorkspaces: number;
  burst: BurstNeed;
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
export const spelled = (n: number) => NUMBERS[n] ?? String(n);

/**
 * Burst nodes for `workspaces` of `workspace`'s requests, each node of the base's type (Karpenter may pick
 * another of its families) running the DaemonSets of `kube` first; and what the plan's NodePool allows.
 */
export function burstNeed(
  plans: ProgramPlan[],
  kube: PodGroup[],
  workspace: PodGroup,
  workspaces: number,
  instanceType: string,
  maxPods: number,
): BurstNeed {
  const pool = plans
    .flatMap((plan) => plan.resources)
    .find((r) => r.type === "kubernetes:karpenter.sh/v1:NodePool")?.inputs as
    { spec: { limits: { cpu: string; memory: string } } } | undefined;
  const limits = {
    cpu: parseQuantity(pool?.spec.limits.cpu ?? "0", "cpu") / 1000,
    memoryGiB: parseQuantity(pool?.spec.limits.memory ?? "0", "memory") / 1024,
  };
  const daemons = kube.filter((g) => g.kind === "DaemonSet");
  const node = allocatable(instanceType, maxPods);
  const free = {
    cpu: node.cpu - daemons.reduce((n, g) => n + g.requests.cpu, 0),
    memory: node.memory - daemons.reduce((n, g) => n + g.requests.memory, 0),
    pods: node.pods - daemons.length,
  };
  const perNode = Math.max(
    0,
    Math.min(
      workspace.requests.cpu ? Math.floor(free.cpu / workspace.requests.cpu) : free.pods,
      workspace.requests.memory ? Math.floor(free.memory / workspace.requests.memory) : free.pods,
      free.pods,
    ),
  );
  const size = instanceTypes[instanceType]!;
  return {
    workspaces,
    perNode,
    nodes: perNode > 0 ? Math.ceil(workspaces / perNode) : Infinity,
    limits,
    allowedNodes: Math.floor(Math.min(limits.cpu / size.vcpus, limits.memoryGiB / size.memoryGiB)),
  };
}

/**
 * When one Freight's workspaces and every drift check at once are more than the base and the burst limits
 * hold: the figures, or undefined. Not a failure either: a check waits for room like any workspace.
 */
export function driftShortfall(drift: DriftNeed): string | undefined {
  if (drift.burst.nodes <= drift.burst.allowedNodes) return undefined;
  return (
    `one Freight's ${drift.concurrent} workspaces and the ${drift.checks} drift checks (verification.driftInterval) ` +
    `make ${drift.atOnce} at once when every check coincides, ${drift.burst.workspaces} beyond the ${drift.baseWorkspaces} on the base: ` +
    `${drift.burst.nodes} burst nodes where the burst limits allow ${drift.burst.allowedNodes}; the others wait for one to finish.`
  );
}

/** What the drift checks add: runs a day, and at worst all at once beside one Freight. */
export function driftSentence(drift: DriftNeed): string {
  const { baseWorkspaces } = drift;
  if (!drift.intervalSeconds) return " Drift checks are off (`verification.driftInterval`).";
  const beyond = drift.burst.workspaces;
  const fits = drift.burst.nodes <= drift.burst.allowedNodes ? "within" : "past";
  return (
    ` Each of its ${spelled(drift.checks)} update stages also runs a drift check, one workspace of the same ` +
    `size every ${drift.intervalSeconds / 60} minutes (\`verification.driftInterval\`): ${drift.runsPerDay} runs a day. ` +
    `Should every check coincide with one Freight's stages, that is ${drift.atOnce} workspaces at once, ` +
    (beyond === 0
      ? `all on the base.`
      : `${spelled(beyond)} beyond the base's ${spelled(baseWorkspaces)} on ${spelled(drift.burst.nodes)} burst ` +
        `node${drift.burst.nodes === 1 ? "" : "s"}, ${fits} the limits.`)
  );
}
