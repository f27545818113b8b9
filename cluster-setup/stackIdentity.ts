import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export interface StackIdentityArgs {
  provider: k8s.Provider;
  /** Namespace the PKO Stacks (and their workspace pods) live in. */
  namespace: string;
  serviceAccountName: string;
  /** ARN of the cluster's IAM OIDC provider. */
  oidcProviderArn: pulumi.Input<string>;
  /** Its issuer URL, `https://oidc.eks.<region>.amazonaws.com/id/<id>`. */
  oidcProviderUrl: pulumi.Input<string>;
  /** Managed policies the programs' AWS role gets; none by default. */
  policyArns: string[];
  /** Kubernetes permissions for programs that manage in-cluster resources; none by default. */
  rbacRules: PolicyRule[];
  /** Pulumi Cloud access token the workspace pods log in with. */
  pulumiAccessToken: pulumi.Input<string>;
  tags: Record<string, string>;
  /**
   * The operator that removes the finalizers of the Stacks in the namespace. The namespace depends on it so
   * `pulumi destroy` deletes the namespace (and its Stacks) while the operator still runs; deleted after it,
   * the namespace would hang in Terminating on Stacks nobody finalizes.
   */
  operator?: pulumi.Resource;
}

/** The IAM trust policy that lets exactly one ServiceAccount assume a role through the cluster's OIDC provider. */
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

/**
 * The identity PKO runs stacks under: a namespace, a ServiceAccount (bound to `system:auth-delegator`, which
 * PKO v2 workspaces need) that gets AWS access through IRSA rather than keys, and the Pulumi access token
 * as a Secret. No cluster-admin: in-cluster permissions only as configured.
 */
export class StackIdentity extends pulumi.ComponentResource {
  readonly namespace: pulumi.Output<string>;
  readonly serviceAccountName: pulumi.Output<string>;
  readonly roleArn: pulumi.Output<string>;
  readonly roleName: pulumi.Output<string>;
  readonly accessTokenSecretName: pulumi.Output<string>;

  constructor(name: string, args: StackIdentityArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster-setup:StackIdentity", name, {}, opts);
    const k8sOpts = { parent: this, provider: args.provider };

    const namespace = new k8s.core.v1.Namespace(
      name,
      { metadata: { name: args.namespace, labels: { "app.kubernetes.io/part-of": "pulumi-stacks" } } },
      { ...k8sOpts, dependsOn: args.operator ? [args.operator] : [] },
    );

    const role = new aws.iam.Role(
      name,
      {
        description: `Assumed by ServiceAccount ${args.namespace}/${args.serviceAccountName}: the AWS identity of PKO stacks`,
        assumeRolePolicy: pulumi
          .all([args.oidcProviderArn, args.oidcProviderUrl])
          .apply(([arn, url]) => irsaTrustPolicy(arn, url, args.namespace, args.serviceAccountName)),
        maxSessionDuration: 3600,
        tags: args.tags,
      },
      { parent: this },
    );
    args.policyArns.forEach(
      (policyArn, i) =>
        new aws.iam.RolePolicyAttachment(
          `${name}-policy-${i}`,
          { role: role.name, policyArn },
          { parent: this },
        ),
    );

    const serviceAccount = new k8s.core.v1.ServiceAccount(
      name,
      {
        metadata: {
          name: args.serviceAccountName,
          namespace: namespace.metadata.name,
          annotations: { "eks.amazonaws.com/role-arn": role.arn },
        },
      },
      k8sOpts,
    );

    new k8s.rbac.v1.ClusterRoleBinding(
      `${name}-auth-delegator`,
      {
        metadata: { name: `${args.namespace}-${args.serviceAccountName}-auth-delegator` },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "system:auth-delegator",
        },
        subjects: [{ kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: args.namespace }],
      },
      k8sOpts,
    );

    if (args.rbacRules.length > 0) {
      const clusterRole = new k8s.rbac.v1.ClusterRole(
        `${name}-programs`,
        { metadata: { name: `${args.namespace}-programs` }, rules: args.rbacRules },
        k8sOpts,
      );
      new k8s.rbac.v1.ClusterRoleBinding(
        `${name}-programs`,
        {
          metadata: { name: `${args.namespace}-programs` },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: clusterRole.metadata.name,
          },
          subjects: [
            { kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: args.namespace },
          ],
        },
        k8sOpts,
      );
    }

    const token = new k8s.core.v1.Secret(
      `${name}-pulumi-access-token`,
      {
        metadata: { name: "pulumi-access-token", namespace: namespace.metadata.name },
        type: "Opaque",
        stringData: { accessToken: pulumi.secret(args.pulumiAccessToken) },
      },
      k8sOpts,
    );

    this.namespace = namespace.metadata.name;
    this.serviceAccountName = serviceAccount.metadata.name;
    this.roleArn = role.arn;
    this.roleName = role.name;
    this.accessTokenSecretName = token.metadata.name;
    this.registerOutputs({
      namespace: this.namespace,
      serviceAccountName: this.serviceAccountName,
      roleArn: this.roleArn,
      accessTokenSecretName: this.accessTokenSecretName,
    });
  }
}
