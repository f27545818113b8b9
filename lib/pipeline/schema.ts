// The bottom of the pipeline library: the shape of a pipeline definition (its zod schema, with defaults), the
// types everything above reads, and the error every check raises. It imports nothing of the pipeline but
// drift-interval.ts, which imports nothing, so any file may import it.
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { driftInterval } from "./drift-interval";

export { DRIFT_OFF, durationSeconds } from "./drift-interval";

/** Pulumi Cloud's own API (Pulumi Cloud REST API docs, "Endpoint URL"). */
export const PULUMI_CLOUD_API = "https://api.pulumi.com";

/** Longest `metadata.name` a PKO Stack may have (a CEL rule in its CRD). */
export const MAX_STACK_NAME = 42;

const PLUGIN_CACHE_GIB_ALLOWED =
  "must be 0 (no plugin cache) or a whole number of GiB from 2 (one AWS provider and the next during an upgrade) to 64";

/** The Node official image verification Jobs run in, at an exact version. */
export const VERIFICATION_IMAGE = "node:22.20.0-alpine3.22";

/**
 * Each runtime's default workspace image: the smallest official Pulumi image that holds its toolchain
 * (pulumi/pulumi-docker-containers docker/base, docker/nodejs, docker/python, docker/go, read at tag
 * 3.259.0, the newest the snapshot held), at the CLI version the platform pins. pulumi-base bundles the CLI's language hosts, YAML's among them. Versioned
 * names pin the language too (Node.js 22, Python 3.13); pulumi-go has one Go. None has a uid-1000 home
 * but node's, so the workspace's HOME is a volume of the pod (stack-manifest.ts).
 */
export const WORKSPACE_IMAGES: Readonly<Record<string, string>> = {
  yaml: "pulumi/pulumi-base:3.270.0",
  nodejs: "pulumi/pulumi-nodejs-22:3.270.0",
  python: "pulumi/pulumi-python-3.13:3.270.0",
  go: "pulumi/pulumi-go:3.270.0",
};

export const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

const quantity = z
  .string()
  .regex(/^\d+(m|Mi|Gi)?$/, 'must be a Kubernetes quantity such as "250m" or "640Mi"');
const duration = z.string().regex(/^\d+(s|m|h)$/, 'must be a duration such as "10s", "5m" or "1h"');

const workspaceResources = z.strictObject({
  requests: z.strictObject({ cpu: quantity, memory: quantity }),
  limits: z.strictObject({ memory: quantity }),
});

/** One IAM policy statement, as AWS reads it. */
export interface PolicyStatement {
  Sid?: string;
  Effect: "Allow" | "Deny";
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}

/** What a program's permissions are computed from: where it runs, and the projects of every program. */
export interface AccessScope {
  /** The AWS partition ("aws", "aws-us-gov", ...). */
  partition: string;
  /** The program's own Pulumi project (from its Pulumi.yaml). */
  project: string;
  /** Every program's Pulumi project, by program name. */
  projects: Readonly<Record<string, string>>;
  /** For `update`: the environment's Pulumi stack. For `preview`: every environment's. */
  pulumiStacks: readonly string[];
}

/**
 * The AWS permissions a program's stacks run with: `update` for each environment's identity (scope: that
 * environment's stack), `preview` for the read-only identity every preview runs under (scope: every
 * environment's stack), which must change nothing.
 */
export interface ProgramAccess {
  update: (scope: AccessScope) => PolicyStatement[];
  preview: (scope: AccessScope) => PolicyStatement[];
}

const access = z.custom<ProgramAccess>(
  (v) =>
    typeof v === "object" &&
    v !== null &&
    typeof (v as ProgramAccess).update === "function" &&
    typeof (v as ProgramAccess).preview === "function",
  "must be { update: (scope) => statements, preview: (scope) => statements }",
);

// The size limits of a pipeline, defined here only (cluster-setup reads MAX_ENVIRONMENTS for its
// stackEnvironments). The suite applies every planned Stack of a pipeline at these limits to a real
// kube-apiserver with its admission policies (test/kube/largest.ts), so each is a size proven to deploy.
/** Environments: each is an IAM role and a ServiceAccount in cluster-setup. */
export const MAX_ENVIRONMENTS = 20;
/** Programs: each runs in every environment stage. */
export const MAX_PROGRAMS = 25;
/** Stages of the definition: gates, previews and updates. */
export const MAX_STAGES = 100;
/**
 * Program stages (each environment stage times each program): each is a Kargo Stage, an Argo CD Application,
 * a PKO Stack and its admission policy. Every environment previewed and updated, with every program, fits.
 */
export const MAX_PROGRAM_STAGES = MAX_ENVIRONMENTS * 2 * MAX_PROGRAMS;

/** Longest program name: it becomes part of each of its stages' names and PKO Stacks. */
export const MAX_PROGRAM_NAME = 20;

const program = z.strictObject({
  /** Names the program's Kargo stages (`<stage>-<name>`), PKO Stacks and dependencies. */
  name: z
    .string()
    .regex(dnsLabel, "must be a DNS label (lower-case letters, digits and '-')")
    .max(MAX_PROGRAM_NAME, `must be at most ${MAX_PROGRAM_NAME} characters`),
  /**
   * Its folder in the repository, holding its Pulumi.yaml (the project name and runtime come from there) and
   * one Pulumi.<pulumiStack>.yaml per environment. The whole folder becomes Freight.
   */
  dir: z.string().min(1, 'must be the program\'s folder, such as "programs/network"'),
  /** Programs whose update in the same environment must have reached the Freight's commit before this one runs. */
  dependsOn: z.array(z.string()).default([]),
  /** Its workspace image; by default the pinned official Pulumi image for its runtime (check-programs.ts). */
  workspaceImage: z.string().min(1, "must be an image with a pinned tag or digest").optional(),
  /** Its workspace pods' resources; by default stacks.workspaceResources. */
  resources: workspaceResources.optional(),
  /** Files outside its folder whose changes must also become Freight (a shared library, say). */
  includePaths: z.array(z.string().min(1)).default([]),
  /** Its AWS permissions per environment and for previews; none without it. */
  aws: access.optional(),
});

/**
 * What a preview may do that stops its Freight until a person decides (kargo/verification/classify.mjs
 * classifies each resource operation; test/risk-policy.test.ts keeps this list equal to its RISK_CLASSES):
 * loss (a delete or replace), privilege (identity and access: IAM, KMS key policies, resource policies,
 * grants), exposure (network reach, public access), cost (a priced resource, where it can be known).
 */
export const RISK_CLASSES = ["loss", "privilege", "exposure", "cost"] as const;
export type RiskClass = (typeof RISK_CLASSES)[number];

/** What a long-lived environment stops on when it does not say: what can hurt it beyond the preview's text. */
export const DEFAULT_STOP_ON: readonly RiskClass[] = ["loss", "privilege", "exposure"];

const RISK_CLASS_ALLOWED = `must be one of ${RISK_CLASSES.join(", ")}`;
const groups = (what: string) =>
  z.array(
    z
      .string({ error: `must be a Cognito group name ${what}` })
      .min(1, `must be a Cognito group name ${what}`),
    {
      error: 'must be a list of Cognito group names, such as ["qa-approvers"]',
    },
  );

const environment = z.strictObject({
  /** Pulumi stack of the promoted program this environment deploys (`<org>/<project>/<pulumiStack>`). */
  pulumiStack: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be a Pulumi stack name"),
  /**
   * Destroy the environment's resources when its update Stack is deleted. Never for long-lived ones. An
   * ephemeral environment stops for nothing.
   */
  ephemeral: z.boolean().default(false),
  /**
   * The risk classes that stop this environment's Freight at its preview until one of `deciders` approves it
   * for the update stage. Default: DEFAULT_STOP_ON, or nothing for an ephemeral environment; `[]` stops for
   * nothing.
   */
  stopOn: z
    .array(z.enum(RISK_CLASSES, { error: RISK_CLASS_ALLOWED }), {
      error: `must be a list of classes, such as ["loss"], each one of ${RISK_CLASSES.join(", ")}`,
    })
    .refine((l) => new Set(l).size === l.length, "lists a class twice")
    .optional(),
  /** Stop every preview that changes anything, whatever its class (a production environment). */
  stopEveryPreview: z.boolean({ error: "must be true or false" }).default(false),
  /**
   * Cognito groups whose members decide each stop of this environment: approving the Freight for the
   * environment's update stage lets it through. One list for every class: Kargo approves Freight for a
   * Stage, not for a class (docs/security-and-approvals.md).
   */
  deciders: groups("that decides this environment's stops").optional(),
  /** The old name of `deciders`, from when only deletes and replaces stopped; still read, never with it. */
  destructiveChangeApprovers: groups("that decides this environment's stops").optional(),
  /** The old switch: `protected: false` is `stopOn: []`. Still read, never with stopOn or stopEveryPreview. */
  protected: z.boolean().optional(),
  /**
   * The AWS account (and region) the environment's programs act in; the cluster's own account without it.
   * Its identities there come from the kargo project (lib/pipeline/accounts.ts, check-accounts.ts).
   */
  aws: z.strictObject({ accountId: z.string(), region: z.string().optional() }).optional(),
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
  /** The repository of the promoted programs: the Warehouse subscribes to `branch`; promotions push only `stage/*`. */
  source: z.strictObject({
    repoURL: z.string().regex(/^https:\/\/[^\s/@]+\/\S+$/, "must be an HTTPS git URL"),
    branch: z.string().min(1, 'must name the branch people merge to, such as "main"'),
    /** Files under the programs' folders whose changes never become Freight (none a stage runs). */
    excludePaths: z.array(z.string().min(1)).default([]),
  }),
  /**
   * The promoted programs, each a Pulumi project in a folder of its own. A Freight is one commit of the
   * repository; every environment stage runs every program, each only after the programs it depends on have
   * been updated to that commit in the same environment.
   */
  programs: z
    .array(program)
    .min(1, "must list at least one promoted program")
    .max(MAX_PROGRAMS, `must list at most ${MAX_PROGRAMS} programs`),
  /** Where the programs' stacks live in Pulumi Cloud: `<organization>/<program's project>/<pulumiStack>`. */
  pulumi: z.strictObject({
    organization: z.string().regex(/^[A-Za-z0-9_.-]+$/, "must be a Pulumi organization name"),
    /**
     * Pulumi Cloud's API, which verification sends the Pulumi access token to on every measurement. Only
     * Pulumi Cloud's own address is accepted here (check-values.ts); a self-hosted one goes in selfHostedApiUrl.
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
    /** Pulumi Cloud's web console, where the Kargo UI links every program stage to its stack. */
    consoleUrl: z.string().url().default("https://app.pulumi.com"),
  }),
  /** How the PKO Stack manifests in `stacks/` run: must match the cluster-setup project's outputs. */
  stacks: z.strictObject({
    dir: z.string().default("stacks"),
    namespace: z.string().regex(dnsLabel, "must be a DNS label"),
    serviceAccountName: z.string().regex(dnsLabel, "must be a DNS label"),
    accessTokenSecret: z.string().regex(dnsLabel, "must be a DNS label"),
    gitCredentialsSecret: z.string().regex(dnsLabel, "must be a DNS label"),
    /**
     * Each workspace pod (`pulumi preview`/`up` with the program's providers), unless the program sets its
     * own. PKO defaults to 100m/64Mi and caps its agent's memory at the request, far too little for the AWS
     * provider.
     */
    workspaceResources,
    /**
     * Size of the plugin cache's volumes: the seed that holds every plugin the programs pin, and each
     * workspace run's copy restored from its snapshot (lib/pipeline/plugin-cache.ts); 0 for none (every run
     * downloads its plugins). The AWS provider takes about 0.7 GB unpacked, and a run may download a newer
     * version beside the cached one. Needs the cluster's EBS CSI driver and snapshot controller
     * (cluster:ebsCsiDriver).
     */
    pluginCacheGiB: z
      .number({ error: PLUGIN_CACHE_GIB_ALLOWED })
      .int(PLUGIN_CACHE_GIB_ALLOWED)
      .refine((gib) => gib === 0 || (gib >= 2 && gib <= 64), PLUGIN_CACHE_GIB_ALLOWED)
      .default(2),
  }),
  environments: z
    .record(z.string(), environment)
    .refine(
      (environments) => Object.keys(environments).length <= MAX_ENVIRONMENTS,
      `must define at most ${MAX_ENVIRONMENTS} environments`,
    ),
  stages: z.array(stage).max(MAX_STAGES, `must list at most ${MAX_STAGES} stages`),
  verification: z.strictObject({
    /** Wait before the first look at Pulumi Cloud. */
    initialDelay: duration.default("10s"),
    /** Time between looks: the most a stage waits beyond its Pulumi operation. */
    interval: duration.default("10s"),
    /** Give up on a preview or an update after this long. */
    previewTimeout: duration.default("15m"),
    updateTimeout: duration.default("45m"),
    /**
     * Operations fetched per request, newest first; the newest for the promoted commit among them decides.
     * A preview's verification also looks at the previews of this many of the stack's newest versions.
     * Ask for no more than the operations that may land on the stack between the stage's own and its
     * verification (pull-request previews of the same stack count too).
     */
    pageSize: z.number().int().min(1).max(100).default(10),
    /**
     * The image of each verification Job (a Node official image: the check is one dependency-free script,
     * kargo/verification/verify.mjs), pinned to a version tag or digest, checked by check-values.ts.
     */
    image: z.string().min(1, "must be an image with a pinned tag or digest").default(VERIFICATION_IMAGE),
    /** How often each update stage's drift check (lib/pipeline/drift.ts) runs again, or "off" for none. */
    driftInterval,
  }),
});

export type PipelineInput = z.input<typeof pipelineSchema>;
/** A pipeline definition as the schema reads it, before the programs' own Pulumi.yaml files are read. */
export type ParsedPipeline = z.output<typeof pipelineSchema>;
export type ProgramDeclaration = ParsedPipeline["programs"][number];
export type WorkspaceResources = z.output<typeof workspaceResources>;

/** A promoted program with what its Pulumi.yaml says and the defaults applied (validatePipeline fills them in). */
export interface Program extends Omit<ProgramDeclaration, "workspaceImage" | "resources"> {
  /** `name` in its Pulumi.yaml. */
  project: string;
  /** `runtime` (or `runtime.name`) in its Pulumi.yaml. */
  runtime: string;
  workspaceImage: string;
  resources: WorkspaceResources;
  /** The resource plugins its lock files (or, in YAML, its resources' versions) pin. */
  plugins: ProviderPlugin[];
}

/** One resource plugin at one version, as `pulumi plugin install resource <name> <version>` takes it. */
export interface ProviderPlugin {
  name: string;
  version: string;
}

/** A validated pipeline: the definition with defaults, and each program resolved from its Pulumi.yaml. */
export type Pipeline = Omit<ParsedPipeline, "programs"> & { programs: Program[] };
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

/** What stops an environment's Freight at its preview, and who lets it through. */
export interface RiskPolicy {
  /** The classes that stop it, in RISK_CLASSES order, or "all": every preview that changes anything. */
  stopOn: RiskClass[] | "all";
  /** Who decides a stop: none when nothing stops. */
  deciders: string[];
}

type EnvironmentDefinition = Pipeline["environments"][string];

/**
 * An environment's risk policy, from its fields (the checks in check-stages.ts refuse contradictions first):
 * an ephemeral environment, or one with `protected: false`, stops for nothing; stopEveryPreview stops on
 * everything; otherwise stopOn, by default DEFAULT_STOP_ON. `destructiveChangeApprovers` is read as deciders.
 */
export function riskPolicy(env: EnvironmentDefinition): RiskPolicy {
  if (env.ephemeral || env.protected === false) return { stopOn: [], deciders: [] };
  const deciders = env.deciders ?? env.destructiveChangeApprovers ?? [];
  if (env.stopEveryPreview) return { stopOn: "all", deciders };
  const listed = env.stopOn ?? DEFAULT_STOP_ON;
  const stopOn = RISK_CLASSES.filter((c) => listed.includes(c));
  return { stopOn, deciders: stopOn.length > 0 ? deciders : [] };
}

/** Whether anything stops an environment's Freight at its preview. */
export const isProtected = (env: EnvironmentDefinition): boolean => {
  const { stopOn } = riskPolicy(env);
  return stopOn === "all" || stopOn.length > 0;
};

/** A policy's stopOn as a word list: "every change", or "loss, privilege", or "nothing". */
export const stopOnText = ({ stopOn }: RiskPolicy): string =>
  stopOn === "all" ? "every change" : stopOn.length > 0 ? stopOn.join(", ") : "nothing";
