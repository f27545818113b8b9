// What `npm run rollback` takes back, and in what order, for every environment and program of the example
// and of a generated fork whose programs form a diamond (one program, two after it, one after both), each
// in its own runtime. Expectations come from the definition: the programs' dependsOn and the Kargo stages
// the pipeline expands.
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages } from "../lib/pipeline/graph";
import { rollbackPlan, rollbackRequestName } from "../lib/pipeline/rollback";
import { riskPolicy, type Pipeline } from "../lib/pipeline/schema";
import { approveStage } from "../lib/pipeline/verification";
import { validatePipeline } from "../lib/pipeline/validate";
import { validatedFork } from "./generated-forks";

/** Program → every program it depends on, directly or through others (a fixpoint over dependsOn). */
function dependencyClosure(p: Pipeline): Map<string, Set<string>> {
  const closure = new Map(p.programs.map((x) => [x.name, new Set(x.dependsOn)]));
  for (let grew = true; grew;) {
    grew = false;
    for (const deps of closure.values())
      for (const d of [...deps])
        for (const dd of closure.get(d)!)
          if (!deps.has(dd)) {
            deps.add(dd);
            grew = true;
          }
  }
  return closure;
}

const example = validatePipeline(definition);
const diamond = validatedFork({ environments: 2, layout: "chained", programs: 4, dependencies: "diamonds" });

function expectPlans(p: Pipeline) {
  const closure = dependencyClosure(p);
  for (const environment of Object.keys(p.environments)) {
    for (const program of [undefined, ...p.programs.map((x) => x.name)]) {
      const plan = rollbackPlan(p, environment, program);
      const covered = plan.steps.map((s) => s.program);
      const expected = p.programs
        .map((x) => x.name)
        .filter((x) => program === undefined || x === program || closure.get(x)!.has(program));
      expect(new Set(covered), `${environment} ${program ?? "(all)"}`).toEqual(new Set(expected));
      expect(covered).toHaveLength(expected.length);
      // The named program goes last: every other one covered depends on it.
      if (program !== undefined) expect(covered.at(-1)).toBe(program);
      // Dependents first: a program comes before every program it depends on.
      covered.forEach((x, i) =>
        covered
          .slice(i + 1)
          .forEach((later) => expect(closure.get(later)!.has(x), `${later} after ${x}`).toBe(false)),
      );
      for (const step of plan.steps) {
        const own = programStages(p).filter(
          (s) => s.environment === environment && s.program === step.program,
        );
        expect(own.filter((s) => s.kind === "preview").map((s) => s.name)).toContain(step.preview);
        expect(step.update).toBe(approveStage(p, { environment, program: step.program }));
      }
      expect(plan.project).toBe(p.project);
      expect(plan.deciders).toEqual(riskPolicy(p.environments[environment]!).deciders);
      const feeding = p.stages.filter((s) => s.kind === "preview" && s.environment === environment);
      const gates = p.stages.filter(
        (g) => g.kind === "gate" && feeding.some((s) => s.from !== "warehouse" && s.from.includes(g.name)),
      );
      expect(plan.promoters).toEqual(
        [...new Set(gates.flatMap((g) => (g.kind === "gate" ? g.approvers : [])))].sort(),
      );
    }
  }
}

describe("the rollback's programs and order", () => {
  it("covers, for the example, every program or the named one and its dependents, dependents first", () => {
    expectPlans(example);
    expect(example.programs.some((x) => x.dependsOn.length > 0)).toBe(true);
  });

  it("covers a diamond of four programs in different runtimes the same way", () => {
    const runtimes = new Set(diamond.programs.map((x) => x.runtime));
    expect(diamond.programs.length).toBeGreaterThanOrEqual(4);
    expect(runtimes.size).toBeGreaterThanOrEqual(3);
    // The diamond's top: depended on by two that another depends on both of.
    const top = diamond.programs.find(
      (x) => diamond.programs.filter((y) => y.dependsOn.includes(x.name)).length >= 2,
    )!;
    expect(top).toBeDefined();
    expectPlans(diamond);
    const environment = Object.keys(diamond.environments)[0]!;
    const steps = rollbackPlan(diamond, environment, top.name).steps.map((s) => s.program);
    expect(steps.at(-1)).toBe(top.name);
    expect(steps.length).toBeGreaterThanOrEqual(4);
  });

  it("names the record after the environment", () => {
    expect(rollbackRequestName("qa")).toBe("rollback-qa");
  });

  it("refuses an unknown environment or program, naming the argument and what is allowed", () => {
    const envs = Object.keys(example.environments);
    expect(() => rollbackPlan(example, "nowhere")).toThrow(
      `environment "nowhere" is not in kargo/pipeline.ts; allowed: ${envs.join(", ")}`,
    );
    expect(() => rollbackPlan(example, envs[0]!, "nothing")).toThrow(
      `--program "nothing" is not a program of kargo/pipeline.ts; allowed: ${example.programs.map((x) => x.name).join(", ")}`,
    );
  });
});
