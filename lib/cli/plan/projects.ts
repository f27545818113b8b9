import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { planProgram, type ProgramPlan } from "./harness";
import type { UpstreamStack } from "./mocks";

export const repoRoot = path.resolve(__dirname, "..", "..", "..");

import { projectOrder, type ProjectName } from "./options";

export { projectOrder, type ProjectName };

/** Secret config the plan supplies when a stack file cannot (it never holds plaintext secrets). */
export const PLACEHOLDER_SECRET = "plan-placeholder-secret-value";

/**
 * What an encrypted key of a stack file stands for in a plan, where a test needs a value of a given shape (an
 * https URL, a token): `PLAN_SECRET_VALUES`, a JSON object of `<namespace>:<key>` to value. Still secret.
 */
function planSecrets(): Record<string, unknown> {
  const raw = process.env.PLAN_SECRET_VALUES;
  if (!raw) return {};
  const parsed: unknown = JSON.parse(raw);
  if (!isMap(parsed))
    throw new Error("PLAN_SECRET_VALUES must be a JSON object of <namespace>:<key> to value");
  return parsed;
}

interface ConfigDeclaration {
  type?: string;
  default?: unknown;
  secret?: boolean;
  value?: unknown;
}

export interface StackConfig {
  stack: string;
  values: Record<string, unknown>;
  secretKeys: string[];
}

const isDeclaration = (v: unknown): v is ConfigDeclaration =>
  typeof v === "object" && v !== null && !Array.isArray(v) && ("type" in v || "default" in v || "value" in v);

/**
 * The configuration the Pulumi CLI would hand the program for a stack file: the stack file's values over the
 * project's declared defaults. Encrypted (`secure:`) values and declared secrets the file leaves out get a
 * placeholder, marked secret.
 */
export function readStackConfig(project: ProjectName, stackFile?: string): StackConfig {
  const projectDir = path.join(repoRoot, project);
  const file = stackFile ?? path.join(projectDir, "Pulumi.example.yaml");
  const stack = path
    .basename(file)
    .replace(/^Pulumi\./, "")
    .replace(/\.ya?ml$/, "");
  const qualify = (key: string) => (key.includes(":") ? key : `${project}:${key}`);

  const projectYaml = YAML.parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8")) ?? {};
  const values: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  const declaredSecrets = new Set<string>();
  for (const [key, decl] of Object.entries<unknown>(projectYaml.config ?? {})) {
    if (!isDeclaration(decl)) {
      values[qualify(key)] = decl;
      continue;
    }
    if (decl.secret) declaredSecrets.add(qualify(key));
    const value = decl.value ?? decl.default;
    if (value !== undefined) values[qualify(key)] = value;
  }

  const stackConfig = readStackFile(file);
  for (const [key, value] of Object.entries(stackConfig)) {
    const isEncrypted = typeof value === "object" && value !== null && "secure" in value;
    // Like the CLI: a key the project declares secret is refused in plaintext.
    if (declaredSecrets.has(qualify(key)) && !isEncrypted) {
      throw new StackFileError(
        file,
        `${qualify(key)} must be encrypted as it's secret; set it with pulumi config set --secret ${key.replace(/^[^:]*:/, "")} <value>`,
      );
    }
    values[qualify(key)] = isEncrypted ? (planSecrets()[qualify(key)] ?? PLACEHOLDER_SECRET) : value;
    if (isEncrypted) secretKeys.add(qualify(key));
  }
  for (const key of declaredSecrets) {
    values[key] ??= PLACEHOLDER_SECRET;
    secretKeys.add(key);
  }
  // Like the CLI: a key of the project's namespace declared without a default must be set (pulumi/pulumi
  // v3.259.0 pkg/workspace/config.go, ValidateStackConfigAndApplyProjectConfig).
  const missing = Object.keys(projectYaml.config ?? {})
    .map(qualify)
    .filter((key) => key.startsWith(`${project}:`) && values[key] === undefined)
    .sort();
  if (missing.length > 0)
    throw new StackFileError(
      file,
      `Stack '${stack}' is missing configuration ${missing.map((k) => `'${k}'`).join(", ")}`,
    );
  return { stack, values, secretKeys: [...secretKeys] };
}

/** A stack file the Pulumi CLI could not use; raised before any program runs. */
export class StackFileError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`stack config ${file}: ${problem}`);
    this.name = "StackFileError";
  }
}

const kindOf = (v: unknown) => (v === null ? "empty" : Array.isArray(v) ? "a list" : `a ${typeof v}`);
const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The `config:` map of a stack file, after checking the file has the shape the CLI reads. */
function readStackFile(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = YAML.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    throw new StackFileError(file, `cannot be read as YAML: ${(err as Error).message}`);
  }
  const shape = "a stack file is a map with a `config:` map of <namespace>:<key>: <value>";
  if (parsed === null || parsed === undefined) throw new StackFileError(file, `is empty; ${shape}`);
  if (!isMap(parsed)) throw new StackFileError(file, `is ${kindOf(parsed)}, not a map; ${shape}`);
  const unknown = Object.keys(parsed).filter(
    (k) => !["config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment"].includes(k),
  );
  if (unknown.length > 0)
    throw new StackFileError(file, `has unknown top-level key(s) ${unknown.join(", ")}; ${shape}`);
  if (parsed.config === undefined || parsed.config === null) return {};
  if (!isMap(parsed.config))
    throw new StackFileError(file, `its config is ${kindOf(parsed.config)}, not a map; ${shape}`);
  return parsed.config;
}

export interface PlanRequest {
  /** Plan the projects up to and including this one (default: all). */
  project?: ProjectName;
  /** Stack config file for the last planned project instead of its `Pulumi.example.yaml`. */
  configFile?: string;
  /**
   * Config overrides (`ns:key` → value), applied over the stack file of the project the namespace names when
   * the chain plans it (`cluster-setup:notifyWebhookUrl` with the chain up to kargo: cluster-setup's), else
   * over the last planned project's.
   */
  overrides?: Record<string, unknown>;
  /** Keys to hand over as secrets, as `pulumi config set --secret` would, to the project `overrides` says. */
  secretKeys?: string[];
  /** Show the last planned project's secret values in its plan instead of `[secret]` (tests that read them). */
  revealSecrets?: boolean;
}

/**
 * Plans of projects run with their example config and nothing else, by project: a program under the mock
 * runtime is deterministic, so within one process each is planned once however many plans build on it.
 */
const examplePlans = new Map<ProjectName, ProgramPlan>();

/**
 * Plans the chain up to `project`, feeding each project's planned outputs to the StackReferences of the
 * next. Upstream projects use their example stack config, with the overrides in their own namespace.
 */
export async function planChain(request: PlanRequest = {}): Promise<ProgramPlan[]> {
  const last = request.project ?? projectOrder[projectOrder.length - 1]!;
  const chain = projectOrder.slice(0, projectOrder.indexOf(last) + 1);
  /** The project of the chain a config key goes to: the one its namespace names, else the last. */
  const ownerOf = (key: string) => chain.find((p) => key.startsWith(`${p}:`)) ?? last;
  const plans: ProgramPlan[] = [];
  const upstream: Record<string, UpstreamStack> = {};
  // Once a project is planned with anything but its example config, every plan after it reads that one.
  let upstreamIsExample = true;
  for (const project of chain) {
    const isLast = project === last;
    const overrides = Object.fromEntries(
      Object.entries(request.overrides ?? {}).filter(([key]) => ownerOf(key) === project),
    );
    const secretKeys = (request.secretKeys ?? []).filter((key) => ownerOf(key) === project);
    const isExample: boolean =
      upstreamIsExample &&
      (!isLast || (request.configFile === undefined && request.revealSecrets !== true)) &&
      Object.keys(overrides).length === 0 &&
      secretKeys.length === 0;
    let plan = isExample ? examplePlans.get(project) : undefined;
    if (!plan) {
      const config = readStackConfig(project, isLast ? request.configFile : undefined);
      plan = await planProgram({
        projectDir: path.join(repoRoot, project),
        project,
        stack: config.stack,
        config: { ...config.values, ...overrides },
        secretKeys: [...config.secretKeys, ...secretKeys],
        upstream,
        revealSecrets: isLast && request.revealSecrets === true,
      });
      if (isExample) examplePlans.set(project, plan);
    }
    upstreamIsExample = isExample;
    upstream[project] = plan.upstream;
    // A copy: callers may change what they get without changing what later plans build on.
    plans.push(structuredClone(plan));
  }
  return plans;
}
