// What the rollback reads from and asks of Kargo, through its own CLI (`kargo`), as the person running it:
// Kargo's API server decides what that person may do (their Cognito groups' Kargo roles), so nothing here
// needs the Kubernetes API server to know them. The
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

/** What `act` returns, or the {@link PermissionError} Kargo refused it with; any other error is thrown. */
export function orRefused<T>(act: () => T): T | PermissionError {
  try {
    return act();
  } catch (err) {
    if (err instanceof PermissionError) return err;
    throw err;
  }
}

const install: Record<string, string> = {
  kargo:
    "install the Kargo CLI at the version of the platform (v1.11.2: github.com/akuity/kargo/releases) and put it on PATH",
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

type Json = Record<string, unknown> | undefined;
const obj = (v: unknown): Json =>
  typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * Who is signed in, as the kargo CLI's session names them: the claims of the OIDC ID token it holds (`kargo
 * config view --raw`; akuity/kargo v1.11.2 pkg/cli/config/config.go bearerToken), the token Kargo's API
 * server authorizes each of these calls with: its email, else its user name, else its subject. Read, not
 * verified: Kargo writes the request as itself, so its `by` is as the requester states it either way.
 */
export function signedIn(): string {
  const token = str(obj(kargo(["config", "view", "--raw", "-o", "json"]))?.bearerToken);
  const payload = token?.split(".")[1];
  let claims: Json;
  try {
    claims = payload ? obj(JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))) : undefined;
  } catch {
    claims = undefined;
  }
  const who = [claims?.email, claims?.preferred_username, claims?.["cognito:username"], claims?.sub]
    .map(str)
    .find((x) => x);
  if (!who)
    throw new SetupError(
      "kargo's session names nobody (no OIDC token with an email, user name or subject): run kargo login <Kargo's address> --sso, then again",
    );
  return who;
}

export interface ConfigMap {
  data: Record<string, string>;
  /** When the API server last wrote it (its managedFields), if Kargo shows them. */
  writtenAt?: number;
}

const configMapOf = (v: unknown): ConfigMap => {
  const cm = obj(v);
  const data = Object.fromEntries(
    Object.entries(obj(cm?.data) ?? {}).flatMap(([k, x]) => (typeof x === "string" ? [[k, x]] : [])),
  );
  const fields = obj(cm?.metadata)?.managedFields;
  const times = (Array.isArray(fields) ? fields : [])
    .map((f) => Date.parse(str(obj(f)?.time) ?? ""))
    .filter((t) => t > 0);
  return { data, writtenAt: times.length > 0 ? Math.max(...times) : undefined };
};

/** `kargo get configmap`: a ConfigMap of the project, through Kargo's API (pkg/cli/cmd/get/configmaps.go). */
export const getConfigMap = (project: string, name: string): ConfigMap =>
  configMapOf(kargo(["get", "configmap", name, "--project", project, "-o", "json"]));

/**
 * The `kargo update configmap` that sets `data` on an existing ConfigMap of the project: Kargo merges it into
 * what the ConfigMap holds and writes it as itself, once RBAC lets one of the person's Kargo role
 * ServiceAccounts get and update it by name (akuity/kargo v1.11.2 pkg/cli/cmd/update/configmaps.go,
 * pkg/server/patch_config_map_v1alpha1.go). It trims each value.
 */
export const updateConfigMapArgs = (project: string, name: string, data: Record<string, string>) => [
  "update",
  "configmap",
  name,
  "--project",
  project,
  ...Object.entries(data).flatMap(([k, v]) => ["--set", `${k}=${v}`]),
  "-o",
  "json",
];

export const updateConfigMap = (project: string, name: string, data: Record<string, string>): ConfigMap =>
  configMapOf(kargo(updateConfigMapArgs(project, name, data)));

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
