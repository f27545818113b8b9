import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { ConfigError, configFields, loadConfig } from "../lib/config";

/** Words Cognito refuses anywhere in a hosted-UI domain prefix (CreateUserPoolDomain). */
export const reservedDomainWords = ["aws", "amazon", "cognito"] as const;

const dnsLabel = z
  .string()
  .regex(
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
    "must be a DNS label: lower-case letters, digits and '-', at most 63",
  );
const groupName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
  );
const chartValues = z.record(z.string(), z.unknown()).default({});
const policyRule = z.strictObject({
  apiGroups: z.array(z.string()).min(1, "must list at least one API group ('' is the core group)"),
  resources: z.array(z.string().min(1)).min(1, "must list at least one resource"),
  verbs: z.array(z.string().min(1)).min(1, "must list at least one verb"),
});
const everything = (rule: z.infer<typeof policyRule>) =>
  rule.apiGroups.includes("*") && rule.resources.includes("*") && rule.verbs.includes("*");

export const clusterSetupConfigSchema = z
  .object({
    clusterStack: configFields.stackName("cluster"),
    pulumiAccessToken: z.string().min(1, "must be set: pulumi config set --secret pulumiAccessToken <token>"),
    stacksRepoURL: z
      .string()
      .regex(/^https:\/\/[^\s/@]+\/\S+$/, "must be the HTTPS URL of the git repository that holds stacks/"),
    stacksNamespace: dnsLabel.default("pulumi-stacks"),
    stackServiceAccount: dnsLabel.default("pulumi-stacks"),
    stackPolicyArns: z.array(configFields.iamPolicyArn).default([]),
    stackRbacRules: z
      .array(
        policyRule.refine((rule) => !everything(rule), {
          message: "grants everything (cluster-admin); grant only what your programs manage",
        }),
      )
      .default([]),
    argocdProject: dnsLabel.default("pulumi-stacks"),
    cognitoMfa: z.enum(["OFF", "OPTIONAL", "ON"]).default("OPTIONAL"),
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
      .refine((groups) => new Set(groups).size === groups.length, { message: "must not repeat a group" })
      .default(["dev-approvers", "qa-approvers", "security-approvers"]),
    certManagerValues: chartValues,
    argoCdValues: chartValues,
    argoRolloutsValues: chartValues,
    pulumiOperatorValues: chartValues,
  })
  .superRefine((c, ctx) => {
    if (c.cognitoApproverGroups.includes(c.cognitoAdminGroup)) {
      ctx.addIssue({
        code: "custom",
        path: ["cognitoApproverGroups"],
        message: `must not include the admin group "${c.cognitoAdminGroup}"`,
      });
    }
  });

export type ClusterSetupConfig = ReturnType<typeof loadClusterSetupConfig>;

export const loadClusterSetupConfig = () =>
  loadConfig(clusterSetupConfigSchema, { secrets: ["pulumiAccessToken"] });

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
