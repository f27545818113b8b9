// The AWS account and region an environment names (environments.<name>.aws): each checked before anything
// is registered, naming the field and what is allowed.
import { Region } from "@pulumi/aws/types/enums";
import type { ParsedPipeline } from "./schema";

/** Every region the pinned @pulumi/aws (7.48.0) knows, from its Region enum. */
export const AWS_REGIONS: readonly string[] = Object.values(Region).sort();

/** An AWS account ID: twelve digits, leading zeros included. */
export const ACCOUNT_ID = /^\d{12}$/;

/**
 * The account and region of every environment. Two environments may share an account, protected or not:
 * each still has its own role reaching only its own stacks' resources (check-reach.ts refuses names that
 * would let one reach another's, and `npm run plan` any policy that does, as an IAM policy engine answers), so
 * sharing changes billing and quotas, not what one environment's promotion can touch.
 */
export function accountProblems(p: ParsedPipeline): string[] {
  const problems: string[] = [];
  for (const [name, env] of Object.entries(p.environments)) {
    if (!env.aws) continue;
    const at = `environments.${name}.aws`;
    if (!ACCOUNT_ID.test(env.aws.accountId))
      problems.push(
        `${at}.accountId: "${env.aws.accountId}" is not an AWS account ID; allowed: exactly twelve digits, such as "210987654321" (leave aws out for the cluster's own account)`,
      );
    if (env.aws.region !== undefined && !AWS_REGIONS.includes(env.aws.region))
      problems.push(
        `${at}.region: "${env.aws.region}" is not an AWS region @pulumi/aws knows; allowed: ${AWS_REGIONS.join(", ")}`,
      );
    // Another account's previews run as <serviceAccountName>-preview-<account> (accounts.ts).
    const other = Object.keys(p.environments).find((e) => e === `preview-${env.aws!.accountId}`);
    if (other)
      problems.push(
        `environments.${other}: its ServiceAccount would be the one previews in account ${env.aws.accountId} run as; name the environment otherwise`,
      );
  }
  return problems;
}
