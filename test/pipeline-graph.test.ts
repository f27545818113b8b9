// The stage graph as a user meets it: the cycle a refusal names, the order stages are created in whatever
// order kargo/pipeline.ts lists them, and definitions that are not even shaped like a pipeline.
import { describe, expect, it } from "vitest";
import { ancestors, findCycle, programStages, topologicalOrder, upstreamOf } from "../lib/pipeline/graph";
import { stackObjectName } from "../lib/pipeline/names";
import { MAX_STACK_NAME, pipelineSchema, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  base,
  basePipeline,
  firstUpdate,
  previewOfFirstUpdate,
  problemsOf,
  type StageInput,
} from "./pipeline-support";

const gate = base.stages.find((s) => s.kind === "gate" && s.from === "warehouse")!;
const withStages = (stages: StageInput[]): PipelineInput => ({ ...base, stages });

describe("a cycle among the stages", () => {
  // x feeds y feeds z feeds x; x also takes Freight from the gate, and a stage downstream of the cycle
  // takes it from z: the refusal names the cycle alone, in the direction Freight would flow.
  // The stage downstream is listed first, so the search enters the cycle from outside it.
  const cyclic = withStages([
    { ...firstUpdate, from: ["z"] },
    gate,
    { name: "x", kind: "gate", from: [gate.name, "z"], approvers: ["dev-approvers"] },
    { name: "y", kind: "gate", from: ["x"], approvers: ["dev-approvers"] },
    { name: "z", kind: "gate", from: ["y"], approvers: ["dev-approvers"] },
  ]);

  it("is named stage by stage in the direction Freight flows, without the stages around it", () => {
    const problems = problemsOf(cyclic);
    expect(problems).toMatch(/ {2}- stages "z" -> "x" -> "y" -> "z": form a cycle$/m);
    expect(problems).not.toMatch(new RegExp(`"${gate.name}" ->|-> "${firstUpdate.name}"`));
    // The gate feeds x, so every stage is reachable; the destructive-change rules wait for a sound graph.
    expect(problems).not.toMatch(/is not reachable from the Warehouse|is protected/);
  });

  it("is found through any upstream of a stage, not only its first; kargo/pipeline.ts has none", () => {
    expect(findCycle(basePipeline.stages)).toBeUndefined();
    expect(findCycle(pipelineSchema.shape.stages.parse(cyclic.stages))).toEqual(["z", "x", "y", "z"]);
  });

  it("is reported as the cycle, not as a preview that comes after its update", () => {
    // The preview and the update of one environment feeding each other: both "after" each other only
    // because of the cycle, which is what the user must fix.
    const problems = problemsOf(
      withStages([
        gate,
        { ...previewOfFirstUpdate, from: [gate.name, firstUpdate.name] },
        { ...firstUpdate, from: [previewOfFirstUpdate.name] },
      ]),
    );
    expect(problems).toMatch(/form a cycle/);
    expect(problems).not.toMatch(/a preview must come before its update/);
  });
});

describe("a long pipeline", () => {
  it("is checked for cycles in time linear in its stages, each visited once", () => {
    // Each stage takes Freight from the two before it: walking every path instead would take about 2^60 steps.
    const names = Array.from({ length: 60 }, (_, i) => `s${i}`);
    const stages = pipelineSchema.shape.stages.parse(
      names.map((name, i) => ({
        name,
        kind: "gate",
        from: i === 0 ? "warehouse" : names.slice(Math.max(0, i - 2), i),
        approvers: ["x"],
      })),
    );
    expect(findCycle(stages)).toBeUndefined();
    expect(ancestors(stages, names.at(-1)!).size).toBe(names.length - 1);
  });
});

describe("what a stage needs upstream", () => {
  it("accepts stages listed in any order: reachability follows the from lists, not the file", () => {
    expect(() => validatePipeline(withStages([...base.stages].reverse()))).not.toThrow();
  });

  it("refuses an update whose only upstream is a preview, though a gate feeds another stage", () => {
    const other = base.stages.find((s) => s.kind === "update" && s.environment !== firstUpdate.environment)!;
    const problems = problemsOf(
      withStages([
        gate,
        { ...previewOfFirstUpdate, from: "warehouse" },
        { ...firstUpdate, from: [previewOfFirstUpdate.name] },
        { ...other, from: [gate.name] },
      ]),
    );
    expect(problems).toMatch(
      new RegExp(`stage "${firstUpdate.name}": runs pulumi up with no approval gate upstream`),
    );
    expect(problems).not.toMatch(new RegExp(`stage "${other.name}": runs pulumi up`));
  });
});

describe("the order stages are created in", () => {
  it("puts every stage after its upstream stages, whatever order kargo/pipeline.ts lists them in", () => {
    for (const listed of [basePipeline.stages, [...basePipeline.stages].reverse()]) {
      const ordered = topologicalOrder(listed).map((s) => s.name);
      expect([...ordered].sort()).toEqual(listed.map((s) => s.name).sort());
      for (const s of listed) {
        for (const up of upstreamOf(s)) expect(ordered.indexOf(up)).toBeLessThan(ordered.indexOf(s.name));
      }
    }
  });

  it("refuses a cycle instead of looping forever", () => {
    const stages = pipelineSchema.shape.stages.parse([
      { name: "a", kind: "gate", from: ["b"], approvers: ["x"] },
      { name: "b", kind: "gate", from: ["a"], approvers: ["x"] },
    ]);
    expect(() => topologicalOrder(stages)).toThrow(/pipeline has a cycle/);
  });
});

describe("definitions not shaped like a pipeline", () => {
  const cases: [string, unknown, RegExp][] = [
    ["nothing at all", undefined, /^ {2}- pipeline: Invalid input: expected object, received undefined$/m],
    ["null", null, /^ {2}- pipeline: Invalid input: expected object, received null$/m],
    ["a list", [], /^ {2}- pipeline: Invalid input: expected object, received array$/m],
    [
      "stages that are not a list",
      { ...base, stages: { dev: firstUpdate } },
      /^ {2}- stages: Invalid input: expected array, received object$/m,
    ],
    [
      "a stage without a name",
      withStages([
        gate,
        { kind: "update", environment: firstUpdate.environment, from: [gate.name] } as StageInput,
      ]),
      /^ {2}- stages\.1\.name: Invalid input: expected string, received undefined$/m,
    ],
    [
      "no stages",
      { ...base, stages: undefined },
      /^ {2}- stages: Invalid input: expected array, received undefined$/m,
    ],
    [
      "environments as a list of names",
      { ...base, environments: Object.keys(base.environments) },
      /^ {2}- environments: Invalid input: expected record, received array$/m,
    ],
    [
      "null environments",
      { ...base, environments: null },
      /^ {2}- environments: Invalid input: expected record, received null$/m,
    ],
    [
      "no environments",
      { ...base, environments: undefined },
      /^ {2}- environments: Invalid input: expected record, received undefined$/m,
    ],
  ];
  it.each(cases)("refuses %s, naming where", (_, input, message) => {
    expect(problemsOf(input)).toMatch(message);
  });
});

describe("stage names", () => {
  it(`accepts a PKO Stack name of exactly ${MAX_STACK_NAME} characters, the most PKO allows`, () => {
    // The longest is the first update stage's Stack for the program with the longest name.
    const longest = Math.max(...base.programs.map((x) => x.name.length));
    const name = "s".repeat(MAX_STACK_NAME - `${base.project}--`.length - longest);
    const renamed = (n: string) => (n === firstUpdate.name ? name : n);
    const stages = base.stages.map((s) => ({
      ...s,
      name: renamed(s.name),
      from: s.from === "warehouse" ? s.from : s.from.map(renamed),
    }));
    const p = validatePipeline(withStages(stages));
    const lengths = programStages(p).map((s) => stackObjectName(p, s.name).length);
    expect(Math.max(...lengths)).toBe(MAX_STACK_NAME);
  });

  it("refuses a stage that lists itself as upstream", () => {
    expect(problemsOf(withStages([gate, { ...firstUpdate, from: [gate.name, firstUpdate.name] }]))).toMatch(
      new RegExp(`stage "${firstUpdate.name}": lists itself as upstream`),
    );
  });
});
