// The verification conditions, evaluated by expr-lang itself over a catalogue of Pulumi Cloud answers shaped
// like pulumi/pulumi sdk/go/common/apitype/history.go (UpdateInfo, GetHistoryResponse: no omitempty, so null
// `environment` and `updates` do arrive) and the REST API's previews list (service format, under `info`).
import { beforeAll, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  analysisTemplateSpec,
  environmentStages,
  stageSpec,
  type AnalysisTemplateKind,
} from "../lib/pipeline/derive";
import { validatePipeline } from "../lib/pipeline/model";
import { describeWithExpr, evaluateAll, type ExprCase } from "./expr-engine";

const pipeline = validatePipeline(definition);
const COMMIT = "4f1c2b9e8d7a6c5b4a3928171605f4e3d2c1b0a9";
const OTHER = "9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b";
/** An all-digit commit ID: still a string inside the condition. */
const DIGITS = "1234567890123456789012345678901234567890";

type Phase = "Successful" | "Failed" | "Inconclusive" | "Error";

// ---- Pulumi Cloud answers -------------------------------------------------------------------------------
const env = (commit: string) => ({
  "git.head": commit,
  "git.headName": "refs/heads/stage/dev",
  "exec.kind": "cli",
});
/** One entry of `GET .../updates` (CLI format: UpdateInfo at the top level). */
const update = (
  commit: string | null,
  result: string,
  kind = "update",
  more: Record<string, unknown> = {},
) => ({
  kind,
  startTime: 1_763_700_000,
  message: "",
  environment: commit === null ? null : env(commit),
  config: {},
  result,
  endTime: result === "in-progress" ? 0 : 1_763_700_100,
  version: 7,
  resourceChanges: { same: 4 },
  resourceCount: 4,
  ...more,
});
/** One entry of `GET .../updates/latest/previews` (service format: UpdateInfo under `info`). */
const preview = (
  commit: string | null,
  result: string,
  resourceChanges?: Record<string, number>,
  startTime = 1_763_700_000,
) => ({
  info: {
    kind: "update",
    startTime,
    message: "",
    environment: commit === null ? null : env(commit),
    config: {},
    result,
    endTime: result === "in-progress" ? 0 : 1_763_700_100,
    version: 0,
    ...(resourceChanges ? { resourceChanges } : {}),
  },
  updateID: "b9f5c7e2-1a2b-4c3d-9e8f-0a1b2c3d4e5f",
  version: 0,
  latestVersion: 7,
  requestedBy: { name: "pko", githubLogin: "pko", avatarUrl: "" },
});
const list = (...updates: unknown[]) => ({ updates, itemsPerPage: 10, total: updates.length });
/** A start time after the default one: the operation that ran later. */
const T1 = 1_763_700_200;
const later = { startTime: T1 };

// ---- The catalogue: answer -> phase each metric of the template must reach --------------------------------
type Row = { name: string; body: unknown; expect: Phase | Record<string, Phase>; commit?: string };

const updateRows: Row[] = [
  { name: "succeeded", body: list(update(COMMIT, "succeeded")), expect: "Successful" },
  { name: "failed", body: list(update(COMMIT, "failed")), expect: "Failed" },
  { name: "running", body: list(update(COMMIT, "in-progress")), expect: "Inconclusive" },
  { name: "not started", body: list(update(COMMIT, "not-started")), expect: "Inconclusive" },
  { name: "another commit only", body: list(update(OTHER, "succeeded")), expect: "Inconclusive" },
  {
    name: "another commit newer than ours",
    body: list(update(OTHER, "failed"), update(COMMIT, "succeeded")),
    expect: "Successful",
  },
  { name: "empty list", body: list(), expect: "Inconclusive" },
  { name: "updates: null", body: { updates: null }, expect: "Inconclusive" },
  { name: "no updates key", body: {}, expect: "Inconclusive" },
  {
    name: "null environment (newest), ours older",
    body: list(update(null, "succeeded"), update(COMMIT, "succeeded")),
    expect: "Successful",
  },
  { name: "null environment only", body: list(update(null, "failed")), expect: "Inconclusive" },
  {
    name: "environment without git.head",
    body: list({ ...update(COMMIT, "failed"), environment: { "exec.kind": "cli" } }),
    expect: "Inconclusive",
  },
  { name: "null entry", body: list(null, update(COMMIT, "succeeded")), expect: "Successful" },
  {
    name: "retry: failed then succeeded (newest first)",
    body: list(update(COMMIT, "succeeded", "update", later), update(COMMIT, "failed")),
    expect: "Successful",
  },
  {
    name: "retry: succeeded then failed (newest first)",
    body: list(update(COMMIT, "failed", "update", later), update(COMMIT, "succeeded")),
    expect: "Failed",
  },
  {
    name: "retry: failed then succeeded (oldest first)",
    body: list(update(COMMIT, "failed"), update(COMMIT, "succeeded", "update", later)),
    expect: "Successful",
  },
  {
    name: "retry: succeeded then failed (oldest first)",
    body: list(update(COMMIT, "succeeded"), update(COMMIT, "failed", "update", later)),
    expect: "Failed",
  },
  {
    name: "retry still running after a failure",
    body: list(update(COMMIT, "in-progress", "update", later), update(COMMIT, "failed")),
    expect: "Inconclusive",
  },
  {
    name: "entry without startTime",
    body: list({ ...update(COMMIT, "succeeded"), startTime: null }),
    expect: "Inconclusive",
  },
  {
    name: "refresh entry for our commit is not an update",
    body: list(update(COMMIT, "failed", "refresh"), update(COMMIT, "in-progress")),
    expect: "Inconclusive",
  },
  {
    name: "refresh after our update",
    body: list(update(COMMIT, "succeeded", "refresh"), update(COMMIT, "failed")),
    expect: "Failed",
  },
  {
    name: "destroy entry for our commit is not an update",
    body: list(update(COMMIT, "succeeded", "destroy")),
    expect: "Inconclusive",
  },
  {
    name: "all-digit commit ID",
    commit: DIGITS,
    body: list(update(DIGITS, "succeeded")),
    expect: "Successful",
  },
];

const previewRows: Row[] = [
  { name: "succeeded", body: list(preview(COMMIT, "succeeded")), expect: "Successful" },
  { name: "failed", body: list(preview(COMMIT, "failed")), expect: "Failed" },
  { name: "running", body: list(preview(COMMIT, "in-progress")), expect: "Inconclusive" },
  { name: "another commit only", body: list(preview(OTHER, "failed")), expect: "Inconclusive" },
  {
    name: "another commit's newer preview",
    body: list(preview(OTHER, "failed"), preview(COMMIT, "succeeded")),
    expect: "Successful",
  },
  { name: "empty list", body: list(), expect: "Inconclusive" },
  // `updates/latest/previews` lists the previews since the latest update: an update empties it.
  {
    name: "list emptied by a later update",
    body: { updates: [], itemsPerPage: 10, total: 0 },
    expect: "Inconclusive",
  },
  { name: "updates: null", body: { updates: null }, expect: "Inconclusive" },
  {
    name: "entry without info (newest), ours older",
    body: list({ updateID: "x", version: 0 }, preview(COMMIT, "succeeded")),
    expect: "Successful",
  },
  { name: "entry with info: null", body: list({ info: null }), expect: "Inconclusive" },
  { name: "null environment", body: list(preview(null, "failed")), expect: "Inconclusive" },
  {
    name: "retry: failed then succeeded (newest first)",
    body: list(preview(COMMIT, "succeeded", undefined, T1), preview(COMMIT, "failed")),
    expect: "Successful",
  },
  {
    name: "retry: succeeded then failed (newest first)",
    body: list(preview(COMMIT, "failed", undefined, T1), preview(COMMIT, "succeeded")),
    expect: "Failed",
  },
  // The REST API documents this list oldest first.
  {
    name: "retry: failed then succeeded (oldest first)",
    body: list(
      preview(COMMIT, "failed"),
      preview(OTHER, "failed"),
      preview(COMMIT, "succeeded", undefined, T1),
    ),
    expect: "Successful",
  },
  {
    name: "retry: succeeded then failed (oldest first)",
    body: list(preview(COMMIT, "succeeded"), preview(COMMIT, "failed", undefined, T1)),
    expect: "Failed",
  },
  {
    name: "would delete, unprotected environment",
    body: list(preview(COMMIT, "succeeded", { delete: 2, replace: 1, same: 3 })),
    expect: "Successful",
  },
  {
    name: "all-digit commit ID",
    commit: DIGITS,
    body: list(preview(DIGITS, "succeeded")),
    expect: "Successful",
  },
];

const all = (phase: Phase) => ({ "pulumi-preview": phase, "no-deletes": phase, "no-replaces": phase });
const protectedPreviewRows: Row[] = [
  {
    name: "no resource changes recorded",
    body: list(preview(COMMIT, "succeeded")),
    expect: all("Successful"),
  },
  {
    name: "creates and updates only",
    body: list(preview(COMMIT, "succeeded", { create: 2, update: 1, same: 3 })),
    expect: all("Successful"),
  },
  {
    name: "zero deletes and replaces",
    body: list(preview(COMMIT, "succeeded", { delete: 0, replace: 0, same: 3 })),
    expect: all("Successful"),
  },
  {
    name: "would delete",
    body: list(preview(COMMIT, "succeeded", { delete: 2, same: 3 })),
    expect: { "pulumi-preview": "Successful", "no-deletes": "Failed", "no-replaces": "Successful" },
  },
  {
    name: "would replace",
    body: list(preview(COMMIT, "succeeded", { replace: 1, update: 1 })),
    expect: { "pulumi-preview": "Successful", "no-deletes": "Successful", "no-replaces": "Failed" },
  },
  {
    name: "would delete and replace",
    body: list(preview(COMMIT, "succeeded", { delete: 1, replace: 3 })),
    expect: { "pulumi-preview": "Successful", "no-deletes": "Failed", "no-replaces": "Failed" },
  },
  {
    name: "an older preview of ours would delete, the newest does not",
    body: list(preview(COMMIT, "succeeded", { create: 1 }), preview(COMMIT, "succeeded", { delete: 5 })),
    expect: all("Successful"),
  },
  {
    name: "another commit's preview would delete",
    body: list(preview(OTHER, "succeeded", { delete: 5 }), preview(COMMIT, "succeeded", { same: 1 })),
    expect: all("Successful"),
  },
  {
    // The failed preview fails the run; its partial counts decide nothing.
    name: "failed preview with deletes",
    body: list(preview(COMMIT, "failed", { delete: 1 })),
    expect: { "pulumi-preview": "Failed", "no-deletes": "Inconclusive", "no-replaces": "Inconclusive" },
  },
  { name: "running", body: list(preview(COMMIT, "in-progress", { delete: 1 })), expect: all("Inconclusive") },
  { name: "updates: null", body: { updates: null }, expect: all("Inconclusive") },
  { name: "entry without info", body: list({ updateID: "x" }), expect: all("Inconclusive") },
];

const catalogue: Record<AnalysisTemplateKind, Row[]> = {
  update: updateRows,
  preview: previewRows,
  protectedPreview: protectedPreviewRows,
};

describeWithExpr("verification conditions, evaluated by expr-lang", () => {
  // One process evaluates every condition of every template over every answer.
  const verdicts = new Map<string, Phase>();
  const key = (kind: string, row: string, metric: string) => `${kind} / ${row} / ${metric}`;

  beforeAll(() => {
    const cases: ExprCase[] = [];
    const keys: string[] = [];
    for (const [kind, rows] of Object.entries(catalogue) as [AnalysisTemplateKind, Row[]][]) {
      for (const metric of analysisTemplateSpec(pipeline, kind).metrics!) {
        for (const row of rows) {
          // Argo Rollouts substitutes {{args.*}} textually before evaluating.
          const withArgs = (c: string) => c.replaceAll("{{args.commit}}", row.commit ?? COMMIT);
          cases.push(
            { kind: "condition", expression: withArgs(metric.successCondition!), body: row.body },
            { kind: "condition", expression: withArgs(metric.failureCondition!), body: row.body },
          );
          keys.push(key(kind, row.name, metric.name));
        }
      }
    }
    const results = evaluateAll(cases);
    keys.forEach((k, i) => {
      const [success, failure] = [results[2 * i]!, results[2 * i + 1]!];
      // How Argo Rollouts turns the two verdicts into a measurement (v1.9.0 utils/evaluate/evaluate.go).
      const phase: Phase =
        success.error !== undefined || failure.error !== undefined
          ? "Error"
          : failure.value === true
            ? "Failed"
            : success.value === true
              ? "Successful"
              : "Inconclusive";
      verdicts.set(k, phase);
    });
  });

  for (const [kind, rows] of Object.entries(catalogue) as [AnalysisTemplateKind, Row[]][]) {
    it(`${kind}: every answer in the catalogue gets the verdict the rule gives, never an error`, () => {
      const metrics = analysisTemplateSpec(pipeline, kind).metrics!.map((m) => m.name);
      const got: Record<string, Record<string, Phase>> = {};
      const want: Record<string, Record<string, Phase>> = {};
      for (const row of rows) {
        got[row.name] = Object.fromEntries(metrics.map((m) => [m, verdicts.get(key(kind, row.name, m))!]));
        want[row.name] =
          typeof row.expect === "string"
            ? Object.fromEntries(metrics.map((m) => [m, row.expect as Phase]))
            : row.expect;
      }
      expect(got).toEqual(want);
    });
  }

  it("keeps to the subset expr 1.8.9 and 1.15.5 share", () => {
    for (const kind of Object.keys(catalogue) as AnalysisTemplateKind[]) {
      for (const m of analysisTemplateSpec(pipeline, kind).metrics!) {
        for (const c of [m.successCondition!, m.failureCondition!]) {
          expect(c).not.toMatch(/\?\.|\?\?|\bfind\(|\bget\(/);
        }
      }
    }
  });
});

it("passes the promoted commit to every verification as a quoted string, so an all-digit ID stays a string", () => {
  // Kargo parses an unquoted expression result that looks like a number into a number, and then refuses it
  // as an AnalysisRun argument (akuity/kargo v1.11.2 pkg/rollouts/analysis_run_builder.go).
  const args = environmentStages(pipeline).flatMap((s) => stageSpec(pipeline, s).verification!.args!);
  const commits = args.filter((a) => a.name === "commit").map((a) => a.value);
  expect(commits).toHaveLength(environmentStages(pipeline).length);
  for (const value of commits)
    expect(value).toBe(`\${{ quote(commitFrom("${pipeline.source.repoURL}").ID) }}`);
  // Web metrics get the whole body: no jsonPath that would turn `updates: null` into an error.
  for (const kind of Object.keys(catalogue) as AnalysisTemplateKind[])
    for (const m of analysisTemplateSpec(pipeline, kind).metrics!)
      expect(m.provider.web!.jsonPath).toBeUndefined();
});
