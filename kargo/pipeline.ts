// The promotion pipeline, declared once. A forking team edits this file; the Kargo Stages, promotion
// policies, approver roles, verification, Argo CD Applications and the stacks/ manifests all derive from it
// (`npm run stacks` rewrites stacks/ after a change here).
import type { PipelineInput } from "../lib/pipeline/model";

export const pipeline: PipelineInput = {
  project: "infra",
  source: {
    // Your fork: the promoted program (the root Pulumi.yaml) and stacks/ live here.
    repoURL: "https://github.com/your-org/infra-change-platform.git",
    branch: "main",
    programDir: ".",
    // Only changes to the promoted program become Freight; the pipeline's own stacks/ commits never do.
    includePaths: ["Pulumi.yaml"],
    excludePaths: ["glob:stacks/**"],
  },
  pulumi: { organization: "your-org", project: "infra-program" },
  stacks: {
    dir: "stacks",
    namespace: "pulumi-stacks",
    serviceAccountName: "pulumi-stacks",
    accessTokenSecret: "pulumi-access-token",
    gitCredentialsSecret: "git-credentials",
    workspaceImage: "pulumi/pulumi:3.270.0-nonroot",
  },
  environments: {
    // Every environment is protected (not ephemeral): a preview that would delete or replace anything stops
    // there until someone in destructiveChangeApprovers approves that Freight for the update stage.
    dev: {
      pulumiStack: "dev",
      config: { "aws:region": "us-west-2" },
      destructiveChangeApprovers: ["dev-approvers"],
    },
    dev2: {
      pulumiStack: "dev2",
      config: { "aws:region": "us-east-2" },
      destructiveChangeApprovers: ["dev-approvers"],
    },
    qa: {
      pulumiStack: "qa",
      config: { "aws:region": "us-west-2" },
      destructiveChangeApprovers: ["qa-approvers"],
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
  },
};
