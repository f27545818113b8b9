// Forks at the schema's limits keep the suite's rules: for each generated fork (test/generated-forks.ts) the
// assertions the tests of kargo/pipeline.ts make of the fork's own pipeline (test/fork-checks.ts), in-process,
// with the example's plan: 20 environments side by side, chained or in diamonds; 25 programs; 1,000 program
// stages; programs in every runtime with a default image and in dependency diamonds; and risk policies in
// every form the docs say work, the older names included.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  burstShortfall,
  capacityShortfall,
  plannedCapacity,
  type PlannedCapacity,
} from "../lib/cli/plan/capacity";
import { planChain } from "../lib/cli/plan/projects";
import { pipeline as definition } from "../kargo/pipeline";
import { pipelineMermaid } from "../lib/pipeline/diagram";
import { environmentStages, programStages, runStages } from "../lib/pipeline/graph";
import { deciderRoles } from "../lib/pipeline/rbac";
import {
  DEFAULT_STOP_ON,
  MAX_ENVIRONMENTS,
  MAX_PROGRAM_STAGES,
  MAX_PROGRAMS,
  isProtected,
  riskPolicy,
  type Pipeline,
} from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { expectExactCount, expectExpansion, expectPolicyArgs, expectStacksAndStages } from "./fork-checks";
import { generatedFork, runtimeNames, type ForkShape } from "./generated-forks";
import { removeTempDirs } from "./pipeline-support";

/** Enough generated programs after the fork's own for every runtime, and a diamond among them. */
const some = Math.min(MAX_PROGRAMS, definition.programs.length + 2 * runtimeNames.length);
const shapes: [string, ForkShape][] = [
  [
    `${MAX_ENVIRONMENTS} environments side by side`,
    { environments: MAX_ENVIRONMENTS, layout: "side by side", programs: some, dependencies: "diamonds" },
  ],
  [
    `${MAX_ENVIRONMENTS} environments chained, in the older names`,
    {
      environments: MAX_ENVIRONMENTS,
      layout: "chained",
      programs: some,
      dependencies: "diamonds",
      olderNames: true,
    },
  ],
  [
    `${MAX_PROGRAMS} programs in diamonds, environments in diamonds`,
    { environments: 4, layout: "diamonds", programs: MAX_PROGRAMS, dependencies: "diamonds" },
  ],
  [
    `${MAX_PROGRAM_STAGES} program stages, environments and programs in diamonds`,
    { environments: MAX_ENVIRONMENTS, layout: "diamonds", programs: MAX_PROGRAMS, dependencies: "diamonds" },
  ],
  [
    `${MAX_PROGRAM_STAGES} program stages, all side by side, in the older names`,
    {
      environments: MAX_ENVIRONMENTS,
      layout: "side by side",
      programs: MAX_PROGRAMS,
      dependencies: "none",
      olderNames: true,
    },
  ],
];

/**
 * Each fork, generated and validated once. All are past what the brute force walks: its reference check of
 * the exact count is capacity.test.ts's, on shapes it can walk; here the count must give a set that runs.
 */
const forks = new Map<ForkShape, ReturnType<typeof generatedFork> & { p: Pipeline }>();
const forkOf = (shape: ForkShape) => {
  if (!forks.has(shape)) {
    const { input, root } = generatedFork(shape);
    forks.set(shape, { input, root, p: validatePipeline(input, { repoRoot: root }) });
  }
  return forks.get(shape)!;
};

afterAll(removeTempDirs);

let plans: Awaited<ReturnType<typeof planChain>>;
let example: PlannedCapacity;
beforeAll(async () => {
  plans = await planChain();
  example = plannedCapacity(plans, validatePipeline(definition));
});

describe.each(shapes)("a fork of %s", (_, shape) => {
  it("is taken by the validation, one Kargo stage per environment stage and program, dependencies first", () => {
    const { p } = forkOf(shape);
    expect(Object.keys(p.environments)).toHaveLength(shape.environments);
    expect(p.programs).toHaveLength(shape.programs);
    expect(programStages(p)).toHaveLength(environmentStages(p).length * shape.programs);
    expectExpansion(p, runStages(p));
  });

  it("gets its Stack manifests and Kargo stages, and tells each preview what stops it and who decides", () => {
    const { p } = forkOf(shape);
    expectStacksAndStages(p);
    expectPolicyArgs(p);
    // Deciders for each environment that stops anything, as the pipeline reads its policy, in any names.
    expect(
      deciderRoles(p)
        .map((r) => r.environment)
        .sort(),
    ).toEqual(
      Object.keys(p.environments)
        .filter((e) => isProtected(p.environments[e]!))
        .sort(),
    );
    const diagram = pipelineMermaid(p);
    for (const s of p.stages) expect(diagram, s.name).toContain(s.name);
  });

  it("stops on the default classes where only its stack and deciders are left", () => {
    const fork = forkOf(shape);
    const environments = Object.fromEntries(
      Object.entries(fork.p.environments).map(([name, env]) => {
        const { deciders } = riskPolicy(env);
        return [
          name,
          { pulumiStack: env.pulumiStack, deciders: deciders.length > 0 ? deciders : ["zz-deciders"] },
        ];
      }),
    );
    const defaulted = validatePipeline({ ...fork.input, environments }, { repoRoot: fork.root });
    for (const env of Object.values(defaulted.environments))
      expect(riskPolicy(env).stopOn).toEqual(DEFAULT_STOP_ON);
  });

  it("fits the example's base, and says so exactly when one Freight starts more than the burst limits hold", () => {
    const { p } = forkOf(shape);
    const count = expectExactCount(p, "the fork", 0);
    const planned = plannedCapacity(plans, p);
    expect(planned.concurrent).toBe(count);
    expect(capacityShortfall(planned)).toBeUndefined();
    expect(planned.report).toEqual(example.report);
    const held = planned.baseWorkspaces + planned.burst.perNode * planned.burst.allowedNodes;
    expect(burstShortfall(planned) === undefined, `${count} at once`).toBe(count <= held);
  });
});

describe("the generated forks", () => {
  it("hold every shape the limits allow: each limit reached, each runtime, diamonds and the older names", () => {
    const all = shapes.map(([, shape]) => ({ shape, p: forkOf(shape).p }));
    const reached = (f: (p: Pipeline) => boolean) => all.some(({ p }) => f(p));
    expect(reached((p) => Object.keys(p.environments).length === MAX_ENVIRONMENTS)).toBe(true);
    expect(reached((p) => p.programs.length === MAX_PROGRAMS)).toBe(true);
    expect(reached((p) => programStages(p).length === MAX_PROGRAM_STAGES)).toBe(true);
    expect(new Set(all.flatMap(({ p }) => p.programs.map((x) => x.runtime)))).toEqual(new Set(runtimeNames));
    // A diamond: a program after two that share one, and an environment after two that share one.
    expect(reached((p) => p.programs.some((x) => x.dependsOn.length === 2))).toBe(true);
    expect(
      reached((p) => p.stages.some((s) => s.from !== "warehouse" && s.from.length === 2 && s.requireAll)),
    ).toBe(true);
    for (const field of ["destructiveChangeApprovers", "protected", "ephemeral", "stopEveryPreview"] as const)
      expect(
        reached((p) =>
          Object.values(p.environments).some((e) => e[field] !== undefined && e[field] !== false),
        ),
        field,
      ).toBe(true);
    expect(all.filter(({ shape }) => shape.layout === "chained")).not.toHaveLength(0);
  });
});
