import * as fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { allocatable, capacity, snapshotControllerPods } from "../lib/capacity";
import { ancestors, programStages, runStages, type ProgramStage } from "../lib/pipeline/graph";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  capacityTable,
  capacityShortfall,
  chartDefaults,
  concurrentStages,
  plannedCapacity,
  type PlannedCapacity,
} from "../lib/cli/plan/capacity";
import { planChain } from "../lib/cli/plan/projects";
import { docPages } from "../lib/markdown";
import { withMoreEnvironments } from "./capacity-support";
import { ofType, planProject } from "./helpers";

const pipeline = validatePipeline(definition);

/** The largest set of program stages none of which comes after another, by trying every subset. */
function bruteForceConcurrency(p: ReturnType<typeof validatePipeline>): number {
  const stages = programStages(p);
  const all = runStages(p);
  const above = new Map(stages.map((s) => [s.name, ancestors(all, s.name)]));
  const before = (a: ProgramStage, b: ProgramStage) => above.get(b.name)!.has(a.name);
  let best = 0;
  for (let mask = 1; mask < 1 << stages.length; mask++) {
    const picked = stages.filter((_, i) => mask & (1 << i));
    if (picked.length <= best) continue;
    if (picked.every((a) => picked.every((b) => a === b || !before(a, b)))) best = picked.length;
  }
  return best;
}

describe("capacity of the fixed base", () => {
  let planned: PlannedCapacity;
  let plans: Awaited<ReturnType<typeof planChain>>;

  beforeAll(async () => {
    plans = await planChain();
    // Every release the plan installs has its chart's defaults (and a pod inventory in lib/capacity.ts).
    const releases = plans.flatMap((p) => ofType(p, "kubernetes:helm.sh/v3:Release")).map((r) => r.name);
    expect(releases.sort()).toEqual(Object.keys(chartDefaults()).sort());
    planned = plannedCapacity(plans, pipeline);
  });

  it("knows what a t4g.medium offers pods with prefix delegation: CPU and memory bound it, not addresses", () => {
    // 3 interfaces × 5 slots × 16 addresses + 2 = 242, capped; 11 MiB reserved per pod allowed.
    expect(allocatable("t4g.medium", 40)).toEqual({
      pods: 40,
      cpu: 1930,
      memory: 3850 - (255 + 11 * 40) - 100,
    });
    expect(allocatable("t4g.medium", 110)).toEqual({
      pods: 110,
      cpu: 1930,
      memory: 3850 - (255 + 11 * 110) - 100,
    });
    expect(allocatable("t4g.medium", 500).pods).toBe(242);
    expect(() => allocatable("m7g.metal", 40)).toThrow(/no capacity figures for instance type "m7g.metal"/);
  });

  it("counts the workspaces one Freight starts at once: stages of which none comes after another", () => {
    const concurrent = concurrentStages(pipeline);
    expect(concurrent.length).toBe(bruteForceConcurrency(pipeline));
    const all = runStages(pipeline);
    for (const a of concurrent)
      for (const b of concurrent) expect(a === b || !ancestors(all, b.name).has(a.name)).toBe(true);
    // Two programs' stages in one environment never overlap: a program waits for those it depends on.
    // Environments side by side after one gate run together: one stage each more at least.
    const side = withMoreEnvironments(definition, 3, "side by side");
    const wide = concurrentStages(side);
    const sideAll = runStages(side);
    for (const a of wide)
      for (const b of wide) expect(a === b || !ancestors(sideAll, b.name).has(a.name)).toBe(true);
    expect(wide.length).toBeGreaterThanOrEqual(Math.max(concurrent.length, 3));
  });

  it("counts every platform pod at our chart values (Karpenter's too), and one Freight's workspaces", () => {
    const { groups } = planned;
    const workspaces = groups.filter((g) => g.owner === "workspaces");
    expect(workspaces.map((g) => g.name)).toEqual(
      concurrentStages(pipeline).map((s) => `${pipeline.project}-${s.name}-workspace`),
    );
    expect(planned.concurrent).toBe(workspaces.length);
    expect(planned.programStages).toBe(programStages(pipeline).length);
    const names = groups.map((g) => g.name);
    expect(names).toContain("karpenter");
    for (const trimmed of [
      "argocd-applicationset-controller",
      "argocd-notifications-controller",
      "argocd-dex-server",
    ])
      expect(names).not.toContain(trimmed);
    expect(groups.find((g) => g.name === "argo-rollouts")!.replicas).toBe(1);
    // Every platform pod asks for what it needs, so the scheduler never packs workspaces onto used memory.
    // The snapshot controller's requests are the EKS add-on's own, which we neither set nor can read.
    const unset = new Set(snapshotControllerPods.map((g) => g.name));
    for (const g of groups.filter((g) => g.kind !== "DaemonSet" && !unset.has(g.name)))
      expect(g.requests.memory, `${g.name} requests memory`).toBeGreaterThan(0);
  });

  it("fits the platform, one Freight's workspaces and a rolling update of the largest release on the base", () => {
    const { report } = planned;
    expect(capacityShortfall(planned)).toBeUndefined();
    expect(report.fits).toBe(true);
    // The largest of each: Kargo's five Deployments, the operator's 200m, Kargo's 448 MiB.
    expect(report.surge).toEqual({ owner: "kargo", pods: 5, cpu: 200, memory: 448 });
    // Requests, not pods, are what runs out first.
    expect(report.total.pods).toBeLessThan(report.allocatable.pods / 2);
  });

  it("needs no node-size change for ten more environments added as documented", () => {
    const more = withMoreEnvironments(definition, 10);
    const bigger = plannedCapacity(plans, more);
    expect(bigger.programStages).toBeGreaterThan(planned.programStages);
    expect(bigger.concurrent).toBe(planned.concurrent);
    expect(capacityShortfall(bigger)).toBeUndefined();
  });

  it("fails with figures when one Freight starts more workspaces than the base holds", () => {
    const side = withMoreEnvironments(definition, 10, "side by side");
    const crowded = plannedCapacity(plans, side);
    const { total, allocatable: offered } = crowded.report;
    expect(crowded.report.fits).toBe(false);
    const problem = capacityShortfall(crowded)!;
    expect(problem).toContain(`${crowded.concurrent} workspaces`);
    expect(problem).toContain(`${total.cpu}m CPU and ${total.memory} MiB`);
    expect(problem).toContain(`${offered.cpu}m, ${offered.memory} MiB`);
    // One node fewer does not hold even the example's.
    expect(capacity(planned.groups, planned.instanceType, planned.nodes - 1, planned.maxPods).fits).toBe(
      false,
    );
  });

  it("is the table docs/capacity-and-cost.md shows (run `npm run docs` after changing the pipeline or the nodes)", () => {
    const page = fs.readFileSync(docPages.capacityAndCost, "utf8");
    expect(page).toContain(capacityTable(planned));
  });

  it("counts the EBS CSI driver's and the snapshot controller's pods when the cluster runs them, and none when off", async () => {
    const [, ...rest] = await planChain();
    const off = plannedCapacity(
      [await planProject("cluster", { "cluster:ebsCsiDriver": false }), ...rest],
      pipeline,
    );
    const added = planned.groups.filter((g) => !off.groups.some((d) => d.name === g.name));
    expect(added.map((g) => `${g.name} ${g.kind} ${g.replicas}`)).toEqual([
      "ebs-csi-controller Deployment 2",
      "ebs-csi-node DaemonSet 1",
      "snapshot-controller Deployment 2",
    ]);
    expect(planned.report.total.pods).toBe(off.report.total.pods + 2 + planned.nodes + 2);
    // Six containers of 10m/40Mi per controller replica: the csi-snapshotter runs once the snapshot CRDs exist.
    expect(added.find((g) => g.name === "ebs-csi-controller")!.requests).toEqual({ cpu: 60, memory: 240 });
    // Pod slots only: upstream's Deployment requests nothing.
    expect(added.find((g) => g.name === "snapshot-controller")!.requests).toEqual({ cpu: 0, memory: 0 });
    const kubeSystem = (p: PlannedCapacity) => capacityTable(p).split("\n")[2]!.split("|")[1]!.trim();
    expect(kubeSystem(planned)).toBe(
      "kube-system (aws-node, kube-proxy, ebs-csi-node on each node; two coredns, two ebs-csi-controller, two snapshot-controller)",
    );
    expect(kubeSystem(off)).toBe("kube-system (aws-node, kube-proxy on each node; two coredns)");
  });

  it("counts the snapshot controller only where the plan installs its add-on", async () => {
    const [cluster, ...rest] = await planChain();
    // The EBS CSI driver without the snapshot controller: only the add-on's presence in the plan decides.
    const withoutSnapshots = {
      ...cluster!,
      resources: cluster!.resources.filter(
        (r) => !(r.type === "aws:eks/addon:Addon" && r.inputs.addonName === "snapshot-controller"),
      ),
    };
    const names = plannedCapacity([withoutSnapshots, ...rest], pipeline).groups.map((g) => g.name);
    expect(names).toContain("ebs-csi-controller");
    expect(names).not.toContain("snapshot-controller");
    expect(planned.groups.map((g) => g.name)).toContain("snapshot-controller");
  });
});
