// A stand-in `kargo` on PATH for the rollback's tests (test/rollback-run.test.ts,
// test/rollback-cli.test.ts): Kargo's API server cannot run here, so test/rollback-standin.mjs records each
// call and answers with Kargo v1.11.2's JSON from a state file this sets up. Each test file makes its own
// (the suite shares modules between files), and puts PATH back when it is done.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";
import type { KubeObject } from "../lib/crds/validate";
import { rollbackPlan, rollbackRequestName } from "../lib/pipeline/rollback";
import { promotionTaskSpec } from "../lib/pipeline/promotion";
import type { Pipeline } from "../lib/pipeline/schema";
import type { RollbackRequest } from "../lib/rollback";
import { templateRepo, todaysTemplates } from "./rollback-support";

export interface Call {
  tool: string;
  args: string[];
  stdin?: string;
}

/** The stand-ins' state file as they leave it (test/rollback-standin.mjs says what each key is). */
export interface StandinState {
  stages: Record<string, object>;
  freight: Record<string, KubeObject>;
  printed: (KubeObject & { metadata: { name: string } })[];
  configMaps: Record<string, { data: Record<string, string> }>;
  verdicts: Record<string, unknown>;
  loggedOut?: boolean;
  anonymous?: boolean;
}

/** The stand-ins for this test file, on PATH for its tests, and a git repository holding `p`'s templates. */
export function standins(p: Pipeline) {
  const standin = path.join(repoRoot, "test", "rollback-standin.mjs");
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), "rollback-bin-"));
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollback-state-"));
  for (const tool of ["kargo"])
    fs.writeFileSync(
      path.join(bin, tool),
      `#!/bin/sh\nexec "${process.execPath}" "${standin}" ${tool} "${stateDir}" "$@"\n`,
      {
        mode: 0o755,
      },
    );
  const repo = templateRepo();
  const goodCommit = repo.commit(todaysTemplates(p), "today's templates");
  const savedPath = process.env.PATH;
  const made: string[] = [];
  /**
   * A PATH of git and the named stand-ins alone (node is run by its path): this machine's own kargo,
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
  const state = (): StandinState =>
    JSON.parse(fs.readFileSync(path.join(stateDir, "state.json"), "utf8")) as StandinState;

  /** A fresh Kargo project: every update stage runs `current`; `older` is the Freight at `commit`. */
  function setUp(
    q: Pipeline,
    environment: string,
    options: { commit?: string; role?: string; verdicts?: object } = {},
  ) {
    const plan = rollbackPlan(q, environment);
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
      metadata: { name, namespace: q.project },
      ...(alias ? { alias } : {}),
      origin,
      commits: [{ repoURL: q.source.repoURL, id: commit }],
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
        promotionSteps: promotionTaskSpec(q, "argocd").steps,
        deciderStages: plan.steps.map((s) => s.update),
        previewStages: plan.steps.map((s) => s.preview),
        // The kargo project's request, empty (kargo/rollbackRequests.ts).
        configMaps: {
          [rollbackRequestName(environment)]: {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: rollbackRequestName(environment), namespace: q.project },
          },
        },
        role: options.role ?? "decider",
        user: "jane@example.com",
        verdicts: options.verdicts ?? {},
      }),
    );
    return plan;
  }

  /** A rollback request of older Freight, fast polls and a bounded wait, for the flow under test. */
  const request = (environment: string, more: Partial<RollbackRequest> = {}): RollbackRequest => ({
    environment,
    to: "older",
    kind: "rollback",
    message: "the release broke uploads",
    resume: false,
    dryRun: false,
    repository: repo.root,
    pollMs: 1,
    // Far more than the stand-ins' two answers take on a busy machine; a reader that never sees a
    // verification end fails instead of waiting for the pipeline's own timeouts.
    timeoutMs: 120_000,
    ...more,
  });
  /** Empties the call log, or rewrites the state (a verdict changed between two runs). */
  const reset = (next?: StandinState) => {
    if (next) fs.writeFileSync(path.join(stateDir, "state.json"), JSON.stringify(next));
    fs.writeFileSync(path.join(stateDir, "calls.jsonl"), "");
  };
  const restorePath = () => {
    process.env.PATH = `${bin}${path.delimiter}${savedPath}`;
  };
  return { bin, repo, calls, promoted, state, setUp, request, reset, onlyOnPath, restorePath };
}
