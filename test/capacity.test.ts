import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import {
  allocatable,
  capacity,
  kubeSystemPods,
  parseQuantity,
  platformPods,
  type PodGroup,
} from "../lib/capacity";
import { mergeValues, type Values } from "../lib/helmAddon";
import type { ProgramPlan } from "../lib/plan/harness";
import { planChain, repoRoot } from "../lib/plan/projects";
import { validationData } from "./crds-support";
import { ofType, one } from "./helpers";

/**
 * Chart defaults at the pinned versions, by release (the committed data `npm run crds` extracts); cert-manager
 * ships a schema only: its defaults are 1 replica, no requests.
 */
const chartDefaults: Record<string, Values> = {
  ...Object.fromEntries(
    Object.entries(validationData.charts).map(([chart, c]) => [chart, c.defaults as Values]),
  ),
  "cert-manager": {},
};

describe("capacity of the default node group", () => {
  let plans: ProgramPlan[];
  let groups: PodGroup[];
  let instanceType: string;
  let nodes: number;

  beforeAll(async () => {
    plans = await planChain();
    const releases = plans.flatMap((p) => ofType(p, "kubernetes:helm.sh/v3:Release"));
    const effective = Object.fromEntries(
      releases.map((r) => {
        return [r.name, mergeValues(chartDefaults[r.name] ?? {}, r.inputs.values as Values)];
      }),
    );
    expect(Object.keys(effective).sort()).toEqual(Object.keys(chartDefaults).sort());
    const stacksDir = path.join(repoRoot, "stacks");
    const workspaces: PodGroup[] = fs
      .readdirSync(stacksDir)
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => YAML.parse(fs.readFileSync(path.join(stacksDir, f), "utf8")))
      .map((stack) => {
        const requests = stack.spec.workspaceTemplate.spec.resources.requests;
        return {
          owner: "workspaces",
          name: `${stack.metadata.name}-workspace`,
          kind: "StatefulSet" as const,
          replicas: 1,
          requests: {
            cpu: parseQuantity(requests.cpu, "cpu"),
            memory: parseQuantity(requests.memory, "memory"),
          },
        };
      });
    groups = [...kubeSystemPods, ...platformPods(effective), ...workspaces];
    const nodeGroup = one(plans[0]!, "eks:index:ManagedNodeGroup").inputs as {
      instanceTypes: string[];
      scalingConfig: { minSize: number };
    };
    instanceType = nodeGroup.instanceTypes[0]!;
    nodes = nodeGroup.scalingConfig.minSize;
  });

  it("knows what a t4g.medium offers pods: 17 pods, 1930m CPU, 3308 MiB", () => {
    expect(allocatable("t4g.medium")).toEqual({ pods: 17, cpu: 1930, memory: 3308 });
    expect(() => allocatable("m7g.metal")).toThrow(/no capacity figures for instance type "m7g.metal"/);
  });

  it("counts every platform pod at our chart values, and a workspace for every stage that can run at once", () => {
    expect(groups.filter((g) => g.owner === "workspaces")).toHaveLength(6);
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

  it("fits the platform, six workspaces and a rolling update of the largest release on the default nodes", () => {
    const report = capacity(groups, instanceType, nodes);
    expect({ instanceType, nodes }).toEqual({ instanceType: "t4g.medium", nodes: 2 });
    // The figures the README states.
    expect(report.allocatable).toEqual({ pods: 34, cpu: 3860, memory: 6616 });
    expect(report.steady).toEqual({ pods: 27, cpu: 2640, memory: 5420 });
    // The largest of each: Kargo's five Deployments, the operator's 200m, Kargo's 448 MiB.
    expect(report.surge).toEqual({ owner: "kargo", pods: 5, cpu: 200, memory: 448 });
    expect(report.total).toEqual({ pods: 32, cpu: 2840, memory: 5868 });
    expect(report.fits).toBe(true);
    const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8");
    const { total, allocatable: offered } = report;
    expect(readme).toContain(
      `**${total.pods}** / ${offered.pods} | **${total.cpu}m** / ${offered.cpu}m | **${total.memory}** / ${offered.memory} MiB`,
    );
  });

  it("would not fit the same pods on one node", () => {
    expect(capacity(groups, instanceType, 1).fits).toBe(false);
  });
});
