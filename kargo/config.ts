import { z } from "zod";
import { OWNER } from "../lib/codeowners";
import { configFields, hostname, internetAllowList, loadConfig } from "../lib/config";
import { ciConfigProblems, ciConfigShape } from "./ciConfig";
import { pipeline } from "./pipeline";

/** Rules per security group, by default (docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html). */
const SECURITY_GROUP_RULE_LIMIT = 60;

const token = (key: string, what: string) =>
  z
    .string()
    .min(1, `must be set: pulumi config set --secret ${key} <${what}>`)
    .max(1000, "must be at most 1000 characters")
    .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces (a token, as issued)");

/** An optional key left empty (as `pulumi new` does when a prompt is skipped) is not set. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === "" ? undefined : value), schema.optional());

/** Who may bypass main's review rule: nobody, repository admins through a pull request only, or always. */
export const adminBypassModes = ["never", "pull_request", "always"] as const;
export type AdminBypassMode = (typeof adminBypassModes)[number];

/** Each CIDR is one rule of the webhook listener's security group. */
export const webhookAllowList = internetAllowList(
  SECURITY_GROUP_RULE_LIMIT,
  "each is one rule of the webhook listener's security group, which holds 60 by default",
);

export const kargoConfigSchema = z.object({
  clusterSetupStack: configFields.stackName("cluster-setup"),
  /** Git user Kargo pushes promotions as; with a GitHub token any non-empty name works. */
  gitUsername: z
    .string()
    .min(1, "must not be empty")
    .max(100, "must be at most 100 characters")
    .regex(
      /^[^\s:\p{Cc}]+$/u,
      "must be printable characters without spaces, control characters or ':' (it travels in HTTP basic auth)",
    )
    .default("git"),
  gitToken: token("gitToken", "token that can push to the pipeline's repository"),
  /** Optional: a token that can only read the repository, for Argo CD and PKO. */
  gitReadToken: optional(token("gitReadToken", "read-only token for the pipeline's repository")),
  /** Optional: a Pulumi Cloud token that can only read stacks, for Kargo's verification. */
  pulumiReadToken: optional(token("pulumiReadToken", "read-only Pulumi Cloud token")),
  kargoHostname: hostname.or(z.literal("")).default(""),
  kargoHostedZoneId: z
    .string()
    .regex(/^Z[A-Z0-9]{1,31}$/, "must be a Route 53 hosted zone ID such as Z0123456789ABCDEFGHIJ")
    .or(z.literal(""))
    .default(""),
  /** Unset: every zone the cluster has a public subnet in, which are the zones its nodes run in. */
  kargoLoadBalancerZones: z
    .number()
    .int()
    .min(1, "must be at least 1")
    .max(6, "must be at most 6 (one per public subnet)")
    .optional(),
  kargoAllowedCidrs: internetAllowList(
    SECURITY_GROUP_RULE_LIMIT,
    "each is one rule of the load balancer's security group, which holds 60 by default",
  ).default(["0.0.0.0/0"]),
  /** The break-glass admin login; off unless asked for. */
  kargoAdminAccount: z.boolean().default(false),
  kargoValues: z.record(z.string(), z.unknown()).default({}),
  /**
   * Register the Warehouse's push webhook on the pipeline's GitHub repository with gitToken (which then needs
   * admin:repo_hook, or Webhooks: write); false only outputs its URL and secret, to add it by hand.
   */
  githubWebhook: z.boolean().default(true),
  /**
   * Who may deliver webhooks. Unset: GitHub's IPv4 `hooks` ranges, read from GitHub's meta API at each deploy
   * (`github.getIpRanges`), so they are as current as the last `pulumi up`.
   */
  webhookAllowedCidrs: webhookAllowList.optional(),
  /**
   * Kargo pushes as this GitHub App (preferred over gitToken: installation tokens last an hour and the App is
   * a bypass actor of its own). All three keys, or none. Kargo v1.11.2 reads them from its git credentials
   * Secret (pkg/credentials/github/app.go: githubAppID, githubAppInstallationID, githubAppPrivateKey).
   */
  githubAppId: optional(z.number().int().positive("must be the App's numeric ID, from its settings page")),
  githubAppInstallationId: optional(
    z.number().int().positive("must be the numeric ID of the App's installation on the repository"),
  ),
  githubAppPrivateKey: optional(
    z
      .string()
      .max(10000, "must be at most 10000 characters")
      .regex(
        /^-----BEGIN (RSA )?PRIVATE KEY-----[\s\S]+-----END (RSA )?PRIVATE KEY-----\s*$/,
        "must be the App's PEM private key, as GitHub downloads it: pulumi config set --secret githubAppPrivateKey < key.pem",
      ),
  ),
  /**
   * Manage the repository's rulesets: main through reviewed pull requests only, stage/* writable by Kargo
   * alone. Needs githubAdminToken.
   */
  githubRulesets: z.boolean().default(false),
  /** A token that may administer the repository (Administration: write), used only for the rulesets. */
  githubAdminToken: optional(token("githubAdminToken", "token with Administration: write on the repository")),
  /** Approving reviews a pull request into main needs (GitHub allows 0 to 10). */
  githubRequiredReviews: z
    .number({ error: "must be a whole number of approving reviews, 0 to 10" })
    .int("must be a whole number of approving reviews, 0 to 10")
    .min(0, "must be at least 0")
    .max(10, "must be at most 10 (GitHub's limit)")
    .default(1),
  /** The last push to a pull request must be approved by someone other than who pushed it. */
  githubRequireLastPushApproval: z.boolean({ error: "must be true (the default) or false" }).default(true),
  /**
   * Whether repository admins may merge into main without the reviews (never without the checks): "never"
   * (the default), "pull_request" (through a pull request only: the one-maintainer setting) or "always".
   */
  githubAdminBypass: z
    .enum(adminBypassModes, {
      error:
        'allowed values are "never" (the default), "pull_request" (admins merge a pull request without reviews) and "always"',
    })
    .default("never"),
  /**
   * GitHub users or teams (`@user`, `@org/team`) one of whom must approve a pull request that changes the
   * path: the pipeline definition and what it imports, lib/pipeline/, stacks/, the repository rules
   * (.github/CODEOWNERS, `npm run codeowners`; the reviews ruleset requires a code owner's review). Needs
   * githubRulesets. Unset: no owner's review is required.
   */
  githubPathOwners: z
    .array(
      z
        .string()
        .regex(
          OWNER,
          'must be a GitHub user or team as CODEOWNERS names it, such as "@alice" or "@your-org/platform"',
        ),
      { error: 'must be a list of GitHub users or teams, such as ["@your-org/platform"]' },
    )
    .max(20, "must name at most 20 owners (a team names more people)")
    .refine((l) => new Set(l.map((o) => o.toLowerCase())).size === l.length, "names an owner twice")
    .default([]),
  // The CI's GitHub environments, repository variables and Pulumi Cloud OIDC trust (kargo/ciConfig.ts).
  ...ciConfigShape,
});

const githubAppKeys = ["githubAppId", "githubAppInstallationId", "githubAppPrivateKey"] as const;

const hostnameWithZone = kargoConfigSchema.superRefine((c, ctx) => {
  // Hostname and zone come together: a zone alone has no name to certify.
  if (c.kargoHostedZoneId && !c.kargoHostname) {
    ctx.addIssue({
      code: "custom",
      path: ["kargoHostedZoneId"],
      message: "needs kargo:kargoHostname, the name in that zone to give Kargo a certificate for",
    });
  }
  const appKeys = githubAppKeys.filter((k) => c[k] !== undefined);
  for (const key of appKeys.length > 0 ? githubAppKeys.filter((k) => c[k] === undefined) : [])
    ctx.addIssue({
      code: "custom",
      path: [key],
      message: `must be set with ${appKeys.map((k) => `kargo:${k}`).join(" and ")}: a GitHub App needs its ID, its installation's ID and its private key`,
    });
  // With no review required there is no push to approve; GitHub would still ask someone else for one.
  if (c.githubRequiredReviews === 0 && c.githubRequireLastPushApproval)
    ctx.addIssue({
      code: "custom",
      path: ["githubRequireLastPushApproval"],
      message:
        "must be false when kargo:githubRequiredReviews is 0: a last-push approval is a review by someone else; for one maintainer set kargo:githubAdminBypass to pull_request instead (docs/deploy.md)",
    });
  if (c.githubRequiredReviews === 0 && c.githubAdminBypass !== "never")
    ctx.addIssue({
      code: "custom",
      path: ["githubAdminBypass"],
      message: "must be never when kargo:githubRequiredReviews is 0: there is no review to bypass",
    });
  if (c.githubPathOwners.length > 0 && !c.githubRulesets)
    ctx.addIssue({
      code: "custom",
      path: ["githubPathOwners"],
      message:
        "needs kargo:githubRulesets true: without the rulesets nothing requires the owners' review (docs/deploy.md#the-paths-owners)",
    });
  if (c.githubPathOwners.length > 0 && c.githubRequiredReviews === 0)
    ctx.addIssue({
      code: "custom",
      path: ["githubPathOwners"],
      message:
        "needs kargo:githubRequiredReviews of at least 1: an owner's approval is one of the pull request's approving reviews",
    });
  for (const { path, message } of ciConfigProblems(c, Object.keys(pipeline.environments)))
    ctx.addIssue({ code: "custom", path: [path], message });
  if (c.githubRulesets && !c.githubAdminToken)
    ctx.addIssue({
      code: "custom",
      path: ["githubAdminToken"],
      message:
        "must be set when kargo:githubRulesets is true: pulumi config set --secret githubAdminToken <token with Administration: write on the repository>",
    });
});

export const loadKargoConfig = () =>
  loadConfig(hostnameWithZone, {
    secrets: [
      "gitToken",
      "gitReadToken",
      "pulumiReadToken",
      "githubAppPrivateKey",
      "githubAdminToken",
      "pulumiAdminToken",
    ],
    secretCapable: ["kargoValues"],
  });

export type KargoConfig = ReturnType<typeof loadKargoConfig>;

/** Kargo's GitHub App, when its keys are set (validation makes sure all three are, or none). */
export const githubApp = (c: KargoConfig) =>
  c.githubAppId !== undefined &&
  c.githubAppInstallationId !== undefined &&
  c.githubAppPrivateKey !== undefined
    ? { id: c.githubAppId, installationId: c.githubAppInstallationId, privateKey: c.githubAppPrivateKey }
    : undefined;
