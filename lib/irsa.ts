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
