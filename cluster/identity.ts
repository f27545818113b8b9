import * as pulumi from "@pulumi/pulumi";

interface IamRole {
  partition: string;
  account: string;
  name: string;
}

/**
 * The IAM role an ARN names, for a role ARN (`arn:aws:iam::<account>:role/<path/>name`) or the STS ARN of a
 * session of that role (`arn:aws:sts::<account>:assumed-role/<name>/<session>`, what GetCallerIdentity
 * returns when `pulumi up` runs under an assumed role). The role's path is not part of the session ARN, and
 * role names are unique within an account, so partition, account and name identify the role.
 */
export function iamRoleOf(arn: string): IamRole | undefined {
  const role = /^arn:([a-z-]+):iam::(\d{12}):role\/(?:.*\/)?([^/]+)$/.exec(arn);
  if (role) return { partition: role[1]!, account: role[2]!, name: role[3]! };
  const session = /^arn:([a-z-]+):sts::(\d{12}):assumed-role\/([^/]+)\/[^/]+$/.exec(arn);
  if (session) return { partition: session[1]!, account: session[2]!, name: session[3]! };
  return undefined;
}

export const sameIamRole = (a: string, b: string): boolean => {
  const [x, y] = [iamRoleOf(a), iamRoleOf(b)];
  return !!x && !!y && x.partition === y.partition && x.account === y.account && x.name === y.name;
};

/**
 * Access-entry keys name the component's child resources, so two roles of the same name in different
 * accounts must get different keys (a plain object keyed by name alone keeps only the last).
 */
export const accessEntryKey = (prefix: string, roleArn: string): string => {
  const role = iamRoleOf(roleArn);
  return role ? `${prefix}-${role.account}-${role.name}` : `${prefix}-${roleArn}`;
};

/**
 * EKS gives the identity that creates the cluster an access entry of its own
 * (`bootstrapClusterCreatorAdminPermissions`, always on in pulumi-eks v4.3.0 nodejs/eks/cluster/cluster.ts), so
 * declaring another one for it makes CreateAccessEntry fail with ResourceInUseException halfway through the
 * first `pulumi up`. Stops before any resource is registered instead.
 */
export function checkCreatorNotListed(callerArn: string, configured: Record<string, string[]>): void {
  const clashes = Object.entries(configured).flatMap(([key, arns]) =>
    arns.filter((arn) => sameIamRole(callerArn, arn)).map((arn) => `cluster:${key} lists ${arn}`),
  );
  if (clashes.length === 0) return;
  throw new pulumi.RunError(
    `The identity running this pulumi up (${callerArn}) creates the EKS cluster and becomes its admin ` +
      `through EKS's own access entry, so it must not be listed again:\n` +
      clashes.map((c) => `  - ${c}`).join("\n") +
      `\nRun the first pulumi up as another identity (a person's admin role), or remove it from the list.`,
  );
}
