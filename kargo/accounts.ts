// The environments' identities in the AWS accounts kargo/pipeline.ts names (environments.<name>.aws). The
// account trusts the cluster's OIDC issuer directly (docs/accounts.md, "How the workspace reaches the
// account"): an IAM OIDC provider there, an update role per environment and one read-only preview role,
// each assumable by exactly one ServiceAccount of the cluster, with the programs' policies. cluster-setup
// made those ServiceAccounts, annotated with these roles' fixed names. Removing an environment from the
// pipeline removes its role and policies on the next `pulumi up`; the last one of an account, its provider.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { irsaTrustPolicy } from "../lib/irsa";
import { policyResourceName, previewPolicy, updatePolicy } from "../lib/pipeline/access";
import {
  ACCOUNT_DEPLOY_ROLE,
  accountRoleName,
  environmentsIn,
  namedAccounts,
  previewServiceAccount,
  roleArn,
} from "../lib/pipeline/accounts";
import type { Pipeline } from "../lib/pipeline/schema";

export interface AccountIdentitiesArgs {
  pipeline: Pipeline;
  /** The cluster's account and partition, and its OIDC issuer (`https://oidc.eks...`). */
  cluster: { account: string; partition: string; region: string; oidcIssuerUrl: pulumi.Input<string> };
  /** The provider of the cluster's own account: a named account that is the cluster's uses it. */
  clusterProvider: aws.Provider;
  tags: Record<string, string>;
}

/** The identities of every named account's environments, one provider per account. */
export class AccountIdentities extends pulumi.ComponentResource {
  /** Account → environment → the ARN of its update role there. */
  readonly roleArns: Record<string, Record<string, pulumi.Output<string>>> = {};

  constructor(name: string, args: AccountIdentitiesArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:AccountIdentities", name, {}, opts);
    const { pipeline: p, cluster } = args;
    const base = p.stacks.serviceAccountName;
    const issuerUrl = pulumi.output(cluster.oidcIssuerUrl);

    for (const account of namedAccounts(p.environments)) {
      // The cluster's own account, named explicitly, is the same account: its OIDC provider exists already.
      const same = account === cluster.account;
      const provider = same
        ? args.clusterProvider
        : new aws.Provider(
            `account-${account}`,
            {
              region: cluster.region as aws.Region,
              // Never acts in any other account, whatever the role it is given.
              allowedAccountIds: [account],
              assumeRoles: [
                {
                  roleArn: roleArn(cluster.partition, account, ACCOUNT_DEPLOY_ROLE),
                  sessionName: `platform-kargo-${pulumi.getStack()}`.slice(0, 64),
                },
              ],
            },
            { parent: this },
          );
      const opts = { parent: this, provider };
      const oidcProviderArn: pulumi.Input<string> = same
        ? issuerUrl.apply(
            (url) =>
              `arn:${cluster.partition}:iam::${account}:oidc-provider/${url.replace(/^https:\/\//, "")}`,
          )
        : new aws.iam.OpenIdConnectProvider(
            `account-${account}-oidc`,
            { url: issuerUrl, clientIdLists: ["sts.amazonaws.com"], tags: args.tags },
            opts,
          ).arn;

      const role = (environment: string | undefined) => {
        const roleName = accountRoleName(base, environment);
        const serviceAccount =
          environment === undefined ? previewServiceAccount(base, account) : `${base}-${environment}`;
        return new aws.iam.Role(
          `account-${account}-${environment ?? "preview"}`,
          {
            name: roleName,
            description: `Assumed by ServiceAccount ${p.stacks.namespace}/${serviceAccount}: ${
              environment === undefined
                ? `read-only AWS identity of the previews in account ${account}`
                : `the AWS identity of environment ${environment}'s PKO stacks`
            }`,
            assumeRolePolicy: pulumi
              .all([oidcProviderArn, issuerUrl])
              .apply(([arn, url]) => irsaTrustPolicy(arn, url, p.stacks.namespace, serviceAccount)),
            maxSessionDuration: 3600,
            tags: args.tags,
          },
          opts,
        );
      };

      this.roleArns[account] = {};
      for (const environment of environmentsIn(p.environments, account)) {
        const update = role(environment);
        this.roleArns[account][environment] = update.arn;
        for (const program of p.programs) {
          const policy = updatePolicy(p, program, environment, cluster.partition);
          if (policy)
            new aws.iam.RolePolicy(
              policyResourceName(program.name, environment),
              { role: update.name, policy: JSON.stringify(policy) },
              opts,
            );
        }
      }
      const preview = role(undefined);
      for (const program of p.programs) {
        const policy = previewPolicy(p, program, cluster.partition, account);
        if (policy)
          new aws.iam.RolePolicy(
            policyResourceName(program.name, undefined, account),
            { role: preview.name, policy: JSON.stringify(policy) },
            opts,
          );
      }
    }
    this.registerOutputs({});
  }
}
