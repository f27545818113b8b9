import * as fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { allocatable, capacity } from "../lib/capacity";
import { programStages } from "../lib/pipeline/graph";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  capacityTable,
  chartDefaults,
  plannedCapacity,
  type PlannedCapacity,
} from "../lib/cli/plan/capacity";
import { planChain } from "../lib/cli/plan/projects";
import { docPages } from "../lib/markdown";
import { ofType, planProject } from "./helpers";

const pipeline = validatePipeline(definition);

describe("capacity of the default node group", () => {
  let planned: PlannedCapacity;

  beforeAll(async () => {
    const plans = await planChain();
    // Every release the plan installs has its chart's defaults (and a pod inventory in lib/capacity.ts).
    const releases = plans.flatMap((p) => ofType(p, "kubernetes:helm.sh/v3:Release")).map((r) => r.name);
    expect(releases.sort()).toEqual(Object.keys(chartDefaults()).sort());
    planned = plannedCapacity(plans, pipeline);
  });

  it("knows what a t4g.medium offers pods: 17 pods, 1930m CPU, 3308 MiB", () => {
    expect(allocatable("t4g.medium")).toEqual({ pods: 17, cpu: 1930, memory: 3308 });
    expect(() => allocatable("m7g.metal")).toThrow(/no capacity figures for instance type "m7g.metal"/);
  });

  it("counts every platform pod at our chart values, and a workspace for every stage that can run at once", () => {
    const { groups } = planned;
    const workspaces = groups.filter((g) => g.owner === "workspaces");
    expect(workspaces.map((g) => g.name)).toEqual(
      programStages(pipeline).map((s) => `${pipeline.project}-${s.name}-workspace`),
    );
    const names = groups.map((g) => g.name);
    for (const trimmed of [
      "argocd-applicationset-controller",
      "argocd-notifications-controller",
      "argocd-dex-server",
    ])
      expect(names).not.toContain(trimmed);
    expect(groups.find((g) => g.name === "argo-rollouts")!.replicas).toBe(1);
    // Every platform pod asks for what it needs, so the scheduler never packs workspaces onto used memory.
    for (const g of groups.filter((g) => g.kind !== "DaemonSet"))
      expect(g.requests.memory, `${g.name} requests memory`).toBeGreaterThan(0);
  });

  it("fits the platform, this pipeline's workspaces and a rolling update of the largest release on the planned nodes", () => {
    const { report, nodes, instanceType } = planned;
    const { total, allocatable: offered } = report;
    expect(
      report.fits,
      `${total.pods} pods, ${total.cpu}m CPU and ${total.memory} MiB do not fit on ${nodes} ${instanceType} nodes ` +
        `(${offered.pods} pods, ${offered.cpu}m, ${offered.memory} MiB): shrink stacks.workspaceResources in ` +
        "kargo/pipeline.ts, or raise cluster's nodeMinSize/nodeDesiredSize or nodeInstanceTypes",
    ).toBe(true);
    // The largest of each: Kargo's five Deployments, the operator's 200m, Kargo's 448 MiB.
    expect(report.surge).toEqual({ owner: "kargo", pods: 5, cpu: 200, memory: 448 });
  });

  it("is the table docs/capacity-and-cost.md shows (run `npm run docs` after changing the pipeline or the nodes)", () => {
    const readme = fs.readFileSync(docPages.capacityAndCost, "utf8");
    expect(readme).toContain(capacityTable(planned));
  });

  it("would not fit the same pods on one node", () => {
    expect(capacity(planned.groups, planned.instanceType, 1).fits).toBe(false);
  });

  it("counts the EBS CSI driver's pods when the cluster runs it: on the default nodes they do not fit, a third node holds them", async () => {
    const [, ...rest] = await planChain();
    const nodes = planned.nodes;
    const withDriver = async (extra: Record<string, unknown> = {}) =>
      plannedCapacity(
        [await planProject("cluster", { "cluster:ebsCsiDriver": true, ...extra }), ...rest],
        pipeline,
      );
    const on = await withDriver();
    const added = on.groups.filter((g) => !planned.groups.some((d) => d.name === g.name));
    expect(added.map((g) => `${g.name} ${g.kind} ${g.replicas}`)).toEqual([
      "ebs-csi-controller Deployment 2",
      "ebs-csi-node DaemonSet 1",
    ]);
    expect(on.report.total.pods).toBe(planned.report.total.pods + 2 + nodes);
    // On the default two t4g.medium nodes (32 of 34 pods taken) they do not fit: docs/capacity-and-cost.md's "Per
    // promotion" says the cache needs a third node. A fork with room to spare may not.
    const spare = planned.report.allocatable.pods - planned.report.total.pods;
    if (spare < 2 + nodes) expect(on.report.fits).toBe(false);
    const three = await withDriver({
      "cluster:nodeMinSize": nodes + 1,
      "cluster:nodeDesiredSize": nodes + 1,
      "cluster:nodeMaxSize": nodes + 1,
    });
    expect(three.report.fits).toBe(true);
  });
});
