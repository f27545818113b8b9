// What a target AWS account needs before its environments' first promotion, made once with that account's
// administrator credentials (`npm run account`, the `account/` project): one role the kargo project's deploy
// assumes there (kargo/accounts.ts), allowed to manage exactly the identities kargo makes in it and nothing
// else. Everything else (the IAM OIDC provider for the cluster's issuer, each environment's update role,
// the account's preview role, the programs' policies) comes from the kargo project through that role, so
// removing an environment from kargo/pipeline.ts removes its access there on the next `pulumi up`.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { ACCOUNT_DEPLOY_ROLE } from "./pipeline/accounts";

/**
 * The IAM calls @pulumi/aws makes to create, read, update and delete an aws.iam.Role with inline policies
 * (aws.iam.RolePolicy), and an aws.iam.OpenIdConnectProvider.
 */
export const accountDeployActions = {
  roles: [
    "iam:CreateRole",
    "iam:DeleteRole",
    "iam:DeleteRolePolicy",
    "iam:GetRole",
    "iam:GetRolePolicy",
    "iam:ListAttachedRolePolicies",
    "iam:ListInstanceProfilesForRole",
    "iam:ListRolePolicies",
    "iam:PutRolePolicy",
    "iam:TagRole",
    "iam:UntagRole",
    "iam:UpdateAssumeRolePolicy",
    "iam:UpdateRole",
    "iam:UpdateRoleDescription",
  ],
  oidcProviders: [
    "iam:AddClientIDToOpenIDConnectProvider",
    "iam:CreateOpenIDConnectProvider",
    "iam:DeleteOpenIDConnectProvider",
    "iam:GetOpenIDConnectProvider",
    "iam:RemoveClientIDFromOpenIDConnectProvider",
    "iam:TagOpenIDConnectProvider",
    "iam:UntagOpenIDConnectProvider",
    "iam:UpdateOpenIDConnectProviderThumbprint",
  ],
};

export interface AccountBootstrapArgs {
  /** The role that runs `pulumi up` of the kargo project, in the cluster's account. */
  deployerArn: string;
  /** The pipeline's `stacks.serviceAccountName`: kargo names every role it makes here `<it>-*`. */
  rolePrefix: string;
  tags: Record<string, string>;
}

/** The deploy role of one target account: assumable by the kargo deployer alone, managing `<prefix>-*` roles. */
export class AccountBootstrap extends pulumi.ComponentResource {
  readonly roleArn: pulumi.Output<string>;

  constructor(name: string, args: AccountBootstrapArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:account:AccountBootstrap", name, {}, opts);
    const { accountId } = aws.getCallerIdentityOutput({}, { parent: this });
    const { partition } = aws.getPartitionOutput({}, { parent: this });
    const role = new aws.iam.Role(
      name,
      {
        name: ACCOUNT_DEPLOY_ROLE,
        description: `Assumed by ${args.deployerArn} (the kargo project's deploy) to manage the platform's ${args.rolePrefix}-* roles and the cluster's OIDC provider here`,
        assumeRolePolicy: JSON.stringify({
          Version: "2012-10-17",
          Statement: [{ Effect: "Allow", Principal: { AWS: args.deployerArn }, Action: "sts:AssumeRole" }],
        }),
        maxSessionDuration: 3600,
        tags: args.tags,
      },
      { parent: this },
    );
    new aws.iam.RolePolicy(
      name,
      {
        role: role.name,
        policy: pulumi.all([partition, accountId]).apply(([part, account]) =>
          JSON.stringify({
            Version: "2012-10-17",
            Statement: [
              {
                Sid: "ThePlatformsRolesOnly",
                Effect: "Allow",
                Action: accountDeployActions.roles,
                Resource: `arn:${part}:iam::${account}:role/${args.rolePrefix}-*`,
              },
              {
                Sid: "EksIssuersOnly",
                Effect: "Allow",
                Action: accountDeployActions.oidcProviders,
                Resource: `arn:${part}:iam::${account}:oidc-provider/oidc.eks.*.amazonaws.com/id/*`,
              },
            ],
          }),
        ),
      },
      { parent: this },
    );
    this.roleArn = role.arn;
    this.registerOutputs({ roleArn: this.roleArn });
  }
}
