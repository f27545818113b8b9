import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { irsaRole } from "../lib/irsa";
import { accountRoleName, roleArn } from "../lib/pipeline/accounts";
import type { PolicyRule } from "./config";

export interface StackIdentityArgs {
  provider: k8s.Provider;
  /** Namespace the PKO Stacks (and their workspace pods) live in. */
  namespace: string;
  /** Base ServiceAccount name: each environment runs as `<base>-<environment>`, previews as `<base>-preview`. */
  serviceAccountName: string;
  /** The environments of the pipeline, each with an identity of its own. */
  environments: string[];
  /**
   * Environment → the AWS account it names (kargo/pipeline.ts `aws.accountId`); the others act in the
   * cluster's account. A named account's roles are made there by the kargo project (kargo/accounts.ts);
   * here each such environment, and each such account's previews, get a ServiceAccount naming that role.
   */
  accounts: Record<string, string>;
  /** ARN of the cluster's IAM OIDC provider. */
  oidcProviderArn: pulumi.Input<string>;
  /** Its issuer URL, `https://oidc.eks.<region>.amazonaws.com/id/<id>`. */
  oidcProviderUrl: pulumi.Input<string>;
  /** Managed policies every cluster-account environment's AWS role gets (never a preview's); none by default. */
  policyArns: string[];
  /** Kubernetes permissions for programs that manage in-cluster resources; none by default. */
  rbacRules: PolicyRule[];
  /** Where `rbacRules` apply: the stacks namespace (a Role, the default) or the whole cluster. */
  rbacScope: "namespace" | "cluster";
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

/** One identity as the kargo project reads it. */
export interface Identity {
  serviceAccountName: pulumi.Output<string>;
  roleName: pulumi.Output<string>;
  roleArn: pulumi.Output<string>;
}

const READ_VERBS = ["get", "list", "watch"];

/** The same rules reduced to reading: what a preview needs to compute a diff, and nothing it could change. */
export function readOnlyRules(rules: PolicyRule[]): PolicyRule[] {
  return rules
    .map((rule) => ({ ...rule, verbs: rule.verbs.filter((v) => READ_VERBS.includes(v)) }))
    .filter((rule) => rule.verbs.length > 0);
}

/**
 * The identities PKO runs stacks under, in one namespace with the Pulumi access token as a Secret: per
 * environment a ServiceAccount with an IAM role of its own (IRSA, no keys), so a promotion into one
 * environment cannot touch another's resources; and one read-only identity for every preview. Each
 * ServiceAccount is bound to `system:auth-delegator`, which PKO v2 workspaces need. No cluster-admin:
 * in-cluster permissions only as configured, in the stacks namespace unless the cluster scope is asked for.
 */
export class StackIdentity extends pulumi.ComponentResource {
  readonly namespace: pulumi.Output<string>;
  /** Environment name → its identity. */
  readonly environments: Record<string, Identity>;
  /** The read-only identity previews run under. */
  readonly preview: Identity;
  /** Account → the read-only identity previews of that named account's environments run under. */
  readonly accountPreviews: Record<string, Identity>;
  readonly accessTokenSecretName: pulumi.Output<string>;

  constructor(name: string, args: StackIdentityArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster-setup:StackIdentity", name, {}, opts);
    const k8sOpts = { parent: this, provider: args.provider };

    const namespace = new k8s.core.v1.Namespace(
      name,
      { metadata: { name: args.namespace, labels: { "app.kubernetes.io/part-of": "pulumi-stacks" } } },
      { ...k8sOpts, dependsOn: args.operator ? [args.operator] : [] },
    );

    // The partition of the cluster's account, which every account of the pipeline shares.
    const partition = pulumi.output(args.oidcProviderArn).apply((arn) => arn.split(":")[1]!);
    /** A role in the cluster's account, or (`remote`) the one kargo makes in a named account. */
    const identity = (
      suffix: string,
      purpose: string,
      policyArns: string[],
      remote?: { account: string; roleName: string },
    ) => {
      const serviceAccountName = `${args.serviceAccountName}-${suffix}`;
      let role: { name: pulumi.Output<string>; arn: pulumi.Output<string> };
      if (remote === undefined) {
        role = irsaRole(
          `${name}-${suffix}`,
          {
            ...args,
            serviceAccount: { namespace: args.namespace, name: serviceAccountName },
            purpose,
          },
          { parent: this },
        );
        policyArns.forEach(
          (policyArn, i) =>
            new aws.iam.RolePolicyAttachment(
              `${name}-${suffix}-policy-${i}`,
              { role: role.name, policyArn },
              { parent: this },
            ),
        );
      } else {
        role = {
          name: pulumi.output(remote.roleName),
          arn: partition.apply((part) => roleArn(part, remote.account, remote.roleName)),
        };
      }
      const serviceAccount = new k8s.core.v1.ServiceAccount(
        `${name}-${suffix}`,
        {
          metadata: {
            name: serviceAccountName,
            namespace: namespace.metadata.name,
            annotations: { "eks.amazonaws.com/role-arn": role.arn },
          },
        },
        k8sOpts,
      );
      new k8s.rbac.v1.ClusterRoleBinding(
        `${name}-${suffix}-auth-delegator`,
        {
          metadata: { name: `${args.namespace}-${serviceAccountName}-auth-delegator` },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: "system:auth-delegator",
          },
          subjects: [
            { kind: "ServiceAccount", name: serviceAccount.metadata.name, namespace: args.namespace },
          ],
        },
        k8sOpts,
      );
      return { serviceAccountName: serviceAccount.metadata.name, roleName: role.name, roleArn: role.arn };
    };

    const accountOf = (env: string) => (Object.hasOwn(args.accounts, env) ? args.accounts[env] : undefined);
    this.environments = Object.fromEntries(
      args.environments.map((env) => [
        env,
        identity(
          env,
          `the AWS identity of environment ${env}'s PKO stacks`,
          args.policyArns,
          accountOf(env) === undefined
            ? undefined
            : { account: accountOf(env)!, roleName: accountRoleName(args.serviceAccountName, env) },
        ),
      ]),
    );
    this.preview = identity("preview", "read-only AWS identity of every PKO preview", []);
    const named = [...new Set(args.environments.map(accountOf).filter((a): a is string => !!a))].sort();
    this.accountPreviews = Object.fromEntries(
      named.map((account) => [
        account,
        identity(`preview-${account}`, "", [], {
          account,
          roleName: accountRoleName(args.serviceAccountName),
        }),
      ]),
    );

    const grant = (suffix: string, rules: PolicyRule[], subjects: Identity[]) => {
      if (rules.length === 0) return;
      const roleName = `${args.namespace}-${suffix}`;
      const subjectList = subjects.map((s) => ({
        kind: "ServiceAccount",
        name: s.serviceAccountName,
        namespace: args.namespace,
      }));
      const roleRef = (kind: string) => ({ apiGroup: "rbac.authorization.k8s.io", kind, name: roleName });
      if (args.rbacScope === "cluster") {
        new k8s.rbac.v1.ClusterRole(`${name}-${suffix}`, { metadata: { name: roleName }, rules }, k8sOpts);
        new k8s.rbac.v1.ClusterRoleBinding(
          `${name}-${suffix}`,
          { metadata: { name: roleName }, roleRef: roleRef("ClusterRole"), subjects: subjectList },
          k8sOpts,
        );
      } else {
        const metadata = { name: roleName, namespace: namespace.metadata.name };
        new k8s.rbac.v1.Role(`${name}-${suffix}`, { metadata, rules }, k8sOpts);
        new k8s.rbac.v1.RoleBinding(
          `${name}-${suffix}`,
          { metadata, roleRef: roleRef("Role"), subjects: subjectList },
          k8sOpts,
        );
      }
    };
    grant("programs", args.rbacRules, Object.values(this.environments));
    grant("previews", readOnlyRules(args.rbacRules), [this.preview, ...Object.values(this.accountPreviews)]);

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
    this.accessTokenSecretName = token.metadata.name;
    this.registerOutputs({
      namespace: this.namespace,
      environments: this.environments,
      preview: this.preview,
      accountPreviews: this.accountPreviews,
      accessTokenSecretName: this.accessTokenSecretName,
    });
  }
}
