import { z } from "zod";
import { configFields } from "../lib/config";

/** A GitHub login (users: 1-39 letters, digits and single hyphens) or `team:<slug>` of the repository's org. */
const reviewer = z
  .string()
  .regex(
    /^(?:[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}|team:[a-z0-9][a-z0-9_-]{0,99})$/,
    "must be a GitHub login (octocat) or team:<slug> of a team of the repository's organization",
  );

/** GitHub takes at most 6 users and 6 teams as an environment's required reviewers. */
const reviewers = z
  .array(reviewer)
  .refine((r) => r.filter((x) => !x.startsWith("team:")).length <= 6, {
    message: "must list at most 6 users (GitHub's limit for an environment's reviewers)",
  })
  .refine((r) => r.filter((x) => x.startsWith("team:")).length <= 6, {
    message: "must list at most 6 teams (GitHub's limit for an environment's reviewers)",
  })
  .refine((r) => new Set(r).size === r.length, { message: "must not repeat a reviewer" })
  .default([]);

/**
 * The CI's repository settings and Pulumi Cloud trust, as code (kargo/ciSettings.ts, kargo/pulumiCloudOidc.ts):
 * each opt-in. Spread into kargo's config schema, so the keys stay together.
 */
export const ciConfigShape = {
  /**
   * Manage the GitHub environments the workflows run in (preview, production, drift: reviewers and branch
   * rules) and the repository variables they read. Needs githubAdminToken.
   */
  githubCi: z.boolean({ error: "must be true or false (the default)" }).default(false),
  /** Who approves a pull request's preview run (it reads every Secret): logins or team:<slug>. */
  githubPreviewReviewers: reviewers,
  /** Who approves a deploy run on main (cluster admin): logins or team:<slug>. */
  githubProductionReviewers: reviewers,
  /** A reviewer cannot approve a run they started (false only for a team of one). */
  githubPreventSelfReview: z.boolean({ error: "must be true (the default) or false" }).default(true),
  /** The cluster project's stack, for the CLUSTER_STACK variable. */
  ciClusterStack: configFields.stackName("cluster").optional(),
  /** The roles the workflows assume (cluster:ciDeployRoleArn and cluster:ciPreviewRoleArn). */
  ciAwsDeployRoleArn: configFields.iamRoleArn.optional(),
  ciAwsPreviewRoleArn: configFields.iamRoleArn.optional(),
  /**
   * The Pulumi token previews and drift checks get, by edition (docs/ci.md, Pulumi Cloud editions):
   * team:<team> (Enterprise, Business Critical), user:<login> (a personal token) or organization.
   */
  ciPulumiPreviewToken: z
    .string()
    .regex(
      /^(?:team:[A-Za-z0-9][A-Za-z0-9_.-]{0,99}|user:[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}|organization)$/,
      "must be team:<Pulumi team>, user:<Pulumi login> or organization (docs/ci.md, Pulumi Cloud editions)",
    )
    .default("team:ci-preview"),
  /** The environment pull requests preview programs against (unset: the first Freight reaches). */
  ciProgramPreviewEnvironment: configFields.dnsLabel.optional(),
  /** Register GitHub's OIDC issuer in Pulumi Cloud with the policies the workflows need. */
  pulumiCloudOidc: z.boolean({ error: "must be true or false (the default)" }).default(false),
  /** A Pulumi Cloud token that may administer the organization; unset: the deploy's own (PULUMI_ACCESS_TOKEN). */
  pulumiAdminToken: z
    .string()
    .min(1)
    .max(1000, "must be at most 1000 characters")
    .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces (a token, as issued)")
    .optional(),
};

type CiConfig = z.output<z.ZodObject<typeof ciConfigShape>> & { githubAdminToken?: string | undefined };

/** What the CI keys need of each other, each problem on the key that fixes it. */
export function ciConfigProblems(c: CiConfig, environments: string[]): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  if (c.githubCi) {
    if (!c.githubAdminToken)
      problems.push({
        path: "githubAdminToken",
        message:
          "must be set when kargo:githubCi is true: pulumi config set --secret githubAdminToken <token with Administration, Environments and Variables: write on the repository>",
      });
    for (const key of ["githubPreviewReviewers", "githubProductionReviewers"] as const)
      if (c[key].length === 0)
        problems.push({
          path: key,
          message:
            "must list at least one reviewer when kargo:githubCi is true: without one, any branch's workflow gets the environment's credentials",
        });
    for (const key of ["ciClusterStack", "ciAwsDeployRoleArn", "ciAwsPreviewRoleArn"] as const)
      if (c[key] === undefined)
        problems.push({
          path: key,
          message: `must be set when kargo:githubCi is true (a variable the workflows read)`,
        });
  }
  // The preview team's Stack Read covers the cluster stack too.
  if (c.pulumiCloudOidc && c.ciPulumiPreviewToken.startsWith("team:") && c.ciClusterStack === undefined)
    problems.push({
      path: "ciClusterStack",
      message:
        "must be set when kargo:pulumiCloudOidc is true with a team token: the preview team reads that stack",
    });
  if (c.ciProgramPreviewEnvironment !== undefined && !environments.includes(c.ciProgramPreviewEnvironment))
    problems.push({
      path: "ciProgramPreviewEnvironment",
      message: `must be an environment of kargo/pipeline.ts: ${environments.join(", ")}`,
    });
  return problems;
}
