import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { inputProblems, orderProblems, unusedEnvironmentProblems, type CheckOptions } from "./checks";

/** Pulumi Cloud's own API (Pulumi Cloud REST API docs, "Endpoint URL"). */
export const PULUMI_CLOUD_API = "https://api.pulumi.com";

/** Longest `metadata.name` a PKO Stack may have (a CEL rule in its CRD). */
export const MAX_STACK_NAME = 42;

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const quantity = z
  .string()
  .regex(/^\d+(m|Mi|Gi)?$/, 'must be a Kubernetes quantity such as "250m" or "640Mi"');
const duration = z.string().regex(/^\d+(s|m|h)$/, 'must be a duration such as "10s", "5m" or "1h"');

const environment = z.strictObject({
  /** Pulumi stack of the promoted program this environment deploys (`<org>/<project>/<pulumiStack>`). */
  pulumiStack: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be a Pulumi stack name"),
  /** Destroy the environment's resources when its update Stack is deleted. Never for long-lived ones. */
  ephemeral: z.boolean().default(false),
  /**
   * A preview that would delete or replace anything fails verification, so nothing auto-promotes into this
   * environment's update stage until a destructive-change approver approves the Freight for it. Default:
   * protected unless `ephemeral`.
   */
  protected: z.boolean().optional(),
  /** Cognito groups whose members may let a destructive change through to a protected environment. */
  destructiveChangeApprovers: z.array(z.string().min(1)).default([]),
});

const stageBase = {
  name: z.string(),
  /** Where Freight comes from: the Warehouse, or upstream stages. */
  from: z.union([
    z.literal("warehouse"),
    z.array(z.string()).min(1, "must name at least one upstream stage"),
  ]),
  /** With several upstream stages: Freight must have passed all of them (true) or any one (false). */
  requireAll: z.boolean().default(false),
};

const stage = z.discriminatedUnion("kind", [
  /** A person with one of `approvers` promotes Freight into it; never automatic. */
  z.strictObject({ ...stageBase, kind: z.literal("gate"), approvers: z.array(z.string().min(1)) }),
  /** `pulumi preview` of an environment's stack with the Freight's commit. */
  z.strictObject({ ...stageBase, kind: z.literal("preview"), environment: z.string() }),
  /** `pulumi up` of an environment's stack with the Freight's commit. */
  z.strictObject({ ...stageBase, kind: z.literal("update"), environment: z.string() }),
]);

export const pipelineSchema = z.strictObject({
  /** Kargo project, and so the namespace its objects live in. */
  project: z.string().regex(dnsLabel, "must be a DNS label"),
  /** The promoted program's repository: the Warehouse subscribes to `branch`; promotions push only `stage/*`. */
  source: z.strictObject({
    repoURL: z.string().regex(/^https:\/\/[^\s/@]+\/\S+$/, "must be an HTTPS git URL"),
    branch: z.string().min(1, 'must name the branch people merge to, such as "main"'),
    /** Folder of the promoted program in the repository ("." for the root). */
    programDir: z.string().default("."),
    /** Files whose changes become Freight: exactly the promoted program's. */
    includePaths: z.array(z.string().min(1)).min(1, "must list the promoted program's files"),
    excludePaths: z.array(z.string().min(1)).default([]),
  }),
  /** Where the promoted program's stacks live in Pulumi Cloud. */
  pulumi: z.strictObject({
    organization: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be a Pulumi organization name"),
    project: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be a Pulumi project name"),
    /**
     * Pulumi Cloud's API, which verification sends the Pulumi access token to on every measurement. Only
     * Pulumi Cloud's own address is accepted here (checks.ts); a self-hosted one goes in selfHostedApiUrl.
     */
    apiUrl: z
      .string()
      .url(
        "must be a URL; allowed: https://api.pulumi.com (a self-hosted API goes in pulumi.selfHostedApiUrl)",
      )
      .default(PULUMI_CLOUD_API),
    /**
     * The API of a self-hosted Pulumi Cloud (https://host[/path]), named explicitly: verification then sends
     * the token there instead of to Pulumi Cloud.
     */
    selfHostedApiUrl: z.string().optional(),
    /** Pulumi Cloud's web console, where the Kargo UI links every environment stage to its stack. */
    consoleUrl: z.string().url().default("https://app.pulumi.com"),
  }),
  /** How the PKO Stack manifests in `stacks/` run: must match the cluster-setup project's outputs. */
  stacks: z.strictObject({
    dir: z.string().default("stacks"),
    namespace: z.string().regex(dnsLabel, "must be a DNS label"),
    serviceAccountName: z.string().regex(dnsLabel, "must be a DNS label"),
    accessTokenSecret: z.string().regex(dnsLabel, "must be a DNS label"),
    gitCredentialsSecret: z.string().regex(dnsLabel, "must be a DNS label"),
    /** Pinned workspace image (the Pulumi CLI the operator runs): a version tag or a digest, checked by checks.ts. */
    workspaceImage: z.string().min(1, "must be an image with a pinned tag or digest"),
    /**
     * Each workspace pod (`pulumi preview`/`up` with the program's providers). PKO defaults to 100m/64Mi and
     * caps its agent's memory at the request, far too little for the AWS provider.
     */
    workspaceResources: z.strictObject({
      requests: z.strictObject({ cpu: quantity, memory: quantity }),
      limits: z.strictObject({ memory: quantity }),
    }),
  }),
  environments: z.record(z.string(), environment),
  stages: z.array(stage),
  verification: z.strictObject({
    /** Wait before the first look at Pulumi Cloud. */
    initialDelay: duration.default("10s"),
    /** Time between looks: the most a stage waits beyond its Pulumi operation. */
    interval: duration.default("10s"),
    /** Give up on a preview or an update after this long. */
    previewTimeout: duration.default("15m"),
    updateTimeout: duration.default("45m"),
    /**
     * Operations fetched per look, newest first; the newest for the promoted commit among them decides.
     * Each measurement stores the whole answer in the AnalysisRun (about 1.3 KB per operation), so ask for
     * no more than the operations that may land on the stack between the stage's own and its verification
     * (pull-request previews of the same stack count too).
     */
    pageSize: z.number().int().min(1).max(100).default(10),
  }),
});

export type PipelineInput = z.input<typeof pipelineSchema>;
export type Pipeline = z.output<typeof pipelineSchema>;
export type Stage = Pipeline["stages"][number];
export type GateStage = Extract<Stage, { kind: "gate" }>;
export type EnvironmentStage = Exclude<Stage, GateStage>;

/**
 * Raised for a pipeline definition that cannot work, naming each stage and its problem. A `RunError`, so
 * `pulumi up` prints the message alone.
 */
export class PipelineError extends pulumi.RunError {
  constructor(readonly problems: string[]) {
    super(`Invalid pipeline definition:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "PipelineError";
  }
}

/** Name of the PKO Stack (and of the Argo CD Application and `stacks/` manifest) of a stage. */
export const stackObjectName = (pipeline: Pick<Pipeline, "project">, stageName: string) =>
  `${pipeline.project}-${stageName}`;

const upstreamOf = (s: Stage): string[] => (s.from === "warehouse" ? [] : s.from);

/** Every stage upstream of `name`, transitively. */
export function ancestors(stages: Stage[], name: string): Set<string> {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const seen = new Set<string>();
  const visit = (n: string) => {
    for (const up of upstreamOf(byName.get(n)!)) {
      if (byName.has(up) && !seen.has(up)) {
        seen.add(up);
        visit(up);
      }
    }
  };
  visit(name);
  return seen;
}

/**
 * Validates a pipeline definition and fills in defaults. Throws a {@link PipelineError} naming every stage
 * and what is wrong with it; run it before registering any resource.
 */
export function validatePipeline(input: unknown, options: CheckOptions = {}): Pipeline {
  // Before zod, which drops an own "__proto__" key without a word.
  const nameProblems = environmentNameProblems(input);
  if (nameProblems.length > 0) throw new PipelineError(nameProblems);
  const parsed = pipelineSchema.safeParse(input);
  if (!parsed.success) {
    throw new PipelineError(
      parsed.error.issues.map((issue) => {
        const [first, index, ...rest] = issue.path.map(String);
        const stageName =
          first === "stages" ? (input as PipelineInput).stages?.[Number(index)]?.name : undefined;
        const where =
          first === "stages" && stageName
            ? `stage "${stageName}"${rest.length ? ` (${rest.join(".")})` : ""}`
            : issue.path.join(".") || "pipeline";
        return `${where}: ${issue.message}`;
      }),
    );
  }
  const pipeline = parsed.data;
  const problems: string[] = [];
  const { stages } = pipeline;
  if (stages.length === 0)
    throw new PipelineError(["pipeline: has no stages; it needs at least a gate and an update stage"]);

  const names = new Map<string, number>();
  for (const s of stages) names.set(s.name, (names.get(s.name) ?? 0) + 1);
  for (const [name, count] of names) {
    if (count > 1) problems.push(`stage "${name}": the name is used by ${count} stages`);
  }

  for (const s of stages) {
    const at = `stage "${s.name}"`;
    if (!dnsLabel.test(s.name)) {
      problems.push(`${at}: the name must be a DNS label (lower-case letters, digits and '-', at most 63)`);
    }
    const stackName = stackObjectName(pipeline, s.name);
    if (stackName.length > MAX_STACK_NAME) {
      problems.push(
        `${at}: its PKO Stack would be named "${stackName}" (${stackName.length} characters); PKO allows ${MAX_STACK_NAME}. Shorten the stage or project name`,
      );
    }
    for (const up of upstreamOf(s)) {
      if (!names.has(up)) problems.push(`${at}: upstream stage "${up}" does not exist`);
      if (up === s.name) problems.push(`${at}: lists itself as upstream`);
    }
    if (s.kind === "gate" && s.approvers.length === 0) {
      problems.push(`${at}: a gate needs at least one approver group`);
    }
    if (s.kind !== "gate") {
      if (!Object.hasOwn(pipeline.environments, s.environment)) {
        problems.push(
          `${at}: environment "${s.environment}" is not defined; defined environments: ${Object.keys(pipeline.environments).join(", ") || "none"}`,
        );
      }
    }
    if (s.requireAll && upstreamOf(s).length < 2) {
      problems.push(`${at}: requireAll needs at least two upstream stages`);
    }
  }

  const updates = stages.filter((s) => s.kind === "update");
  for (const env of new Set(updates.map((s) => s.environment))) {
    const same = updates.filter((s) => s.environment === env).map((s) => s.name);
    if (same.length > 1)
      problems.push(`stages ${same.map((n) => `"${n}"`).join(", ")}: update the same environment "${env}"`);
  }
  for (const s of stages.filter((s): s is EnvironmentStage => s.kind === "preview")) {
    if (!updates.some((u) => u.environment === s.environment)) {
      problems.push(
        `stage "${s.name}": previews environment "${s.environment}", which no update stage deploys`,
      );
    }
  }
  problems.push(...inputProblems(pipeline, options));
  if (problems.length > 0) throw new PipelineError(problems);

  // Graph checks need resolvable upstreams, so they come after the checks above.
  const cycle = findCycle(stages);
  if (cycle) problems.push(`stages ${cycle.map((n) => `"${n}"`).join(" -> ")}: form a cycle`);
  const reachable = new Set(stages.filter((s) => s.from === "warehouse").map((s) => s.name));
  for (let grew = true; grew;) {
    grew = false;
    for (const s of stages) {
      if (!reachable.has(s.name) && upstreamOf(s).some((up) => reachable.has(up))) {
        reachable.add(s.name);
        grew = true;
      }
    }
  }
  if (!cycle) problems.push(...orderProblems(stages));
  problems.push(...unusedEnvironmentProblems(pipeline));
  for (const s of stages) {
    if (!reachable.has(s.name)) problems.push(`stage "${s.name}": is not reachable from the Warehouse`);
    if (s.kind === "update" && !cycle) {
      const before = ancestors(stages, s.name);
      if (!stages.some((g) => g.kind === "gate" && before.has(g.name))) {
        problems.push(`stage "${s.name}": runs pulumi up with no approval gate upstream`);
      }
    }
  }
  if (problems.length === 0) problems.push(...destructiveChangeProblems(pipeline));
  if (problems.length > 0) throw new PipelineError(problems);
  return pipeline;
}

/**
 * Environment names, read as the definition's own keys: each becomes part of Kubernetes names (the
 * ServiceAccount `<stacks.serviceAccountName>-<environment>` in cluster-setup, whose `stackEnvironments` are
 * DNS labels), so it must be a DNS label. That also refuses every name that is a JavaScript builtin in
 * disguise (`__proto__`, `toString`, `hasOwnProperty`); a DNS label such as `constructor` is an ordinary name,
 * and every lookup by name (Object.hasOwn, Maps) treats it as one.
 */
export function environmentNameProblems(input: unknown): string[] {
  if (typeof input !== "object" || input === null) return [];
  const environments = (input as { environments?: unknown }).environments;
  if (typeof environments !== "object" || environments === null || Array.isArray(environments)) return [];
  return Object.keys(environments)
    .filter((name) => !dnsLabel.test(name))
    .map(
      (name) =>
        `environments.${name}: "${name}" is not a DNS label; allowed: 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit (it names the environment's ServiceAccount)`,
    );
}

/** Whether destructive changes to an environment stop at its preview (protected unless ephemeral). */
export const isProtected = (env: Pipeline["environments"][string]): boolean =>
  env.protected ?? !env.ephemeral;

/** A protected environment needs a preview that can stop a destructive change, and someone who may let it through. */
function destructiveChangeProblems(pipeline: Pipeline): string[] {
  const problems: string[] = [];
  for (const [name, env] of Object.entries(pipeline.environments)) {
    const at = `environment "${name}"`;
    const previewed = pipeline.stages.some((s) => s.kind === "preview" && s.environment === name);
    const updated = pipeline.stages.some((s) => s.kind === "update" && s.environment === name);
    if (!isProtected(env)) continue;
    if (updated && !previewed)
      problems.push(
        `${at}: is protected, but no preview stage previews it, so nothing would stop a destructive change; add a preview stage or set protected: false`,
      );
    if (updated && env.destructiveChangeApprovers.length === 0)
      problems.push(
        `${at}: is protected; destructiveChangeApprovers must name the Cognito groups that may approve its deletes and replaces (or set protected: false${env.ephemeral ? "" : " or ephemeral: true"})`,
      );
  }
  return problems;
}

function findCycle(stages: Stage[]): string[] | undefined {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const state = new Map<string, "visiting" | "done">();
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === "done") return undefined;
    if (state.get(name) === "visiting") return [...path.slice(path.indexOf(name)), name];
    state.set(name, "visiting");
    path.push(name);
    for (const up of upstreamOf(byName.get(name)!)) {
      const found = visit(up);
      if (found) return found;
    }
    path.pop();
    state.set(name, "done");
    return undefined;
  };
  for (const s of stages) {
    const found = visit(s.name);
    if (found) return found.reverse();
  }
  return undefined;
}

/** Stages ordered so that every stage comes after its upstream stages (the pipeline must be acyclic). */
export function topologicalOrder(stages: Stage[]): Stage[] {
  const ordered: Stage[] = [];
  const placed = new Set<string>();
  while (ordered.length < stages.length) {
    const ready = stages.filter((s) => !placed.has(s.name) && upstreamOf(s).every((up) => placed.has(up)));
    if (ready.length === 0) throw new Error("pipeline has a cycle");
    for (const s of ready) {
      ordered.push(s);
      placed.add(s.name);
    }
  }
  return ordered;
}

export { upstreamOf };
