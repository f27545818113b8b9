import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/**
 * The IAM trust policy that lets exactly one ServiceAccount assume a role through the cluster's OIDC provider
 * (IRSA): the token's subject names the ServiceAccount, its audience is STS.
 */
export function irsaTrustPolicy(
  oidcProviderArn: string,
  oidcProviderUrl: string,
  namespace: string,
  serviceAccount: string,
): string {
  const issuer = oidcProviderUrl.replace(/^https:\/\//, "");
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [
      {
        Effect: "Allow",
        Principal: { Federated: oidcProviderArn },
        Action: "sts:AssumeRoleWithWebIdentity",
        Condition: {
          StringEquals: {
            [`${issuer}:sub`]: `system:serviceaccount:${namespace}:${serviceAccount}`,
            [`${issuer}:aud`]: "sts.amazonaws.com",
          },
        },
      },
    ],
  });
}

export interface IrsaRoleArgs {
  oidcProviderArn: pulumi.Input<string>;
  oidcProviderUrl: pulumi.Input<string>;
  /** The one ServiceAccount that may assume the role. */
  serviceAccount: { namespace: string; name: string };
  /** What the role is for, in its description. */
  purpose: string;
  tags?: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

/** An IAM role exactly one ServiceAccount assumes through the cluster's OIDC provider, for an hour at most. */
export function irsaRole(name: string, args: IrsaRoleArgs, opts: pulumi.CustomResourceOptions): aws.iam.Role {
  const { namespace, name: account } = args.serviceAccount;
  return new aws.iam.Role(
    name,
    {
      description: `Assumed by ServiceAccount ${namespace}/${account}: ${args.purpose}`,
      assumeRolePolicy: pulumi
        .all([args.oidcProviderArn, args.oidcProviderUrl])
        .apply(([arn, url]) => irsaTrustPolicy(arn, url, namespace, account)),
      maxSessionDuration: 3600,
      tags: args.tags,
    },
    opts,
  );
}
