// Where each environment acts in AWS: the cluster's own account, or the account its definition names
// (environments.<name>.aws). In another account the kargo project makes the environment's identities
// (kargo/accounts.ts): an IAM OIDC provider for the cluster's issuer, an update role per environment and one
// read-only preview role per account, each trusting exactly one ServiceAccount of the cluster.
import type { Pipeline, PipelineInput } from "./schema";

type Environments = Pipeline["environments"] | PipelineInput["environments"];

/** The account an environment names, or undefined for the cluster's own. */
export const accountOf = (environments: Environments, environment: string): string | undefined =>
  Object.hasOwn(environments, environment) ? environments[environment]!.aws?.accountId : undefined;

/** Every account the environments name, each once, in order. */
export const namedAccounts = (environments: Environments): string[] =>
  [
    ...new Set(
      Object.values(environments)
        .map((e) => e.aws?.accountId)
        .filter((a): a is string => a !== undefined),
    ),
  ].sort();

/** The environments that act in `account`. */
export const environmentsIn = (environments: Environments, account: string): string[] =>
  Object.keys(environments).filter((e) => accountOf(environments, e) === account);

/** The ServiceAccount previews run as: `<base>-preview`, or `<base>-preview-<account>` in a named account. */
export const previewServiceAccount = (base: string, account: string | undefined): string =>
  account === undefined ? `${base}-preview` : `${base}-preview-${account}`;

/**
 * The roles in a named account: `<base>-<environment>` for an update, `<base>-preview` for previews. Fixed
 * names, so cluster-setup annotates each ServiceAccount with its role's ARN before kargo makes the role, and
 * the account's deploy role may manage `<base>-*` and nothing else (lib/account-bootstrap.ts).
 */
export const accountRoleName = (base: string, environment?: string): string =>
  environment === undefined ? `${base}-preview` : `${base}-${environment}`;

export const roleArn = (partition: string, account: string, name: string): string =>
  `arn:${partition}:iam::${account}:role/${name}`;

/** The role in each named account that the kargo project's deploy assumes, made once by `npm run account`. */
export const ACCOUNT_DEPLOY_ROLE = "platform-account-deployer";
