// The promotion record read back: each stage branch commit's record trailer (written by every promotion,
// lib/pipeline/promotion.ts promotionMessage), gathered per environment. It needs git only: the stage
// branches outlive Kargo's Freight collection and the cluster, and only Kargo pushes them.
import { spawnSync } from "node:child_process";
import { z } from "zod";
import { programStages, type ProgramStage } from "./pipeline/graph";
import { stageBranch, stageBranchPrefix } from "./pipeline/names";
import { recordTrailer } from "./pipeline/promotion";
import type { Pipeline } from "./pipeline/schema";

/** A value Kargo's metadata holds as a list, or a single value from before it was one; absent: none. */
const list = z
  .union([z.array(z.unknown()), z.unknown()])
  .transform((v) => (v === null || v === undefined ? [] : Array.isArray(v) ? v : [v]).map(String));

const recordSchema = z.object({
  project: z.string(),
  stage: z.string(),
  freight: z.string(),
  alias: z.string().nullish(),
  commit: z.string(),
  promotion: z.string(),
  promotedBy: z.string().nullish(),
  approvals: z.array(z.object({ gate: z.string(), by: list, at: list })),
  // Who approved a stopped preview's Freight for this update stage (an empty map: nobody had to; absent or
  // null: a stage no stop is approved for, or a record from before it was kept).
  stopApproval: z.record(z.string(), z.string()).nullish(),
  // The environment's rollback (or reconcile) request when it covered this promotion (npm run rollback writes
  // it; lib/pipeline/promotion-rollback.ts rollbackRecord); absent or null: an ordinary promotion.
  rollback: z
    .object({
      kind: z.string(),
      from: z.string().nullish(),
      to: z.string(),
      by: z.string(),
      message: z.string(),
      at: z.string(),
    })
    .nullish(),
  // For a reconcile: the drift its stage's check last found (at, stack, stage, message; Argo Events' Sensor
  // writes it from PKO's Event, lib/pipeline/drift-record.ts), empty when none was recorded; absent or null:
  // not a reconcile, or a record from before it was kept.
  drift: z.record(z.string(), z.string()).nullish(),
  freightUrl: z.string(),
  promotionUrl: z.string(),
});
export type PromotionRecord = z.infer<typeof recordSchema>;

/** One commit of a stage branch as git hands it over. */
export interface BranchCommit {
  id: string;
  /** Committer date, ISO 8601: when Kargo pushed the promotion. */
  date: string;
  /** The branch's first commit, which Kargo creates empty with the branch. */
  root: boolean;
  message: string;
}

/**
 * The record a stage branch commit holds, or why it holds none. Exactly one trailer line: a message naming
 * it twice was not written by a promotion (Kargo's JSON escapes every newline, so no value adds a line).
 */
export function parseRecord(message: string): { record: PromotionRecord } | { problem: string } {
  const prefix = `${recordTrailer}: `;
  const lines = message.split("\n").filter((l) => l.startsWith(prefix));
  if (lines.length === 0) return { problem: `no ${recordTrailer} line` };
  if (lines.length > 1) return { problem: `${lines.length} ${recordTrailer} lines, a promotion writes one` };
  let json: unknown;
  try {
    json = JSON.parse(lines[0]!.slice(prefix.length));
  } catch (err) {
    return { problem: `${recordTrailer} is not JSON: ${(err as Error).message}` };
  }
  const parsed = recordSchema.safeParse(json);
  return parsed.success
    ? { record: parsed.data }
    : { problem: `${recordTrailer} lacks ${parsed.error.issues.map((i) => i.path.join(".")).join(", ")}` };
}

export interface HistoryEntry {
  stage: ProgramStage;
  branchCommit: string;
  pushedAt: string;
  record?: PromotionRecord;
  problem?: string;
  /** For an update stage: its preview stage's record of the same Freight, the preview it was approved on. */
  preview?: { stage: string; pushedAt: string; promotionUrl: string };
  /** A later stage of the pipeline took this Freight from this stage: it was verified here. */
  verifiedBy?: string;
}

/**
 * Every promotion into the environment's program stages, newest first, from each stage's branch. `log` gives
 * a branch's commits (newest first), or undefined when the branch does not exist (never promoted).
 */
export function environmentHistory(
  p: Pipeline,
  environment: string,
  log: (branch: string) => BranchCommit[] | undefined,
): HistoryEntry[] {
  if (!Object.hasOwn(p.environments, environment))
    throw new Error(
      `environment "${environment}" is not in kargo/pipeline.ts; allowed: ${Object.keys(p.environments).join(", ")}`,
    );
  const all = programStages(p);
  const entries = all.flatMap((stage) =>
    (log(stageBranch(stage.name)) ?? [])
      .filter((c) => !(c.root && !c.message.includes(recordTrailer)))
      .map((c): HistoryEntry => {
        const parsed = parseRecord(c.message);
        return {
          stage,
          branchCommit: c.id,
          pushedAt: c.date,
          ...("record" in parsed ? { record: parsed.record } : { problem: parsed.problem }),
        };
      }),
  );
  const byStage = (name: string, freight: string) =>
    entries.find((e) => e.stage.name === name && e.record?.freight === freight);
  for (const e of entries) {
    if (!e.record) continue;
    // The stages that take Freight from this one: a record of the same Freight there means it passed here.
    const later = all.find(
      (s) => s.from !== "warehouse" && s.from.includes(e.stage.name) && byStage(s.name, e.record!.freight),
    );
    if (later) e.verifiedBy = later.name;
    if (e.stage.kind === "update" && e.stage.from !== "warehouse") {
      const preview = e.stage.from
        .map((name) => byStage(name, e.record!.freight))
        .find((x) => x?.stage.kind === "preview");
      if (preview?.record)
        e.preview = {
          stage: preview.stage.name,
          pushedAt: preview.pushedAt,
          promotionUrl: preview.record.promotionUrl,
        };
    }
  }
  return entries
    .filter((e) => e.stage.environment === environment)
    .sort((a, b) => b.pushedAt.localeCompare(a.pushedAt));
}

const q = (v: unknown) => JSON.stringify(v ?? null);

/** A rollback (back to earlier Freight) or a reconcile (the current Freight again), who asked for it and why. */
function rollbackLine(r: NonNullable<PromotionRecord["rollback"]>): string {
  const what =
    r.kind === "reconcile" ? `reconcile of ${q(r.to)}` : `${r.kind} from ${q(r.from)} to ${q(r.to)}`;
  return `  ${what} by ${q(r.by)} at ${q(r.at)}: ${q(r.message)}`;
}

/** The drift a reconcile brought home, as its stage's drift check found it. */
function driftLine(d: NonNullable<PromotionRecord["drift"]>): string {
  if (!d.stack) return "  drift: none on record for this stage (no drift check's failure was recorded)";
  return `  drift found by ${q(d.stack)}'s check at ${q(d.at)}: ${q(d.message)}`;
}

/** The history as text, one block per promotion; values are printed as JSON strings, never raw. */
export function formatHistory(environment: string, entries: HistoryEntry[]): string {
  if (entries.length === 0) return `${environment}: no promotion on record (no stage branch holds one)\n`;
  const blocks = entries.map((e) => {
    const head = `${e.pushedAt}  ${e.stage.name} (${e.stage.kind} of ${e.stage.program})  branch commit ${e.branchCommit.slice(0, 12)}`;
    if (!e.record) return `${head}\n  no record: ${e.problem}`;
    const r = e.record;
    const lines = [
      head,
      `  freight ${q(r.freight)} alias ${q(r.alias)} commit ${q(r.commit)}`,
      `  promotion ${q(r.promotion)} by ${q(r.promotedBy)}`,
      ...r.approvals
        .filter((a) => a.by.length > 0)
        // Times pair from the newest: an approval recorded before times were (the oldest) has none.
        .map((a) => {
          const when = (i: number) => a.at[i - (a.by.length - a.at.length)];
          return `  approved at ${a.gate}: ${a.by.map((by, i) => `${q(by)} at ${q(when(i))}`).join(", ")}`;
        }),
      ...(r.stopApproval?.by
        ? [`  stopped preview approved by ${q(r.stopApproval.by)} at ${q(r.stopApproval.at)}`]
        : []),
      ...(r.rollback ? [rollbackLine(r.rollback)] : []),
      ...(r.drift ? [driftLine(r.drift)] : []),
      ...(e.preview
        ? [`  preview ${e.preview.stage} of ${e.preview.pushedAt}: ${q(e.preview.promotionUrl)}`]
        : []),
      `  outcome: ${e.verifiedBy ? `verified (${e.verifiedBy} took it next)` : "pushed and synced; no later stage took it yet"}`,
      `  freight ${q(r.freightUrl)}`,
      `  promotion ${q(r.promotionUrl)}`,
    ];
    return lines.join("\n");
  });
  return `${blocks.join("\n\n")}\n`;
}

/** A git command's result; throws, saying so, when git itself could not run. */
function runGit(args: string[]) {
  const r = spawnSync("git", args, { encoding: "utf8", maxBuffer: 256 << 20 });
  if (r.error) throw new Error(`git did not run (${r.error.message}): install git, or put it on PATH`);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.trim().split("\n")[0] ?? "" };
}

/**
 * What to run so that `<refPrefix>stage/*` holds the stage branches: a fetch of them from the remote the
 * prefix names (a clone of one branch, as CI checks out, fetched none; only Kargo pushes them).
 */
export const fetchCommand = (repository: string, remote: string) =>
  `git -C ${repository} fetch ${remote} 'refs/heads/${stageBranchPrefix}*:refs/remotes/${remote}/${stageBranchPrefix}*'`;

/**
 * A branch's commits from a git repository, newest first (first parent: the branch's own line); undefined
 * when `<refPrefix><branch>` does not exist. Before any branch is read it refuses, saying what to run, a
 * directory that is no git repository, a remote the prefix names that the clone lacks, and a prefix under
 * which no stage branch exists at all: each would otherwise read as an environment never promoted.
 */
export function gitLog(repository: string, refPrefix: string) {
  const inRepo = (...args: string[]) => runGit(["-C", repository, ...args]);
  const repo = inRepo("rev-parse", "--git-dir");
  if (repo.status !== 0)
    throw new Error(
      `${repository} is not a git repository (git: ${repo.stderr}): run it in a clone of the repository, or name one with --repository DIR`,
    );
  const remote = /^refs\/remotes\/([^/]+)\/$/.exec(refPrefix)?.[1];
  if (remote && inRepo("remote", "get-url", remote).status !== 0)
    throw new Error(
      `the clone at ${repository} has no remote "${remote}" (git remote -v lists its remotes): add it with git remote add ${remote} <the repository's URL> and fetch, or read another remote's with --ref-prefix refs/remotes/<remote>/`,
    );
  const under = `${refPrefix}${stageBranchPrefix}`;
  const any = inRepo("for-each-ref", "--count=1", "--format=%(refname)", under);
  if (any.status !== 0) throw new Error(`git for-each-ref ${under}: ${any.stderr}`);
  if (any.stdout.trim() === "")
    throw new Error(
      remote
        ? `no stage branch under ${under} in ${repository}: they were never fetched; run ${fetchCommand(repository, remote)}`
        : `no stage branch under ${under} in ${repository}: Kargo pushes them to the remote; fetch them (${fetchCommand(repository, "origin")}) and read refs/remotes/origin/, the default`,
    );
  return (branch: string): BranchCommit[] | undefined => {
    const ref = `${refPrefix}${branch}`;
    const exists = inRepo("rev-parse", "--verify", "--quiet", ref);
    // 1 with --quiet: no such ref; anything else is git failing.
    if (exists.status === 1) return undefined;
    if (exists.status !== 0) throw new Error(`git rev-parse ${ref}: ${exists.stderr}`);
    const out = inRepo("log", "--first-parent", "-z", "--format=%H%x1f%cI%x1f%P%x1f%B", ref);
    if (out.status !== 0) throw new Error(`git log ${ref}: ${out.stderr}`);
    return out.stdout
      .split("\0")
      .filter((c) => c.trim() !== "")
      .map((c) => {
        const [id, date, parents, message] = c.split("\x1f");
        return { id: id!.trim(), date: date!, root: parents === "", message: message ?? "" };
      });
  };
}
