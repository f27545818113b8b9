// What the rollback reads from and asks of Kargo and Kubernetes, through their own CLIs (`kargo`, `kubectl`),
// as the person running it: Kargo's API server and the API server decide what that person may do. The
// JSON read is Kargo v1.11.2's (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go StageStatus:
// freightHistory[0] is the current Freight collection, its verificationHistory[0] the newest verification;
// lastPromotion; autoPromotionHolds; api/v1alpha1/freight_types.go: commits, alias).
import { spawnSync } from "node:child_process";

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Thrown for what the person must set up first (a missing CLI, no login): the CLI exits 2. */
export class SetupError extends Error {}

/** Thrown when Kargo refuses a call for lack of permission (HTTP 403 from its API server). */
export class PermissionError extends Error {}

const install: Record<string, string> = {
  kargo:
    "install the Kargo CLI at the version of the platform (v1.11.2: github.com/akuity/kargo/releases) and put it on PATH",
  kubectl: "install kubectl and put it on PATH",
};

/** Runs a CLI; a missing one is a {@link SetupError} saying what to install. */
export function run(command: string, args: string[], input?: string): Ran {
  const r = spawnSync(command, args, { encoding: "utf8", input, maxBuffer: 64 << 20 });
  if (r.error) {
    if ((r.error as NodeJS.ErrnoException).code === "ENOENT")
      throw new SetupError(`${command} is not on PATH: ${install[command] ?? `install ${command}`}`);
    throw new Error(`${command} did not run: ${r.error.message}`);
  }
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.trim() };
}

/** The kargo CLI's message when it has no session (akuity/kargo v1.11.2 pkg/cli/client/client.go). */
const notLoggedIn = /not logged in|kargo login|KARGO_API_ADDRESS/i;
/** A 403 from Kargo's API server: the CLI prints the HTTP status (pkg/cli/client/client.go APIError). */
const forbidden = /\b403\b|forbidden|permission denied|permission_denied/i;

/** Runs `kargo` and parses its JSON; no session is a {@link SetupError}, a 403 a {@link PermissionError}. */
export function kargo(args: string[]): unknown {
  const r = run("kargo", args);
  if (r.status !== 0) {
    const said = r.stderr || r.stdout.trim();
    if (notLoggedIn.test(said))
      throw new SetupError(
        `kargo has no session: run kargo login <Kargo's address> --sso, then again (kargo: ${said})`,
      );
    if (forbidden.test(said)) throw new PermissionError(`kargo ${args.join(" ")}: ${said}`);
    throw new Error(`kargo ${args.join(" ")} failed: ${said}`);
  }
  try {
    return JSON.parse(r.stdout) as unknown;
  } catch {
    throw new Error(`kargo ${args.join(" ")} did not answer JSON: ${r.stdout.slice(0, 200)}`);
  }
}

/** Runs `kubectl`; a failure to reach the cluster is a {@link SetupError} saying how to set it up. */
export function kubectl(args: string[], input?: string): string {
  const r = run("kubectl", args, input);
  if (r.status !== 0) {
    if (/Unauthorized|no configuration|refused|current-context|credentials|logged in/i.test(r.stderr))
      throw new SetupError(
        `kubectl cannot reach the cluster as you: run aws eks update-kubeconfig --name <cluster> (docs/deploy.md), then again (kubectl: ${r.stderr})`,
      );
    throw new Error(`kubectl ${args.join(" ")} failed: ${r.stderr}`);
  }
  return r.stdout;
}

type Json = Record<string, unknown> | undefined;
const obj = (v: unknown): Json =>
  typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

export interface Freight {
  name: string;
  alias?: string;
  commit: string;
}

/** A Freight by name or alias: Kargo's API takes either (akuity/kargo v1.11.2 pkg/server/get_freight_v1alpha1.go). */
export function getFreight(project: string, nameOrAlias: string): Freight {
  const f = obj(kargo(["get", "freight", "--project", project, "--name", nameOrAlias, "-o", "json"]));
  const name = str(obj(f?.metadata)?.name);
  const commits = f?.commits;
  const commit = Array.isArray(commits) ? str(obj(commits[0])?.id) : undefined;
  if (!name || !commit) throw new Error(`Freight "${nameOrAlias}" of project ${project} holds no commit`);
  return { name, alias: str(f?.alias), commit };
}

export interface StageView {
  /** The Freight the stage runs now, if any. */
  freight?: string;
  /** Its newest verification. */
  verification?: { phase: string; message: string; startTime?: string };
  lastPromotion?: { name: string; freight?: string; phase?: string; message: string; finishedAt?: string };
  holds: string[];
}

export function getStage(project: string, stage: string): StageView {
  const status = obj(obj(kargo(["get", "stage", stage, "--project", project, "-o", "json"]))?.status);
  const current = obj(Array.isArray(status?.freightHistory) ? status.freightHistory[0] : undefined);
  const items = Object.values(obj(current?.items) ?? {}).map(obj);
  const verifications = current?.verificationHistory;
  const v = obj(Array.isArray(verifications) ? verifications[0] : undefined);
  const last = obj(status?.lastPromotion);
  const lastStatus = obj(last?.status);
  return {
    freight: str(items[0]?.name),
    verification: v && {
      phase: str(v.phase) ?? "Pending",
      message: str(v.message) ?? "",
      startTime: str(v.startTime),
    },
    lastPromotion: last && {
      name: str(last.name) ?? "",
      freight: str(obj(last.freight)?.name),
      phase: str(lastStatus?.phase),
      message: str(lastStatus?.message) ?? "",
      finishedAt: str(last.finishedAt) ?? str(lastStatus?.finishedAt),
    },
    holds: Object.keys(obj(status?.autoPromotionHolds) ?? {}),
  };
}

/** akuity/kargo v1.11.2 api/v1alpha1/stage_types.go VerificationPhase.IsTerminal. */
export const verificationEnded = (phase: string | undefined) =>
  ["Successful", "Failed", "Error", "Aborted", "Inconclusive"].includes(phase ?? "");
/** api/v1alpha1/promotion_types.go: the phases a Promotion ends in. */
export const promotionEnded = (phase: string | undefined) =>
  ["Succeeded", "Failed", "Errored", "Aborted"].includes(phase ?? "");

/** `kargo promote`; the Promotion's name and the Freight it promotes (Kargo's pick, with a Warehouse). */
export function promote(
  project: string,
  stage: string,
  how: { freight: string } | { warehouse: string },
): { name: string; freight: string } {
  const which = "freight" in how ? ["--freight", how.freight] : ["--warehouse", how.warehouse];
  const promotion = obj(kargo(["promote", "--project", project, ...which, "--stage", stage, "-o", "json"]));
  const name = str(obj(promotion?.metadata)?.name);
  const freight = str(obj(promotion?.spec)?.freight);
  if (!name || !freight) throw new Error(`kargo promote into ${stage} answered no Promotion`);
  return { name, freight };
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

export type Outcome =
  | { ok: true; view: StageView }
  | { ok: false; promotionFailed: true; message: string }
  | { ok: false; promotionFailed: false; view: StageView; message: string };

/**
 * Polls a stage until `promotion` has ended and, when it succeeded, until the stage runs `freight` with a
 * verification started after it that has ended. The stage's history keeps older verifications, so one from
 * before this promotion never counts.
 */
export function waitFor(
  project: string,
  stage: string,
  promotion: string,
  freight: string,
  timing: { pollMs: number; timeoutMs: number },
): Outcome {
  const deadline = Date.now() + timing.timeoutMs;
  for (;;) {
    const view = getStage(project, stage);
    const last = view.lastPromotion;
    if (last?.name === promotion && promotionEnded(last.phase)) {
      if (last.phase !== "Succeeded")
        return { ok: false, promotionFailed: true, message: `${last.phase}: ${last.message}` };
      const v = view.verification;
      const fresh =
        !last.finishedAt || !v?.startTime || Date.parse(v.startTime) >= Date.parse(last.finishedAt) - 1000;
      if (view.freight === freight && fresh && verificationEnded(v?.phase))
        return v!.phase === "Successful"
          ? { ok: true, view }
          : { ok: false, promotionFailed: false, view, message: v!.message };
    }
    if (Date.now() > deadline)
      throw new Error(
        `${stage}: promotion ${promotion} of ${freight} not verified after ${Math.round(timing.timeoutMs / 1000)}s; kargo get stage ${stage} --project ${project} shows where it is`,
      );
    sleep(timing.pollMs);
  }
}
