import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { ConfigError, configFields, loadConfig } from "../lib/config";
import { fork } from "../lib/fork";
import { identityProblems, type ForkIdentity } from "../lib/forkIdentity";
import { isReservedNamespace, reservedNamespaces } from "../lib/namespaces";
import { pipeline } from "../kargo/pipeline";
import { escalation, grantableVerbs } from "./escalation";
import { accountOf } from "../lib/pipeline/accounts";
import { ACCOUNT_ID } from "../lib/pipeline/check-accounts";
import { MAX_ENVIRONMENTS, riskPolicy } from "../lib/pipeline/schema";

export { escalation, grantableVerbs } from "./escalation";

/** A Slack mention as its API writes one: a user group's or a user's (api.slack.com, formatting). */
const slackMention = /^<!subteam\^[A-Z0-9]{6,32}>$|^<@[UW][A-Z0-9]{6,32}>$/;

/** The groups that decide some environment's stops, in the pipeline's order. */
const decidingGroups = () => [
  ...new Set(
    Object.values(pipeline.environments).flatMap(
      (env) => riskPolicy(env as Parameters<typeof riskPolicy>[0]).deciders,
    ),
  ),
];

/** Words Cognito refuses anywhere in a hosted-UI domain prefix (CreateUserPoolDomain). */
export const reservedDomainWords = ["aws", "amazon", "cognito"] as const;

const dnsLabel = configFields.dnsLabel;
const groupName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
  );
const chartValues = z.record(z.string(), z.unknown()).default({});
/** An optional key left empty (as `pulumi new` does when a prompt is skipped) is not set. */
const optionalKey = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === "" ? undefined : value), schema.optional());

const policyRule = z.strictObject({
  apiGroups: z
    .array(z.string().max(253))
    .min(1, "must list at least one API group ('' is the core group)")
    .max(20, "must list at most 20 API groups"),
  resources: z
    .array(z.string().min(1).max(253))
    .min(1, "must list at least one resource")
    .max(50, "must list at most 50 resources"),
  verbs: z
    .array(z.string().min(1))
    .min(1, "must list at least one verb")
    .max(grantableVerbs.length, `must list at most ${grantableVerbs.length} verbs`),
  /** Narrows the rule to these objects; fine for every verb but create, list, watch and deletecollection. */
  resourceNames: z.array(z.string().min(1).max(253)).max(100, "must list at most 100 names").optional(),
});
export type PolicyRule = z.infer<typeof policyRule>;

export const clusterSetupConfigSchema = z
  .object({
    clusterStack: configFields.stackName("cluster"),
    pulumiAccessToken: z
      .string()
      .min(1, "must be set: pulumi config set --secret pulumiAccessToken <token>")
      .max(1000),
    stacksNamespace: dnsLabel
      .refine((ns) => !isReservedNamespace(ns), {
        message: `must be a namespace of its own, not the cluster's or an add-on's (${reservedNamespaces.join(", ")}, kube-*): the stack owns it`,
      })
      .default("pulumi-stacks"),
    stackServiceAccount: dnsLabel.default("pulumi-stacks"),
    // Empty (the default): every environment of kargo/pipeline.ts, so a fork adds one in the pipeline alone.
    stackEnvironments: z
      .array(dnsLabel)
      .default([])
      .transform((envs) => (envs.length > 0 ? envs : Object.keys(pipeline.environments)))
      .pipe(
        z
          .array(dnsLabel)
          .min(1, "must list at least one environment")
          .max(
            MAX_ENVIRONMENTS,
            `must list at most ${MAX_ENVIRONMENTS} environments (lib/pipeline/schema.ts)`,
          )
          .refine((envs) => new Set(envs).size === envs.length, { message: "must not repeat an environment" })
          .refine((envs) => !envs.includes("preview"), {
            message:
              '"preview" names the read-only identity previews run under; name the environment otherwise',
          }),
      ),
    stackPolicyArns: z
      .array(configFields.iamPolicyArn)
      .max(
        19,
        "must list at most 19 policies: IAM attaches at most 20 managed policies to a role (10 until you raise the quota), and the kargo project adds one",
      )
      .refine((arns) => new Set(arns).size === arns.length, { message: "must not repeat a policy ARN" })
      .refine(
        (arns) =>
          !arns.some((arn) => /:policy\/(AdministratorAccess|PowerUserAccess|IAMFullAccess)$/.test(arn)),
        {
          message:
            "must not grant administrator, power-user or IAM-wide access: every environment's programs would hold it",
        },
      )
      .default([]),
    stackRbacScope: z
      .enum(["namespace", "cluster"], {
        error: 'allowed values are "namespace" (a Role in the stacks namespace, the default) and "cluster"',
      })
      .default("namespace"),
    stackRbacRules: z.array(policyRule).max(50, "must list at most 50 rules").default([]),
    argocdProject: dnsLabel.default("pulumi-stacks"),
    cognitoMfa: z.enum(["OFF", "OPTIONAL", "ON"]).default("ON"),
    cognitoDomainPrefix: z
      .string()
      .regex(
        /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/,
        "must be lower-case letters, digits and '-', at most 63",
      )
      .refine((prefix) => !reservedDomainWords.some((word) => prefix.includes(word)), {
        message: 'must not contain "aws", "amazon" or "cognito" (Cognito reserves them)',
      })
      .or(z.literal(""))
      .default(""),
    cognitoDeletionProtection: z
      .boolean({ error: "must be true or false (false only to delete the user pool on purpose)" })
      .default(true),
    cognitoAdminGroup: groupName.default("platform-admins"),
    cognitoApproverGroups: z
      .array(groupName)
      .min(1, "must list at least one approver group")
      .max(50, "must list at most 50 approver groups")
      .refine((groups) => new Set(groups).size === groups.length, { message: "must not repeat a group" })
      .default(["dev-approvers", "qa-approvers", "security-approvers"]),
    certManagerValues: chartValues,
    argoCdValues: chartValues,
    argoRolloutsValues: chartValues,
    argoEventsValues: chartValues,
    pulumiOperatorValues: chartValues,
    karpenterValues: chartValues,
    burstCpuLimit: z
      .number()
      .int()
      .min(1, "must be at least 1 (a burst node of the base's smallest size has 2 vCPUs)")
      .max(256, "must be at most 256")
      .default(8),
    burstMemoryGiB: z
      .number()
      .int()
      .min(2, "must be at least 2")
      .max(1024, "must be at most 1024")
      .default(32),
    karpenterInterruptionQueue: z
      .boolean({ error: "must be true (an SQS queue of EC2 interruption events) or false (the default)" })
      .default(false),
    burstConsolidateAfterSeconds: z
      .number()
      .int()
      .min(30, "must be at least 30: a shorter wait replaces a node between two stages of one promotion")
      .max(3600, "must be at most 3600: an empty node costs money while it waits")
      .default(120),
    // Notifications (cluster-setup/addons/notifications.ts): none set, none sent. A Slack channel with the bot
    // token that posts to it, and/or a generic webhook URL, whose query may hold a key: both tokens are secrets.
    notifySlackChannel: optionalKey(
      z
        .string()
        .regex(
          /^#?[a-z0-9][a-z0-9._-]{0,79}$|^[CGD][A-Z0-9]{8,}$/,
          "must be a Slack channel name (#infra-changes: lower-case letters, digits, '.', '_', '-') or a channel ID (C0123ABCDEF)",
        ),
    ),
    notifySlackToken: optionalKey(
      z
        .string()
        .max(1000, "must be at most 1000 characters")
        .regex(
          /^xox[a-z]-[\x21-\x7e]+$/,
          "must be a Slack token as issued (xoxb-...), one that may post to the channel",
        ),
    ),
    notifyWebhookUrl: optionalKey(
      z
        .string()
        .max(2000, "must be at most 2000 characters")
        .regex(/^https:\/\/[^\s/?#]+[^\s]*$/, "must be an https:// URL"),
    ),
    // Whom Slack notifies of a stop: each group that decides stops (kargo/pipeline.ts deciders) to its Slack
    // user group or user, written into the stop's message unescaped, so only a mention's exact form passes.
    notifySlackMentions: z
      .record(
        z.string(),
        z
          .string()
          .regex(
            slackMention,
            "must be a Slack user group mention (<!subteam^S0123ABCD>) or a user mention (<@U0123ABCD>)",
          ),
        {
          error:
            'must map a group that decides stops to its Slack mention: {"security-approvers": "<!subteam^S0123ABCD>"}',
        },
      )
      .default({}),
  })
  .superRefine((c, ctx) => {
    for (const [key, other, what] of [
      ["notifySlackChannel", "notifySlackToken", "the bot token that posts there"],
      ["notifySlackToken", "notifySlackChannel", "the channel it posts to"],
    ] as const) {
      if (c[key] !== undefined && c[other] === undefined)
        ctx.addIssue({
          code: "custom",
          path: [other],
          message: `must be set with cluster-setup:${key}: ${what}${other === "notifySlackToken" ? " (pulumi config set --secret notifySlackToken xoxb-...)" : ""}`,
        });
    }
    const deciders = decidingGroups();
    for (const group of Object.keys(c.notifySlackMentions))
      if (!deciders.includes(group))
        ctx.addIssue({
          code: "custom",
          path: ["notifySlackMentions", group],
          message: `"${group}" decides no stop in kargo/pipeline.ts; allowed: ${deciders.join(", ") || "none (no environment stops)"}`,
        });
    if (Object.keys(c.notifySlackMentions).length > 0 && c.notifySlackChannel === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["notifySlackChannel"],
        message: "must be set with cluster-setup:notifySlackMentions: the channel the mentions are made in",
      });
    if (c.cognitoApproverGroups.includes(c.cognitoAdminGroup)) {
      ctx.addIssue({
        code: "custom",
        path: ["cognitoApproverGroups"],
        message: `must not include the admin group "${c.cognitoAdminGroup}"`,
      });
    }
    c.stackRbacRules.forEach((rule, i) => {
      const problem = escalation(rule, c.stackRbacScope);
      if (problem) ctx.addIssue({ code: "custom", path: ["stackRbacRules", i], message: problem });
    });
    // An environment in another account is annotated with its role's ARN there, so the account must be one.
    for (const env of c.stackEnvironments) {
      const account = accountOf(pipeline.environments, env);
      if (account !== undefined && !ACCOUNT_ID.test(account))
        ctx.addIssue({
          code: "custom",
          path: ["stackEnvironments"],
          message: `environment "${env}": kargo/pipeline.ts environments.${env}.aws.accountId "${account}" is not an AWS account ID; allowed: exactly twelve digits`,
        });
    }
    for (const name of [...c.stackEnvironments, "preview"].map((e) => `${c.stackServiceAccount}-${e}`)) {
      if (name.length > 63) {
        ctx.addIssue({
          code: "custom",
          path: ["stackEnvironments"],
          message: `gives ServiceAccount "${name}" (${name.length} characters; at most 63): shorten stackServiceAccount or the environment`,
        });
      }
    }
  });

export type ClusterSetupConfig = ReturnType<typeof loadClusterSetupConfig>;

/** Reads and checks cluster-setup's config, and the fork's identity (`identity`: lib/fork.ts unless a test says). */
export const loadClusterSetupConfig = (identity: ForkIdentity = fork) => {
  const config = loadConfig(clusterSetupConfigSchema, {
    secrets: ["pulumiAccessToken", "notifySlackToken", "notifyWebhookUrl"],
    secretCapable: [
      "certManagerValues",
      "argoCdValues",
      "argoRolloutsValues",
      "argoEventsValues",
      "pulumiOperatorValues",
    ],
    requireRegion: true,
  });
  // The fork's repository, the one Argo CD may sync Stack manifests from, is the pipeline's (lib/fork.ts).
  const problems = identityProblems(identity);
  if (problems.length > 0) {
    throw new pulumi.RunError(
      `Invalid fork identity in lib/fork.ts (set it with npm run personalize):\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
  }
  // Environment → the account kargo/pipeline.ts names for it; the rest act in the cluster's account.
  const stackAccounts = Object.fromEntries(
    config.stackEnvironments.flatMap((env) => {
      const account = accountOf(pipeline.environments, env);
      return account === undefined ? [] : [[env, account]];
    }),
  );
  return { ...config, stacksRepoURL: identity.githubRepo, stackAccounts };
};

/**
 * `platform-<stack>-<account>` when `cognitoDomainPrefix` is empty. A stack name that would make Cognito
 * refuse it (a reserved word, too long) stops the program here, naming the key that fixes it.
 */
export function defaultDomainPrefix(stack: string, accountId: pulumi.Input<string>): pulumi.Output<string> {
  const head = `platform-${stack.toLowerCase().replace(/[^a-z0-9-]/g, "-")}`;
  const problems: string[] = [];
  const reserved = reservedDomainWords.filter((word) => head.includes(word));
  if (reserved.length > 0) {
    problems.push(
      `cluster-setup:cognitoDomainPrefix: the default "${head}-<account id>" contains "${reserved.join('", "')}", ` +
        "which Cognito reserves; set cognitoDomainPrefix to a prefix without it",
    );
  }
  // 63 characters at most, 12 of them the account id and one the hyphen before it.
  if (head.length > 50) {
    problems.push(
      `cluster-setup:cognitoDomainPrefix: the default "${head}-<account id>" is longer than 63 characters; ` +
        "set cognitoDomainPrefix",
    );
  }
  if (problems.length > 0) throw new ConfigError("cluster-setup", problems);
  return pulumi.interpolate`${head}-${accountId}`;
}
