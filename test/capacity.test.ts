import * as fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { allocatable, capacity, snapshotControllerPods } from "../lib/capacity";
import { concurrentStages } from "../lib/pipeline/concurrency";
import { programStages } from "../lib/pipeline/graph";
import { MAX_ENVIRONMENTS, MAX_PROGRAMS, durationSeconds, type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  burstShortfall,
  capacityTable,
  capacityShortfall,
  chartDefaults,
  driftShortfall,
  plannedCapacity,
  type PlannedCapacity,
} from "../lib/cli/plan/capacity";
import { planChain } from "../lib/cli/plan/projects";
import { docPages } from "../lib/markdown";
import {
  bruteForceMoments,
  gatesSideBySide,
  generateShape,
  roomFor,
  runTogether,
  validatedShape,
  withMoreEnvironments,
  withRoomFor,
} from "./capacity-support";
import { expectExactCount } from "./fork-checks";
import { ofType, planProject } from "./helpers";

const pipeline = validatePipeline(definition);

/** The most program stages one Freight has running at once, by the brute force (test/capacity-support.ts). */
const bruteForce = (p: Pick<Pipeline, "stages" | "programs">) =>
  Math.max(...bruteForceMoments(p).map((running) => running.length));

/** The largest generated pipeline the validation takes, for a seed: generated and validated once per file. */
const largestShapes = new Map<number, Pipeline>();
const largestShape = (seed: number): Pipeline => {
  const size = { environments: MAX_ENVIRONMENTS, programs: MAX_PROGRAMS };
  if (!largestShapes.has(seed))
    largestShapes.set(seed, validatedShape(generateShape(seed, size), definition));
  return largestShapes.get(seed)!;
};

/** `p` with every stage that takes Freight from any one of several waiting for all of them instead. */
const allOf = (p: Pipeline): Pipeline => ({
  ...p,
  stages: p.stages.map((s) => (s.from !== "warehouse" && s.from.length > 1 ? { ...s, requireAll: true } : s)),
});

describe("the workspaces one Freight starts at once", () => {
  /**
   * Seeded shapes the brute force can still walk: wide ones (up to four environments, gates side by side,
   * stages taking from any one of several) and ones of many programs (up to six, depending on each other).
   */
  const sizes = [
    ...Array.from({ length: 40 }, (_, i) => ({ environments: 2 + (i % 3), programs: 1 + (i % 2) })),
    ...Array.from({ length: 12 }, (_, i) => ({ environments: 1 + (i % 2), programs: 3 + (i % 4) })),
  ];
  const shapes = sizes.map((size, seed) => ({ size, shape: generateShape(seed + 1, size) }));

  it("is the brute force's count on generated pipelines, and a set that can run together", () => {
    let anyOfMatters = 0;
    for (const { size, shape } of shapes) {
      const p = validatedShape(shape, definition);
      const moments = bruteForceMoments(p);
      const running = concurrentStages(p).map((s) => s.name);
      const at = JSON.stringify({ size, stages: shape.pipeline.stages });
      expect(running.length, at).toBe(Math.max(...moments.map((m) => m.length)));
      expect(
        moments.some((m) => running.every((name) => m.includes(name))),
        at,
      ).toBe(true);
      if (bruteForce(allOf(p)) !== running.length) anyOfMatters++;
    }
    // The shapes hold every kind the count must get right; and taking from any one of several changes the
    // answer in some, where counting stages none of which follows another would be wrong.
    for (const kind of ["sideBySideGates", "anyOf", "requireAll", "dependencies"] as const)
      expect(shapes.filter(({ shape }) => shape[kind]).length, kind).toBeGreaterThan(0);
    expect(anyOfMatters).toBeGreaterThan(0);
  });

  it("counts the largest generated pipelines the validation takes: a set that runs together, no fewer than if every stage waited for all", () => {
    for (const seed of [1, 2, 3]) {
      const p = largestShape(seed);
      const running = concurrentStages(p);
      expect(programStages(p).length).toBeGreaterThan(100);
      expect(
        runTogether(
          p,
          running.map((s) => s.name),
        ),
      ).toBe(true);
      expect(running.length).toBeGreaterThanOrEqual(concurrentStages(allOf(p)).length);
    }
  });

  it("runs gates side by side at once: people approve them together", () => {
    // The fork's own pipeline, with room made for two more if it is at the schema's limits.
    const base = withRoomFor(definition, 2);
    const side = expectExactCount(withMoreEnvironments(base, 2, "side by side"), "two side by side");
    // Both environments at their widest at once: twice what one environment alone runs, at least.
    const [env, own] = Object.entries(definition.environments)[0]!;
    const alone = validatePipeline({
      ...definition,
      environments: { [env]: own },
      stages: [
        { name: "zzgate", kind: "gate", from: "warehouse", approvers: ["zz-approvers"] },
        { name: "zzpreview", kind: "preview", environment: env, from: ["zzgate"] },
        { name: "zzupdate", kind: "update", environment: env, from: ["zzpreview"] },
      ],
    });
    expect(side).toBeGreaterThanOrEqual(2 * expectExactCount(alone, "one environment alone"));
    expect(side).toBeGreaterThanOrEqual(2);
  });

  it("counts pipelines far past the brute force, up to the most environments the validation takes", () => {
    // Environments side by side after one stage add what one adds, each: the count grows by the same step.
    const base = withRoomFor(definition, 5);
    const [three, four] = [3, 4].map((n) =>
      expectExactCount(withMoreEnvironments(base, n, "side by side"), `${n} side by side`),
    );
    const step = four! - three!;
    expect(step).toBeGreaterThan(0);
    const most = roomFor(base);
    for (const count of [...new Set([Math.min(10, most), most])]) {
      const side = withMoreEnvironments(base, count, "side by side");
      expect(programStages(side).length).toBeGreaterThan(programStages(validatePipeline(base)).length);
      expect(concurrentStages(side).length, `${count} side by side`).toBe(four! + (count - 4) * step);
      // Chained, each behind the one before: no wider than with two chained.
      const chained = withMoreEnvironments(base, count, "chained");
      expect(concurrentStages(chained).length, `${count} chained`).toBe(
        expectExactCount(withMoreEnvironments(base, 2, "chained"), "2 chained"),
      );
    }
  });
});

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

  it("counts every platform pod at our chart values (Karpenter's too), and the base's workspaces", async () => {
    const { groups } = planned;
    const workspaces = groups.filter((g) => g.owner === "workspaces");
    const [cluster] = await planChain({ project: "cluster" });
    expect(planned.baseWorkspaces).toBe(cluster!.outputs.baseWorkspaces);
    expect(workspaces.reduce((n, g) => n + g.replicas, 0)).toBe(planned.baseWorkspaces);
    expect(planned.programStages).toBe(programStages(pipeline).length);
    expect(planned.concurrent).toBe(concurrentStages(pipeline).length);
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

  it("fits the platform, the configured workspaces and a rolling update of the largest release on the base", () => {
    const { report } = planned;
    expect(capacityShortfall(planned)).toBeUndefined();
    expect(report.fits).toBe(true);
    // The largest of each: Kargo's five Deployments, the operator's 200m, Kargo's 448 MiB.
    expect(report.surge).toEqual({ owner: "kargo", pods: 5, cpu: 200, memory: 448 });
    // Requests, not pods, are what runs out first.
    expect(report.total.pods).toBeLessThan(report.allocatable.pods / 2);
  });

  it("is the same base for any number or shape of environments: one Freight's others take burst nodes", () => {
    // Up to ten more, as many as the schema's limits leave a fork room for.
    const more = Math.min(10, roomFor(definition));
    const shapes = [
      withMoreEnvironments(definition, more),
      withMoreEnvironments(definition, more, "side by side"),
      ...[1, 2, 3, 4, 5].map((seed) =>
        validatedShape(generateShape(seed, { environments: 3 + seed, programs: 1 + (seed % 3) }), definition),
      ),
      largestShape(1),
    ];
    for (const shape of shapes) {
      const other = plannedCapacity(plans, shape);
      expect(capacityShortfall(other)).toBeUndefined();
      expect(other.report).toEqual(planned.report);
      expect(other.burst.workspaces).toBe(Math.max(0, other.concurrent - other.baseWorkspaces));
      expect(other.burst.nodes).toBe(Math.ceil(other.burst.workspaces / other.burst.perNode));
    }
    // The largest pipeline starts more at once than the base holds: the rest take burst nodes.
    const wide = plannedCapacity(plans, shapes.at(-1)!);
    expect(wide.concurrent).toBeGreaterThan(wide.baseWorkspaces);
    expect(wide.burst.nodes).toBeGreaterThan(0);
  });

  it("says with figures when the base cannot hold the workspaces cluster:baseWorkspaces asks for", async () => {
    const [, ...rest] = await planChain();
    const more = planned.baseWorkspaces + 4;
    const crowded = plannedCapacity(
      [await planProject("cluster", { "cluster:baseWorkspaces": more }), ...rest],
      pipeline,
    );
    const { total, allocatable: offered } = crowded.report;
    expect(crowded.report.fits).toBe(false);
    const problem = capacityShortfall(crowded)!;
    expect(problem).toContain(`the ${more} workspaces of cluster:baseWorkspaces`);
    expect(problem).toContain(`${total.cpu}m CPU and ${total.memory} MiB`);
    expect(problem).toContain(`${offered.cpu}m, ${offered.memory} MiB`);
    // One node fewer does not hold even the default's.
    expect(capacity(planned.groups, planned.instanceType, planned.nodes - 1, planned.maxPods).fits).toBe(
      false,
    );
    // None on the base: the base holds the platform alone, and every workspace takes a burst node.
    const none = plannedCapacity(
      [await planProject("cluster", { "cluster:baseWorkspaces": 0 }), ...rest],
      pipeline,
    );
    expect(none.groups.filter((g) => g.owner === "workspaces")).toEqual([]);
    expect(none.burst.workspaces).toBe(none.concurrent);
  });

  it("says when one Freight starts more at once than the burst limits hold, and not before", () => {
    const { burst, baseWorkspaces } = planned;
    // What the base and the burst limits hold at once; a shape starting more says so, with the figures. The
    // fork's own pipeline may start more (then the rest wait): it says so exactly when it does.
    const held = baseWorkspaces + burst.perNode * burst.allowedNodes;
    expect(burstShortfall(planned) === undefined, `${planned.concurrent} at once`).toBe(
      planned.concurrent <= held,
    );
    // Gates side by side from the Warehouse, one program: one workspace per environment at once, so the
    // limit and one past it, where the schema allows that many environments.
    const gates = [held, held + 1]
      .filter((n) => n >= 1 && n <= MAX_ENVIRONMENTS)
      .map((n) => validatedShape(gatesSideBySide(n), definition));
    const shapes = [
      validatedShape(gatesSideBySide(1), definition),
      ...gates,
      withMoreEnvironments(definition, Math.min(10, roomFor(definition)), "side by side"),
      ...[1, 2, 3].map(largestShape),
    ];
    const counts = shapes.map((shape) => {
      const side = plannedCapacity(plans, shape);
      expect(burstShortfall(side) === undefined, `${side.concurrent} at once`).toBe(side.concurrent <= held);
      if (side.concurrent > held)
        expect(burstShortfall(side)).toContain(
          `${side.burst.workspaces} beyond the ${baseWorkspaces} on the base: ${side.burst.nodes} burst`,
        );
      return side.concurrent;
    });
    expect(counts.some((n) => n > held)).toBe(true);
    if (held >= 1) expect(counts.some((n) => n <= held)).toBe(true);
    for (const [i, n] of [held, held + 1].filter((n) => n >= 1 && n <= MAX_ENVIRONMENTS).entries())
      expect(counts[1 + i]).toBe(n);
  });

  it("counts the drift checks: a workspace per update stage every interval, at worst all at once beside one Freight's", () => {
    const off = plannedCapacity(plans, {
      ...pipeline,
      verification: { ...pipeline.verification, driftInterval: "off" },
    });
    expect(off.drift.checks).toBe(0);
    expect(off.drift.runsPerDay).toBe(0);
    expect(capacityTable(off)).toContain("Drift checks are off");
    for (const [shape, interval] of [
      [pipeline, "1h"],
      [largestShape(1), "10m"],
    ] as const) {
      // Validated already: only the interval changes, to one the schema takes.
      const p: Pipeline = { ...shape, verification: { ...shape.verification, driftInterval: interval } };
      const c = plannedCapacity(plans, p);
      const updates = programStages(p).filter((s) => s.kind === "update").length;
      expect(c.drift.checks).toBe(updates);
      expect(c.drift.runsPerDay).toBe(Math.round((updates * 86400) / durationSeconds(interval)));
      expect(c.drift.atOnce).toBe(c.concurrent + updates);
      expect(c.drift.burst.workspaces).toBe(Math.max(0, c.concurrent + updates - c.baseWorkspaces));
      const held = c.baseWorkspaces + c.drift.burst.perNode * c.drift.burst.allowedNodes;
      expect(driftShortfall(c.drift) === undefined, `${c.drift.atOnce} at once`).toBe(c.drift.atOnce <= held);
      expect(capacityTable(c)).toContain(`${c.drift.runsPerDay} runs a day`);
    }
    // The largest pipeline's checks, all at once, are more than the burst limits hold: it says so.
    const largest = plannedCapacity(plans, largestShape(1));
    expect(driftShortfall(largest.drift)).toContain(
      `${largest.drift.atOnce} at once when every check coincides`,
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
