// `npm run rollback`, the flow: an environment (or one program and its dependents) back to older Freight, or
// its current Freight again (a reconcile), each program previewed against the environment's state now and
// then updated, dependents first (lib/pipeline/rollback.ts says why); the preview's stop applies as to any
// Freight, and the update is a decider's act. Nothing is promoted when any stage's older Stack template would
// be refused (lib/rollback-template.ts). The record is the ConfigMap rollback-<environment>, written through
// Kargo's API as the person (the kargo project creates it empty), which each promotion's Kargo-Record carries
// into the stage branches.
import {
  getConfigMap,
  getFreight,
  getStage,
  PermissionError,
  orRefused,
  promote,
  signedIn,
  updateConfigMap,
  updateConfigMapArgs,
  waitFor,
  type Outcome,
} from "./rollback-kargo";
import { refusalText, templateRefusals } from "./rollback-template";
import { rollbackPlan, rollbackRequestName, type RollbackPlan, type RollbackStep } from "./pipeline/rollback";
import type { Pipeline } from "./pipeline/schema";

export interface RollbackRequest {
  environment: string;
  program?: string;
  /** --to: the Freight (name or alias) to go back to; absent with --reconcile. */
  to?: string;
  kind: "rollback" | "reconcile";
  message?: string;
  /** --continue: a decider takes a stopped (or refused) rollback on from where it is. */
  resume: boolean;
  dryRun: boolean;
  repository: string;
  pollMs: number;
  /** How long to wait for one stage; by default its verification's timeout and ten minutes for the promotion. */
  timeoutMs?: number;
}

export interface Console {
  out: (line: string) => void;
}

/** A Go duration of the pipeline's verification (`15m`, `1h30m`, `45s`) in milliseconds. */
export function durationMs(text: string): number {
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  for (const [, n, u] of text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) total += Number(n) * unit[u!]!;
  return total;
}

/** The command a decider runs to take the rollback on. */
export const continueCommand = (r: Pick<RollbackRequest, "environment" | "program">, freight: string) =>
  `npm run rollback -- ${r.environment} --to ${freight}${r.program ? ` --program ${r.program}` : ""} --continue`;

/** Runs a rollback or reconcile; the exit code: 0 done, 1 refused or stopped (it says why and what next). */
export function rollback(p: Pipeline, r: RollbackRequest, io: Console): number {
  const plan = rollbackPlan(p, r.environment, r.program);
  const project = plan.project;
  const updates = plan.steps.map((s) => s.update);
  const running = Object.fromEntries(updates.map((u) => [u, getStage(project, u).freight ?? ""]));
  let target: string;
  if (r.kind === "reconcile") {
    const distinct = [...new Set(Object.values(running))];
    if (distinct.length !== 1 || distinct[0] === "")
      throw new Error(
        `--reconcile runs the Freight the update stages run now again, and they run ${distinct.length === 1 ? "none" : "different Freight"} (${updates.map((u) => `${u}: ${running[u] || "none"}`).join(", ")}); let the release finish, or name the Freight with --to`,
      );
    target = distinct[0]!;
  } else target = r.to!;
  const freight = getFreight(project, target);
  const stages = plan.steps.flatMap((s) => [s.preview, s.update]);
  const refusals = templateRefusals(r.repository, p, freight.commit, stages);
  if (refusals.length > 0) {
    io.out(refusalText(p, freight.commit, refusals));
    return 1;
  }
  const named = freight.alias ? `${freight.name} (${freight.alias})` : freight.name;
  io.out(planText(plan, r.kind, named, freight.commit, running));
  const since = r.resume ? recordedStart(plan, freight.name, updates) : undefined;
  if (!r.resume) {
    const name = rollbackRequestName(plan.environment);
    const record = recordData(plan, r, freight.name, running, signedIn());
    if (r.dryRun)
      io.out(`would run: kargo ${updateConfigMapArgs(project, name, record).map(quoted).join(" ")}`);
    else {
      const refused = orRefused(() => updateConfigMap(project, name, record));
      if (refused instanceof PermissionError) {
        io.out(
          `${name}: Kargo refused the rollback request (${refused.message}); a rollback of ${plan.environment} is asked for by a member of ${requesters(plan)}`,
        );
        return 1;
      }
    }
  }
  if (r.dryRun) {
    for (const s of plan.steps)
      for (const stage of [s.preview, s.update])
        io.out(`would run: kargo promote --project ${project} --freight ${freight.name} --stage ${stage}`);
    return 0;
  }
  const timing = (kind: "preview" | "update") => ({
    pollMs: r.pollMs,
    // The promotion itself (clone, push, sync) and the Stack's run before verification starts, then the
    // verification's own timeout.
    timeoutMs:
      r.timeoutMs ??
      10 * 60_000 +
        durationMs(kind === "preview" ? p.verification.previewTimeout : p.verification.updateTimeout),
  });
  let passable = r.resume;
  for (const step of plan.steps) {
    const done = stepState(project, step, freight.name, since);
    if (done.updated) {
      io.out(`${step.update}: already updated to ${freight.name} by this rollback`);
      continue;
    }
    let verdict: Outcome;
    let fresh = false;
    if (done.previewed) verdict = done.previewed;
    else {
      io.out(`promoting ${freight.name} into ${step.preview} (preview of ${step.program})`);
      const promoted = orRefused(() => promote(project, step.preview, { freight: freight.name }));
      if (promoted instanceof PermissionError) {
        io.out(
          `${step.preview}: Kargo refused the preview (${promoted.message}); a rollback of ${plan.environment} is started by a member of ${requesters(plan)}`,
        );
        return 1;
      }
      verdict = waitFor(project, step.preview, promoted.name, freight.name, timing("preview"));
      fresh = true;
    }
    if (verdict.ok) io.out(`${step.preview}: preview verified, it passed`);
    else if (verdict.promotionFailed || !isStop(verdict.message)) {
      io.out(`${step.preview}: the preview failed, the rollback stops here:\n${verdict.message}`);
      return 1;
    } else {
      io.out(`${step.preview}: the preview stopped:\n${verdict.message}`);
      // A stop is the deciders' to let through, once, by taking the rollback on: a preview this very run made
      // stops it, even for a decider, who reads what it would do first.
      if (fresh || !passable) {
        io.out(stopText(plan, r, freight.name));
        return 1;
      }
      passable = false;
    }
    io.out(`promoting ${freight.name} into ${step.update} (update of ${step.program})`);
    const promoted = orRefused(() => promote(project, step.update, { freight: freight.name }));
    if (promoted instanceof PermissionError) {
      io.out(
        `${step.update}: Kargo refused the update: only the environment's deciders may promote it by hand (${promoted.message})`,
      );
      io.out(stopText(plan, r, freight.name));
      return 1;
    }
    const updated = waitFor(project, step.update, promoted.name, freight.name, timing("update"));
    if (!updated.ok) {
      io.out(`${step.update}: the update did not verify, the rollback stops here:\n${updated.message}`);
      return 1;
    }
    io.out(`${step.update}: updated and verified against its own preview`);
  }
  io.out(
    `done: ${plan.environment} runs ${freight.name} in ${updates.join(", ")}. Auto-promotion of these stages is held until: npm run rollback -- ${plan.environment} --resume`,
  );
  return 0;
}

/** The verification's stop, as kargo/verification/verify.mjs words it, apart from any other failure. */
/** Who may ask for (and start) a rollback of the plan's environment, as a refusal names them. */
const requesters = (plan: RollbackPlan) =>
  [...new Set([...plan.deciders, ...plan.promoters])].join(", ") || "admins only";

const isStop = (message: string) => /\bstops on\b/.test(message);

function stopText(plan: RollbackPlan, r: RollbackRequest, freight: string): string {
  const who =
    plan.deciders.length > 0 ? plan.deciders.join(", ") : "an admin (the environment names no deciders)";
  return `To continue, a member of ${who} runs: ${continueCommand(r, freight)}`;
}

/** Where a step stands in the rollback recorded at `since`: updated already, or previewed (with its verdict). */
function stepState(project: string, step: RollbackStep, freight: string, since: number | undefined) {
  const none = { updated: false, previewed: undefined };
  if (since === undefined) return none;
  const promotedSince = (v: ReturnType<typeof getStage>) =>
    v.lastPromotion?.freight === freight && Date.parse(v.lastPromotion.finishedAt ?? "") >= since;
  const after = (v: ReturnType<typeof getStage>) =>
    promotedSince(v) && v.lastPromotion!.phase === "Succeeded" && v.freight === freight;
  const update = getStage(project, step.update);
  if (after(update) && update.verification?.phase === "Successful")
    return { updated: true, previewed: undefined };
  // An update of this rollback that failed changed the state its preview showed: preview again.
  if (promotedSince(update)) return none;
  const preview = getStage(project, step.preview);
  const v = preview.verification;
  // A passed or stopped preview of this rollback stands; any other failure is previewed again once fixed.
  if (!after(preview) || !v || !(v.phase === "Successful" || (v.phase === "Failed" && isStop(v.message))))
    return none;
  const previewed: Outcome =
    v.phase === "Successful"
      ? { ok: true, view: preview }
      : { ok: false, promotionFailed: false, view: preview, message: v.message };
  return { updated: false, previewed };
}

/**
 * When the rollback being continued began, from its record, which must be of the same Freight and stages: the
 * API server's time of the record's last write (its managedFields), which is the cluster's clock as Kargo's
 * promotion times are, whatever this machine's says; the record's `at` where Kargo shows none.
 */
function recordedStart(plan: RollbackPlan, freight: string, updates: string[]): number {
  const name = rollbackRequestName(plan.environment);
  const { data, writtenAt } = getConfigMap(plan.project, name);
  const stages = JSON.parse(data.stages ?? "[]") as string[];
  if (data.to !== freight || [...stages].sort().join() !== [...updates].sort().join())
    throw new Error(
      `--continue takes on the rollback ${name} records (to ${data.to ?? "nothing"}, stages ${stages.join(", ") || "none"}), not one to ${freight} of ${updates.join(", ")}: name the same --to and --program`,
    );
  return writtenAt ?? Date.parse(data.at ?? "");
}

/** A word of a command line as a shell reads it back. */
const quoted = (word: string) =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * The request rollback-<environment>: kind, to, from, stages, by, message, at (all strings). `by` and
 * `message` are as the requester states them (Kargo writes the request as itself); who promoted each stage is
 * what Kargo records of each promotion.
 */
export function recordData(
  plan: RollbackPlan,
  r: Pick<RollbackRequest, "kind" | "message">,
  to: string,
  from: Record<string, string>,
  by: string,
  at = new Date(),
): Record<string, string> {
  return {
    kind: r.kind,
    to,
    from: JSON.stringify(from),
    stages: JSON.stringify(plan.steps.map((s) => s.update)),
    by,
    message: r.message ?? "",
    at: at.toISOString().replace(/\.\d+Z$/, "Z"),
  };
}

function planText(
  plan: RollbackPlan,
  kind: string,
  freight: string,
  commit: string,
  from: Record<string, string>,
) {
  return [
    `${kind} of ${plan.environment} to ${freight} (commit ${commit}), dependents first:`,
    ...plan.steps.map(
      (s, i) =>
        `  ${i + 1}. ${s.program}: preview ${s.preview}, then update ${s.update} (runs ${from[s.update] || "nothing"} now)`,
    ),
  ].join("\n");
}

/**
 * --resume: lifts the auto-promotion holds the rollback's hand promotions left. Each held stage is promoted
 * with the Freight Kargo itself picks (`--warehouse`: akuity/kargo v1.11.2 pkg/cli/cmd/promote/promote.go),
 * a program's preview before its update (the update takes only what its preview previews), in a release's
 * order, dependencies first; such a promotion lifts the hold once it ends.
 */
export function resume(
  p: Pipeline,
  environment: string,
  pollMs: number,
  io: Console,
  dryRun: boolean,
  timeoutMs = 10 * 60_000 + durationMs(p.verification.updateTimeout),
): number {
  const plan = rollbackPlan(p, environment);
  for (const step of [...plan.steps].reverse()) {
    for (const stage of [step.preview, step.update]) {
      const view = getStage(plan.project, stage);
      if (view.holds.length === 0) {
        io.out(`${stage}: no auto-promotion hold`);
        continue;
      }
      const command = `kargo promote --project ${plan.project} --warehouse ${plan.warehouse} --stage ${stage}`;
      if (dryRun) {
        io.out(`would run: ${command}`);
        continue;
      }
      io.out(`${stage}: held; ${command}`);
      const { name, freight } = promote(plan.project, stage, { warehouse: plan.warehouse });
      const outcome = waitFor(plan.project, stage, name, freight, {
        pollMs,
        timeoutMs,
      });
      if (!outcome.ok) {
        // The hold went with the Promotion's end, whatever its verification said.
        io.out(`${stage}: ${outcome.message}`);
        io.out(
          outcome.ok === false && !outcome.promotionFailed && isStop(outcome.message)
            ? `A stop, as for any Freight: a decider approves it for the update stage (docs/operate.md, Approving a stopped preview), then runs: npm run rollback -- ${environment} --resume`
            : `Fix the cause, then lift the rest: npm run rollback -- ${environment} --resume`,
        );
        return 1;
      }
    }
  }
  if (!dryRun) io.out(`${environment}: no auto-promotion hold left in ${plan.steps.length} program(s)`);
  return 0;
}
