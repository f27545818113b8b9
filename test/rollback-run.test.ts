// `npm run rollback` run against stand-in `kargo` and `kubectl` executables on PATH (test/rollback-standin.mjs):
// Kargo's API server cannot run here, so the stand-ins record each call and answer with Kargo v1.11.2's JSON.
// What is checked is what the rollback asks of Kargo and the API server, in what order, and when it stops:
// a preview that passes, one that stops and a decider then continuing, an update Kargo refuses for permission,
// a template refused before anything is promoted, a reconcile, the holds lifted, and the CLI's bad arguments.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { repoRoot } from "../lib/cli/plan/projects";
import { rollbackPlan, rollbackRecordName } from "../lib/pipeline/rollback";
import type { Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { continueCommand, resume, rollback, type RollbackRequest } from "../lib/rollback";
import { parseRollbackArgs, UsageError } from "../lib/rollback-args";
import { createValidator, type KubeObject } from "../lib/crds/validate";
import { runStages } from "../lib/pipeline/graph";
import { promotionTaskSpec, stageSpec } from "../lib/pipeline/promotion";
import { validatedFork } from "./generated-forks";
import { changedTemplate, templateRepo, todaysTemplates } from "./rollback-support";

const standin = path.join(repoRoot, "test", "rollback-standin.mjs");
const bin = fs.mkdtempSync(path.join(os.tmpdir(), "rollback-bin-"));
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollback-state-"));
for (const tool of ["kargo", "kubectl"])
  fs.writeFileSync(
    path.join(bin, tool),
    `#!/bin/sh\nexec "${process.execPath}" "${standin}" ${tool} "${stateDir}" "$@"\n`,
    {
      mode: 0o755,
    },
  );
const savedPath = process.env.PATH;
const made: string[] = [];
/**
 * A PATH of git and the named stand-ins alone (node is run by its path): this machine's own kargo or kubectl,
 * if it has one, stays out.
 */
function onlyOnPath(...standins: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollback-path-"));
  made.push(dir);
  const git = spawnSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).stdout.trim();
  fs.symlinkSync(git, path.join(dir, "git"));
  for (const tool of standins) fs.copyFileSync(path.join(bin, tool), path.join(dir, tool));
  return dir;
}
beforeAll(() => {
  process.env.PATH = `${bin}${path.delimiter}${savedPath}`;
});
afterAll(() => {
  process.env.PATH = savedPath;
  for (const dir of [bin, stateDir, repo.root, ...made]) fs.rmSync(dir, { recursive: true, force: true });
});

const example = validatePipeline(definition);
const repo = templateRepo();
const goodCommit = repo.commit(todaysTemplates(example), "today's templates");

interface Call {
  tool: string;
  args: string[];
  stdin?: string;
}
const calls = (): Call[] =>
  fs
    .readFileSync(path.join(stateDir, "calls.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Call);
const promoted = () =>
  calls()
    .filter((c) => c.tool === "kargo" && c.args[0] === "promote")
    .map((c) => c.args[c.args.indexOf("--stage") + 1]!);
/** The stand-ins' state file as they leave it (test/rollback-standin.mjs says what each key is). */
interface StandinState {
  stages: Record<string, object>;
  freight: Record<string, KubeObject>;
  printed: (KubeObject & { metadata: { name: string } })[];
  configMaps: Record<string, { data: Record<string, string> }>;
  verdicts: Record<string, unknown>;
  loggedOut?: boolean;
}
const state = (): StandinState =>
  JSON.parse(fs.readFileSync(path.join(stateDir, "state.json"), "utf8")) as StandinState;

/** A fresh Kargo project: every update stage runs `current`; `older` is the Freight at `commit`. */
function setUp(
  p: Pipeline,
  environment: string,
  options: { commit?: string; role?: string; verdicts?: object } = {},
) {
  const plan = rollbackPlan(p, environment);
  const origin = { kind: "Warehouse", name: plan.warehouse };
  const running = (freight: string) => ({
    freightHistory: [
      {
        id: `${freight}-now`,
        items: { [`Warehouse/${plan.warehouse}`]: { name: freight, origin } },
        verificationHistory: [{ id: "v0", phase: "Successful" }],
      },
    ],
  });
  const freight = (name: string, commit: string, alias?: string) => ({
    apiVersion: "kargo.akuity.io/v1alpha1",
    kind: "Freight",
    metadata: { name, namespace: p.project },
    ...(alias ? { alias } : {}),
    origin,
    commits: [{ repoURL: p.source.repoURL, id: commit }],
  });
  const older = freight("older", options.commit ?? goodCommit, "older-alias");
  fs.writeFileSync(path.join(stateDir, "calls.jsonl"), "");
  fs.writeFileSync(
    path.join(stateDir, "state.json"),
    JSON.stringify({
      freight: { older, "older-alias": older, current: freight("current", goodCommit) },
      stages: Object.fromEntries(
        plan.steps.flatMap((s) => [s.preview, s.update]).map((s) => [s, running("current")]),
      ),
      newest: "current",
      warehouse: plan.warehouse,
      // A Promotion carries its stage's PromotionTask's steps, inlined.
      promotionSteps: promotionTaskSpec(p, "argocd").steps,
      deciderStages: plan.steps.map((s) => s.update),
      role: options.role ?? "decider",
      user: "jane@example.com",
      verdicts: options.verdicts ?? {},
    }),
  );
  return plan;
}

const lines: string[] = [];
const io = { out: (l: string) => lines.push(l) };
const request = (environment: string, more: Partial<RollbackRequest> = {}): RollbackRequest => ({
  environment,
  to: "older",
  kind: "rollback",
  message: "the release broke uploads",
  resume: false,
  dryRun: false,
  repository: repo.root,
  pollMs: 1,
  // Far more than the stand-ins' two answers take on a busy machine; a reader that never sees a verification end fails.
  timeoutMs: 120_000,
  ...more,
});
const stopMessage = (stage: string) =>
  `the preview of abc on org/x/dev stops on loss: 1 resource(s)\n  delete aws:s3/bucket:Bucket (loss) in ${stage}`;

describe("npm run rollback against Kargo's and kubectl's answers", () => {
  const environment = Object.keys(example.environments)[0]!;

  it("records the request, then previews and updates each program, dependents first", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment, { to: "older-alias" }), io)).toBe(0);
    expect(promoted()).toEqual(plan.steps.flatMap((s) => [s.preview, s.update]));
    // The record goes first, with who asked as the API server knows them.
    const first = calls().findIndex((c) => c.tool === "kargo" && c.args[0] === "promote");
    const apply = calls().findIndex((c) => c.tool === "kubectl" && c.args[0] === "apply");
    expect(apply).toBeGreaterThanOrEqual(0);
    expect(apply).toBeLessThan(first);
    const record = JSON.parse(calls()[apply]!.stdin!) as {
      metadata: { name: string; namespace: string };
      data: Record<string, string>;
    };
    expect(record.metadata).toEqual({ name: rollbackRecordName(environment), namespace: example.project });
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
    saved.configMaps[rollbackRecordName(environment)]!.data.at = "2100-01-01T00:00:00Z";
    fs.writeFileSync(path.join(stateDir, "state.json"), JSON.stringify(saved));
    fs.writeFileSync(path.join(stateDir, "calls.jsonl"), "");
    expect(rollback(example, request(environment, { resume: true, message: undefined }), io)).toBe(0);
    expect(promoted()).toEqual([first!.update, ...rest.flatMap((s) => [s.preview, s.update])]);
    expect(calls().some((c) => c.tool === "kubectl" && c.args[0] === "apply")).toBe(false);
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

  it("previews again when an update does not verify (the state changed under it), then goes on", () => {
    lines.length = 0;
    const [first, ...rest] = rollbackPlan(example, environment).steps;
    setUp(example, environment, {
      verdicts: { [first!.update]: { phase: "Failed", message: "did more than its preview" } },
    });
    expect(rollback(example, request(environment), io)).toBe(1);
    expect(promoted()).toEqual([first!.preview, first!.update]);
    expect(lines.join("\n")).toContain("did more than its preview");
    const saved = state();
    saved.verdicts = {};
    fs.writeFileSync(path.join(stateDir, "state.json"), JSON.stringify(saved));
    fs.writeFileSync(path.join(stateDir, "calls.jsonl"), "");
    expect(rollback(example, request(environment, { resume: true, message: undefined }), io)).toBe(0);
    expect(promoted()).toEqual([first!, ...rest].flatMap((s) => [s.preview, s.update]));
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
    expect(calls().filter((c) => c.tool === "kubectl")).toEqual([]);
    expect(lines.join("\n")).toContain(`(stage ${stage}): spec.refresh`);
  });

  it("reconciles: the Freight the update stages run now, again, recorded as a reconcile", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment, { kind: "reconcile", to: undefined }), io)).toBe(0);
    expect(promoted()).toEqual(plan.steps.flatMap((s) => [s.preview, s.update]));
    const apply = calls().find((c) => c.args[0] === "apply")!;
    expect(JSON.parse(apply.stdin!).data).toMatchObject({ kind: "reconcile", to: "current" });
  });

  it("says what to install when kubectl is missing, before it promotes anything", () => {
    setUp(example, environment);
    process.env.PATH = onlyOnPath("kargo");
    try {
      expect(() => rollback(example, request(environment), io)).toThrow(
        "kubectl is not on PATH: install kubectl and put it on PATH",
      );
    } finally {
      process.env.PATH = `${bin}${path.delimiter}${savedPath}`;
    }
    expect(promoted()).toEqual([]);
  });

  it("with --dry-run, promotes nothing and writes nothing", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment, { dryRun: true }), io)).toBe(0);
    expect(promoted()).toEqual([]);
    expect(calls().some((c) => c.args[0] === "apply")).toBe(false);
    for (const s of plan.steps) expect(lines.join("\n")).toContain(`--stage ${s.update}`);
  });

  it("lifts the holds: each held stage promoted with Kargo's pick, a program's preview before its update", () => {
    lines.length = 0;
    const plan = setUp(example, environment);
    expect(rollback(example, request(environment), io)).toBe(0);
    fs.writeFileSync(path.join(stateDir, "calls.jsonl"), "");
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

describe("the command line", () => {
  const environment = Object.keys(example.environments)[0]!;
  const cli = (args: string[], pathDirs: string[]) =>
    spawnSync(
      process.execPath,
      [path.join(repoRoot, "node_modules/tsx/dist/cli.mjs"), "lib/cli/rollback.ts", ...args],
      {
        cwd: repoRoot,
        encoding: "utf8",
        env: { ...process.env, PATH: pathDirs.join(path.delimiter) },
      },
    );
  const gitOnly = [onlyOnPath()];

  it.each([
    [[environment], "give exactly one of --to, --reconcile, --resume"],
    [[environment, "--to", "x"], '--message "<why>" is required'],
    [[environment, "--to", "", "--message", "m"], "--to: name the Freight"],
    [[environment, "--resume", "--program", example.programs[0]!.name], "--resume takes no --program"],
    [[environment, "--to", "x", "--continue", "--message", "m"], "--continue takes no --message"],
    [[environment, "--reconcile", "--to", "x", "--message", "m"], "give exactly one of"],
    [[environment, "--to", "x", "--message", "m", "--sideways"], "Unknown option '--sideways'"],
    [[environment, "qa", "--resume"], "name one environment"],
  ])("refuses the arguments %j, saying what is wrong", (args, said) => {
    expect(() => parseRollbackArgs(args)).toThrow(UsageError);
    expect(() => parseRollbackArgs(args)).toThrow(said);
  });

  it("exits 2 for a bad argument with the reason and its usage, no stack trace", () => {
    const r = cli(["nowhere", "--to", "x", "--message", "m"], gitOnly);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('environment "nowhere" is not in kargo/pipeline.ts; allowed:');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("says what to install when kargo is missing, and what to run when it has no session", () => {
    const missing = cli([environment, "--to", "x", "--message", "m"], gitOnly);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("kargo is not on PATH: install the Kargo CLI");
    setUp(example, environment);
    fs.writeFileSync(path.join(stateDir, "state.json"), JSON.stringify({ ...state(), loggedOut: true }));
    const loggedOut = cli([environment, "--to", "x", "--message", "m"], [bin, ...gitOnly]);
    expect(loggedOut.status).toBe(2);
    expect(loggedOut.stderr).toContain("run kargo login");
    for (const r of [missing, loggedOut]) expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
