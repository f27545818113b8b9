// Names the pipeline gives things, one rule each: Kargo objects, stage branches, files in the repository,
// PKO Stacks, the GitHub repository. Checks refuse definitions that would clash with them and derivation
// builds objects with them, so they sit below both.
import * as path from "node:path";
import { DRIFT_OFF, PipelineError, type Pipeline } from "./schema";

/** Names of the objects every pipeline has exactly one of. */
export const names = {
  warehouse: "program",
  promotionTask: "promote-stack",
  analysis: {
    preview: "pulumi-preview",
    update: "pulumi-update",
  },
  /** In the Kargo project namespace: the git credentials Kargo pushes with, the token verification reads. */
  gitCredentials: "git-credentials",
  verificationToken: "pulumi-api-token",
  /** In the Kargo project namespace: the ConfigMap holding the script each verification Job runs. */
  verificationScript: "pulumi-verification",
  /** Where a promotion checks out the Freight's commit (read-only) and the stage's branch. */
  checkout: { freight: "./freight", stage: "./stage" },
  /** The Warehouse's GitHub webhook receiver, and the Secret holding its shared secret. */
  webhookReceiver: "github",
  webhookSecret: "github-webhook",
} as const;

/**
 * The branch holding a stage's Stack manifest: written only by that stage's promotions, tracked only by its
 * Application, so "synced to the commit I pushed" cannot be broken by a sibling stage or a commit to main.
 */
export const stageBranchPrefix = "stage/";
export const stageBranch = (stageName: string) => `${stageBranchPrefix}${stageName}`;

/** The Stack manifest's file name, in `stacks/` on main (the template) and on the stage's branch. */
export const stackManifestFile = (stageName: string) => `${stageName}.yaml`;

/**
 * An update stage's drift check (lib/pipeline/drift.ts): its stage-like name, so its file is
 * `<stage>-drift.yaml` and its Stack `<project>-<stage>-drift`, on the update stage's branch.
 */
export const driftName = (stageName: string) => `${stageName}-drift`;
export const driftManifestFile = (stageName: string) => stackManifestFile(driftName(stageName));
/** Whether a program stage has a drift check: an update stage, unless `verification.driftInterval` is off. */
export const hasDriftCheck = (p: Pick<Pipeline, "verification">, s: { kind: string }) =>
  s.kind === "update" && p.verification.driftInterval !== DRIFT_OFF;

/** A program's stack config file for an environment, in the program's folder, moved by the same Freight. */
export const stackConfigFile = (
  p: Pick<Pipeline, "environments">,
  program: { dir: string },
  environment: string,
) => path.posix.join(normalDir(program.dir), `Pulumi.${p.environments[environment]!.pulumiStack}.yaml`);

/** A repository-relative folder as the pipeline writes it: normalized, without a trailing "/". */
export const normalDir = (dir: string) => path.posix.normalize(dir).replace(/(.)\/$/, "$1");

/** Name of the PKO Stack (and of the Argo CD Application and `stacks/` manifest) of a program's stage. */
export const stackObjectName = (pipeline: Pick<Pipeline, "project">, stageName: string) =>
  `${pipeline.project}-${stageName}`;

/** The file every promotion writes beside the stage's manifest, saying what the branch is. */
export const stageBranchFile = "PIPELINE-STAGE.md";

/** The GitHub repository of an HTTPS URL, for creating the stage branches. */
export function githubRepository(repoURL: string): { owner: string; name: string } {
  const match = /^https:\/\/github\.com\/([\w.-]+)\/([\w.-]+?)(\.git)?\/?$/.exec(repoURL);
  if (!match) {
    throw new PipelineError([
      `source.repoURL: "${repoURL}" is not a GitHub repository (https://github.com/<owner>/<name>.git); the kargo project creates each stage's branch through GitHub's API`,
    ]);
  }
  return { owner: match[1]!, name: match[2]! };
}
