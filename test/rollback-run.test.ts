// `npm run rollback` run against a stand-in `kargo` executable on PATH (test/rollback-standins.ts): Kargo's
// API server cannot run here, so the stand-in records each call and answers with Kargo v1.11.2's JSON.
// What is checked is what the rollback asks of Kargo, in what order, and when it stops:
// a preview that passes, one that stops and a decider then continuing, an update Kargo refuses for permission,
// a template refused before anything is promoted, a reconcile, the holds lifted.
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { createValidator } from "../lib/crds/validate";
import { runStages } from "../lib/pipeline/graph";
import { stageSpec } from "../lib/pipeline/promotion";
import { rollbackPlan, rollbackRequestName, type RollbackStep } from "../lib/pipeline/rollback";
import { validatePipeline } from "../lib/pipeline/validate";
import { continueCommand, resume, rollback } from "../lib/rollback";
import { validatedFork } from "./generated-forks";
import { changedTemplate, todaysTemplates } from "./rollback-support";
import { standins } from "./rollback-standins";

const example = validatePipeline(definition);
const { repo, calls, promoted, state, setUp, request, reset } = standins(example);
const lines: string[] = [];
const io = { out: (l: string) => lines.push(l) };
/** The `kargo update configmap` calls, each with the data its `--set`s write. */
const requestWrites = () =>
  calls()
    .filter((c) => c.args[0] === "update" && c.args[1] === "configmap")
    .map((c) => ({
      args: c.args,
      data: Object.fromEntries(
        c.args.flatMap((a, i) =>
          c.args[i - 1] === "--set" ? [[a.split("=")[0]!, a.slice(a.indexOf("=") + 1)]] : [],
        ),
      ),
    }));
const stopMessage = (stage: string) =>
  `the preview of abc on org/x/dev stops on loss: 1 resource(s)\n  delete aws:s3/bucket:Bucket (loss) in ${stage}`;

describe("npm run rollback against Kargo's answers", () => {
  const environment = Object.keys(example.environments)[0]!;

  it("records the request, then previews and updates each program, dependents first", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment, { to: "older-alias" }), io)).toBe(0);
    expect(promoted()).toEqual(plan.steps.flatMap((s) => [s.preview, s.update]));
    // The request goes first, through Kargo, into the kargo project's ConfigMap, by whom Kargo's session names.
    const first = calls().findIndex((c) => c.tool === "kargo" && c.args[0] === "promote");
    const write = calls().findIndex((c) => c.args[0] === "update" && c.args[1] === "configmap");
    expect(write).toBeGreaterThanOrEqual(0);
    expect(write).toBeLessThan(first);
    const { args } = requestWrites()[0]!;
    expect(args.slice(2, 5)).toEqual([rollbackRequestName(environment), "--project", example.project]);
    const record = { data: state().configMaps[rollbackRequestName(environment)]!.data };
    expect(record.data).toMatchObject({
      kind: "rollback",
      to: "older",
      by: "jane@example.com",
      message: "the release broke uploads",
      stages: JSON.stringify(plan.steps.map((s) => s.update)),
      from: JSON.stringify(Object.fromEntries(plan.steps.map((s) => [s.update, "current"]))),
    });
    expect(record.data.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // Each stage was watched until its verification ended, not promoted blind.
    for (const s of plan.steps)
      expect(calls().filter((c) => c.args[0] === "get" && c.args[2] === s.update).length).toBeGreaterThan(1);
    expect(lines.join("\n")).toContain(`${environment} --resume`);
  });

  it("answers in the shape of Kargo v1.11.2's Stage, Freight and Promotion (its CRDs' schemas, unknown fields refused)", () => {
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment), io)).toBe(0);
    const s = state();
    const byName = new Map(runStages(example).map((x) => [x.name, x]));
    const stages = plan.steps
      .flatMap((x) => [x.preview, x.update])
      .map((name) => ({
        apiVersion: "kargo.akuity.io/v1alpha1",
        kind: "Stage",
        metadata: { name, namespace: example.project },
        spec: stageSpec(example, byName.get(name)!),
        status: s.stages[name],
      }));
    const promotions = s.printed.map((x) => ({
      ...x,
      metadata: { ...x.metadata, namespace: example.project },
    }));
    expect(promotions).toHaveLength(plan.steps.length * 2);
    const report = createValidator().validate([...stages, ...Object.values(s.freight), ...promotions]);
    expect(report.errors).toEqual([]);
    expect(report.unschematized).toEqual([]);
  });

  it("stops at a preview that stops, printing what it would do; a decider's --continue takes it on", () => {
    lines.length = 0;
    const plan = setUp(example, environment, {
      verdicts: {
        [rollbackPlan(example, environment).steps[0]!.preview]: {
          phase: "Failed",
          message: stopMessage("x"),
        },
      },
    });
    const [first, ...rest] = plan.steps;
    expect(rollback(example, request(environment), io)).toBe(1);
    expect(promoted()).toEqual([first!.preview]);
    expect(lines.join("\n")).toContain(stopMessage("x"));
    expect(lines.join("\n")).toContain(`runs: ${continueCommand({ environment }, "older")}`);
    // The decider continues: the stopped preview is not run again, nor the record rewritten. This machine's
    // clock does not matter: the record's time is the API server's (a clock far ahead here changes nothing).
    const saved = state();
    saved.configMaps[rollbackRequestName(environment)]!.data.at = "2100-01-01T00:00:00Z";
    reset(saved);
    expect(rollback(example, request(environment, { resume: true, message: undefined }), io)).toBe(0);
    expect(promoted()).toEqual([first!.update, ...rest.flatMap((s) => [s.preview, s.update])]);
    expect(requestWrites()).toEqual([]);
  });

  it("stops when Kargo refuses the update for permission, and prints the command a decider runs", () => {
    lines.length = 0;
    const plan = setUp(example, environment, { role: "promoter" });
    expect(rollback(example, request(environment, { program: plan.steps.at(-1)!.program }), io)).toBe(1);
    const first = rollbackPlan(example, environment, plan.steps.at(-1)!.program).steps[0]!;
    expect(promoted()).toEqual([first.preview, first.update]);
    expect(lines.join("\n")).toContain("Kargo refused the update");
    expect(lines.join("\n")).toContain(
      continueCommand({ environment, program: plan.steps.at(-1)!.program }, "older"),
    );
    expect(state().stages[first.update]).toMatchObject({
      freightHistory: [{ items: { "Warehouse/program": { name: "current" } } }],
    });
  });

  /** With the failure gone, `--continue` finishes the rollback: every step previewed, then updated. */
  const continuesToTheEnd = (steps: RollbackStep[]) => {
    const saved = state();
    saved.verdicts = {};
    reset(saved);
    expect(rollback(example, request(environment, { resume: true, message: undefined }), io)).toBe(0);
    expect(promoted()).toEqual(steps.flatMap((s) => [s.preview, s.update]));
  };

  it("stops at a preview that fails (not a stop) and previews again when continued", () => {
    lines.length = 0;
    const [first, ...rest] = rollbackPlan(example, environment).steps;
    const failed = { phase: "Failed", message: "the preview of abc failed: error: no stack named dev" };
    setUp(example, environment, { verdicts: { [first!.preview]: failed } });
    expect(rollback(example, request(environment), io)).toBe(1);
    expect(promoted()).toEqual([first!.preview]);
    expect(lines.join("\n")).toContain("the preview failed, the rollback stops here");
    continuesToTheEnd([first!, ...rest]);
  });

  it("previews again when an update does not verify (the state changed under it), then goes on", () => {
    lines.length = 0;
    const [first, ...rest] = rollbackPlan(example, environment).steps;
    setUp(example, environment, {
      verdicts: { [first!.update]: { phase: "Failed", message: "did more than its preview" } },
    });
    expect(rollback(example, request(environment), io)).toBe(1);
    expect(promoted()).toEqual([first!.preview, first!.update]);
    expect(lines.join("\n")).toContain("did more than its preview");
    continuesToTheEnd([first!, ...rest]);
  });

  it("stops before promoting anything when Kargo refuses the request, naming who may ask for a rollback", () => {
    lines.length = 0;
    const plan = setUp(example, environment, { role: "viewer" });
    expect(rollback(example, request(environment), io)).toBe(1);
    expect(promoted()).toEqual([]);
    expect(state().configMaps[rollbackRequestName(environment)]).not.toHaveProperty("data");
    const who = [...new Set([...plan.deciders, ...plan.promoters])];
    expect(who.length).toBeGreaterThan(0);
    expect(lines.join("\n")).toContain(`Kargo refused the rollback request`);
    for (const group of who) expect(lines.join("\n")).toContain(group);
  });

  it("promotes nothing and writes no record when an older Stack template differs", () => {
    lines.length = 0;
    const stage = rollbackPlan(example, environment).steps[0]!.update;
    const older = repo.commit(
      changedTemplate(example, stage, (t) => t.replace("refresh: true", "refresh: false")),
      "older",
    );
    setUp(example, environment, { commit: older });
    expect(rollback(example, request(environment), io)).toBe(1);
    expect(promoted()).toEqual([]);
    expect(requestWrites()).toEqual([]);
    expect(lines.join("\n")).toContain(`(stage ${stage}): spec.refresh`);
  });

  it("reconciles: the Freight the update stages run now, again, recorded as a reconcile", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment, { kind: "reconcile", to: undefined }), io)).toBe(0);
    expect(promoted()).toEqual(plan.steps.flatMap((s) => [s.preview, s.update]));
    expect(requestWrites().map((w) => w.data)).toMatchObject([{ kind: "reconcile", to: "current" }]);
  });

  it("with --dry-run, promotes nothing and writes nothing", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment, { dryRun: true }), io)).toBe(0);
    expect(promoted()).toEqual([]);
    expect(requestWrites()).toEqual([]);
    expect(lines.join("\n")).toContain(
      `would run: kargo update configmap ${rollbackRequestName(environment)}`,
    );
    for (const s of plan.steps) expect(lines.join("\n")).toContain(`--stage ${s.update}`);
  });

  it("lifts the holds: each held stage promoted with Kargo's pick, a program's preview before its update", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment), io)).toBe(0);
    reset();
    expect(resume(example, environment, 1, io, false, 120_000)).toBe(0);
    expect(promoted()).toEqual([...plan.steps].reverse().flatMap((s) => [s.preview, s.update]));
    expect(
      calls()
        .filter((c) => c.args[0] === "promote")
        .every((c) => c.args.includes("--warehouse")),
    ).toBe(true);
    for (const s of plan.steps) expect(state().stages[s.update]).toMatchObject({ autoPromotionHolds: {} });
  });

  it("takes a diamond of four programs back, dependents first", () => {
    const diamond = validatedFork({
      environments: 2,
      layout: "chained",
      programs: 4,
      dependencies: "diamonds",
    });
    const env = Object.keys(diamond.environments)[0]!;
    const plan = setUp(diamond, env, {
      commit: repo.commit(todaysTemplates(diamond), "the diamond's templates"),
    });
    expect(rollback(diamond, request(env), io)).toBe(0);
    expect(promoted()).toEqual(plan.steps.flatMap((s) => [s.preview, s.update]));
  });
});
