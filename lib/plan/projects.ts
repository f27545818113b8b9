import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { planProgram, type ProgramPlan } from "./harness";
import type { UpstreamStack } from "./mocks";

export const repoRoot = path.resolve(__dirname, "..", "..");

/** The chained projects in deployment order; each reads the one before it through a StackReference. */
export const projectOrder = ["cluster", "cluster-setup", "kargo"] as const;
export type ProjectName = (typeof projectOrder)[number];

/** Secret config the plan supplies when a stack file cannot (it never holds plaintext secrets). */
export const PLACEHOLDER_SECRET = "plan-placeholder-secret-value";

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

  let stackYaml: { config?: Record<string, unknown> };
  try {
    stackYaml = YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
  } catch (err) {
    throw new Error(`cannot read stack config ${file}: ${(err as Error).message}`);
  }
  for (const [key, value] of Object.entries(stackYaml.config ?? {})) {
    const isEncrypted = typeof value === "object" && value !== null && "secure" in value;
    values[qualify(key)] = isEncrypted ? PLACEHOLDER_SECRET : value;
    if (isEncrypted) secretKeys.add(qualify(key));
  }
  for (const key of declaredSecrets) {
    values[key] ??= PLACEHOLDER_SECRET;
    secretKeys.add(key);
  }
  return { stack, values, secretKeys: [...secretKeys] };
}

export interface PlanRequest {
  /** Plan the projects up to and including this one (default: all). */
  project?: ProjectName;
  /** Stack config file for the last planned project instead of its `Pulumi.example.yaml`. */
  configFile?: string;
  /** Config overrides (`ns:key` → value) for the last planned project, applied over the stack file. */
  overrides?: Record<string, unknown>;
}

/**
 * Plans of projects run with their example config and nothing else, by project: a program under the mock
 * runtime is deterministic, so within one process each is planned once however many plans build on it.
 */
const examplePlans = new Map<ProjectName, ProgramPlan>();

/**
 * Plans the chain up to `project`, feeding each project's planned outputs to the StackReferences of the
 * next. Upstream projects always use their example stack config.
 */
export async function planChain(request: PlanRequest = {}): Promise<ProgramPlan[]> {
  const last = request.project ?? projectOrder[projectOrder.length - 1]!;
  const plans: ProgramPlan[] = [];
  const upstream: Record<string, UpstreamStack> = {};
  for (const project of projectOrder.slice(0, projectOrder.indexOf(last) + 1)) {
    const isLast = project === last;
    const isExample =
      !isLast || (request.configFile === undefined && Object.keys(request.overrides ?? {}).length === 0);
    let plan = isExample ? examplePlans.get(project) : undefined;
    if (!plan) {
      const config = readStackConfig(project, isLast ? request.configFile : undefined);
      plan = await planProgram({
        projectDir: path.join(repoRoot, project),
        project,
        stack: config.stack,
        config: { ...config.values, ...(isLast ? request.overrides : {}) },
        secretKeys: config.secretKeys,
        upstream,
      });
      if (isExample) examplePlans.set(project, plan);
    }
    upstream[project] = plan.upstream;
    // A copy: callers may change what they get without changing what later plans build on.
    plans.push(structuredClone(plan));
  }
  return plans;
}
