// The promotion pipeline, declared once. A forking team edits this file; the Kargo Stages, promotion
// policies, approver roles, verification, Argo CD Applications and the stacks/ manifests all derive from it
// (`npm run stacks` rewrites stacks/ after a change here).
import { fork } from "../lib/fork";
import type { PipelineInput } from "../lib/pipeline/schema";
import { bucketAccess } from "../programs/bucket/access";
import { bucketLifecycleAccess } from "../programs/bucket-lifecycle/access";

export const pipeline: PipelineInput = {
  project: "infra",
  source: {
    // Your fork (lib/fork.ts, set by `npm run personalize`): the programs and stacks/ live here. Promotions
    // never push to `branch`; each stage has its own branch, stage/<stage>-<program>.
    repoURL: fork.githubRepo,
    branch: "main",
  },
  // The promoted programs. Each folder holds a Pulumi project (its name and runtime come from its
  // Pulumi.yaml) and one Pulumi.<pulumiStack>.yaml per environment; the whole folder is Freight. In every
  // environment a program runs only after those it dependsOn have been updated to the same commit.
  programs: [
    { name: "bucket", dir: "programs/bucket", aws: bucketAccess },
    {
      name: "lifecycle",
      dir: "programs/bucket-lifecycle",
      dependsOn: ["bucket"],
      aws: bucketLifecycleAccess("bucket"),
    },
  ],
  pulumi: { organization: fork.pulumiOrg },
  stacks: {
    dir: "stacks",
    namespace: "pulumi-stacks",
    serviceAccountName: "pulumi-stacks",
    accessTokenSecret: "pulumi-access-token",
    gitCredentialsSecret: "git-credentials",
    // Each program's workspace image comes from its runtime (lib/pipeline/schema.ts WORKSPACE_IMAGES), or
    // its own workspaceImage. Sized for `pulumi up` with the AWS provider; test/capacity checks every program
    // stage's workspace fits beside the platform on the nodes (README, "What the nodes hold").
    workspaceResources: { requests: { cpu: "250m", memory: "640Mi" }, limits: { memory: "1536Mi" } },
    // The plugin cache: the providers the programs pin, installed once onto a gp3 volume of this size and
    // snapshotted; each workspace run gets its own copy and downloads no provider. Needs cluster:ebsCsiDriver
    // (on in the example). 0 turns it off: every run downloads its providers (docs/capacity-and-cost.md).
    pluginCacheGiB: 2,
  },
  // Each program's config for an environment is Pulumi.<pulumiStack>.yaml in the program's folder.
  environments: {
    // What stops each environment's Freight at its preview (stopOn: loss = deletes and replaces, privilege =
    // IAM and access policies, exposure = network reach and public access, cost = new or resized billed
    // capacity; kargo/verification/classify.mjs decides) until one of its deciders approves that Freight for
    // the environment's update stage. The dev environments stop only on loss: what their identities may do
    // in AWS is bounded by each program's access, and security reviews the rest at its gate before qa. qa
    // also stops on privilege and exposure, decided by security on qa's own preview. Left out, stopOn is
    // loss, privilege and exposure; an ephemeral environment stops for nothing; stopEveryPreview: true stops
    // every preview that changes anything (for prod, docs/make-it-yours.md).
    dev: { pulumiStack: "dev", stopOn: ["loss"], deciders: ["dev-approvers"] },
    dev2: { pulumiStack: "dev2", stopOn: ["loss"], deciders: ["dev-approvers"] },
    qa: {
      pulumiStack: "qa",
      stopOn: ["loss", "privilege", "exposure"],
      deciders: ["security-approvers"],
    },
  },
  stages: [
    { name: "approvalgatedev", kind: "gate", from: "warehouse", approvers: ["dev-approvers"] },
    { name: "devpreview", kind: "preview", environment: "dev", from: ["approvalgatedev"] },
    { name: "dev", kind: "update", environment: "dev", from: ["devpreview"] },
    { name: "dev2preview", kind: "preview", environment: "dev2", from: ["approvalgatedev"] },
    { name: "dev2", kind: "update", environment: "dev2", from: ["dev2preview"] },
    // QA and security each approve Freight that has passed both dev environments.
    {
      name: "approvalgateqa",
      kind: "gate",
      from: ["dev", "dev2"],
      requireAll: true,
      approvers: ["qa-approvers"],
    },
    {
      name: "approvalgateqasec",
      kind: "gate",
      from: ["dev", "dev2"],
      requireAll: true,
      approvers: ["security-approvers"],
    },
    // QA runs only once both gates have approved the same Freight.
    {
      name: "qapreview",
      kind: "preview",
      environment: "qa",
      from: ["approvalgateqa", "approvalgateqasec"],
      requireAll: true,
    },
    { name: "qa", kind: "update", environment: "qa", from: ["qapreview"] },
  ],
  verification: {
    initialDelay: "10s",
    interval: "10s",
    previewTimeout: "15m",
    updateTimeout: "45m",
    pageSize: 10,
    // How often each update stage's drift check previews its stack again ("off": none): docs/operate.md#drift.
    driftInterval: "1h",
  },
};
