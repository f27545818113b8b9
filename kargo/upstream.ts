import * as pulumi from "@pulumi/pulumi";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";
import { programStages } from "../lib/pipeline/graph";
import { stackServiceAccount } from "../lib/pipeline/stack-manifest";
import { riskPolicy, type Pipeline } from "../lib/pipeline/schema";
import { accountOf, accountRoleName, namedAccounts, roleArn } from "../lib/pipeline/accounts";

/** An identity cluster-setup made for PKO stacks: a ServiceAccount and the IAM role it assumes. */
export interface StackIdentity {
  serviceAccountName: string;
  roleName: string;
  roleArn: string;
}

/** Where Argo Events runs, for Kargo's events (cluster-setup/addons/argoEvents.ts EventRouter). */
export interface EventRouterOutput {
  namespace: string;
  eventBus: string;
  slack?: { channel: string; secret: string; key: string };
  webhook: boolean;
}

/** What the kargo project reads from cluster-setup, resolved before any resource is declared. */
export interface ClusterSetup {
  kubeconfig: pulumi.Output<string>;
  pulumiAccessToken: pulumi.Output<string>;
  region: string;
  network: {
    vpcId: string;
    publicSubnetIds: string[];
    nodeSecurityGroupId: string;
    nodeAutoScalingGroupNames: string[];
  };
  stacksRepoURL: string;
  stacksNamespace: string;
  stackServiceAccountName: string;
  /** Environment → the identity its update stages run under. */
  stackIdentities: Record<string, StackIdentity>;
  /** The read-only identity every preview runs under. */
  previewIdentity: StackIdentity;
  /** The EKS cluster's name: kargo reads its OIDC issuer for the accounts the environments name. */
  clusterName: string;
  pulumiAccessTokenSecretName: string;
  /** The StorageClass of the plugin cache's volumes. */
  pluginCacheStorageClass: string;
  /** Whether the cluster runs the EBS CSI driver, which provisions their volumes. */
  ebsCsiDriver: boolean;
  /** Whether the cluster runs the CSI snapshot controller, which takes and restores the cache's snapshot. */
  volumeSnapshots: boolean;
  cognitoUserPoolId: string;
  cognitoRegion: string;
  cognitoIssuerUrl: string;
  cognitoAdminGroup: string;
  cognitoApproverGroups: string[];
  argocdNamespace: string;
  argocdProject: string;
  /** Annotations subscribing each stage's Application to Argo CD's notifications; empty without a destination. */
  argocdSubscriptions: Record<string, string>;
  /** Argo Events for Kargo's events; undefined only from a cluster-setup from before it was always installed. */
  eventRouter?: EventRouterOutput;
  /** The webhook's URL, a secret, when the router has one. */
  eventRouterWebhookUrl?: pulumi.Output<string>;
}

export async function readClusterSetup(stackName: string): Promise<ClusterSetup> {
  const ref = new pulumi.StackReference("cluster-setup", { name: stackName });
  const plain = async <T>(key: string): Promise<T> => {
    const { value } = await ref.getOutputDetails(key);
    if (value === undefined) {
      throw new pulumi.RunError(
        `cluster-setup stack "${stackName}" has no output "${key}"; run pulumi up there first`,
      );
    }
    return value as T;
  };
  const secret = (key: string) => ref.requireOutput(key) as pulumi.Output<string>;
  return {
    kubeconfig: secret("kubeconfig"),
    pulumiAccessToken: secret("pulumiAccessToken"),
    region: await plain("region"),
    network: {
      vpcId: await plain("vpcId"),
      publicSubnetIds: await plain("publicSubnetIds"),
      nodeSecurityGroupId: await plain("nodeSecurityGroupId"),
      nodeAutoScalingGroupNames: await plain("nodeAutoScalingGroupNames"),
    },
    stacksRepoURL: await plain("stacksRepoURL"),
    stacksNamespace: await plain("stacksNamespace"),
    stackServiceAccountName: await plain("stackServiceAccountName"),
    stackIdentities: await plain("stackIdentities"),
    previewIdentity: {
      serviceAccountName: await plain("previewServiceAccountName"),
      roleName: await plain("previewRoleName"),
      roleArn: await plain("previewRoleArn"),
    },
    clusterName: await plain("clusterName"),
    pulumiAccessTokenSecretName: await plain("pulumiAccessTokenSecretName"),
    pluginCacheStorageClass: await plain("pluginCacheStorageClass"),
    ebsCsiDriver: await plain("ebsCsiDriver"),
    volumeSnapshots: await plain("volumeSnapshots"),
    cognitoUserPoolId: await plain("cognitoUserPoolId"),
    cognitoRegion: await plain("cognitoRegion"),
    cognitoIssuerUrl: await plain("cognitoIssuerUrl"),
    cognitoAdminGroup: await plain("cognitoAdminGroup"),
    cognitoApproverGroups: await plain("cognitoApproverGroups"),
    argocdNamespace: await plain("argocdNamespace"),
    argocdProject: await plain("argocdProject"),
    // Optional: a cluster-setup from before notifications has none, and so subscribes nothing.
    argocdSubscriptions:
      ((await ref.getOutputDetails("argocdSubscriptions")).value as Record<string, string> | undefined) ?? {},
    ...(await eventRouterOf(ref)),
  };
}

/** Optional: none from a cluster-setup from before Argo Events was always installed. */
async function eventRouterOf(ref: pulumi.StackReference) {
  const router = (await ref.getOutputDetails("eventRouter")).value as EventRouterOutput | null | undefined;
  if (!router) return {};
  return {
    eventRouter: router,
    ...(router.webhook
      ? {
          eventRouterWebhookUrl: pulumi.secret(
            ref.requireOutput("eventRouterWebhookUrl") as pulumi.Output<string>,
          ),
        }
      : {}),
  };
}

/**
 * The pipeline definition and the platform must agree, or promotions would fail at run time: Stacks naming
 * a ServiceAccount that does not exist, Applications outside the AppProject's repository, gates approved by
 * a group nobody can join.
 */
export function checkAgainstClusterSetup(p: Pipeline, setup: ClusterSetup): void {
  const problems: string[] = [];
  const same = (field: string, ours: string, theirs: string, key: string) => {
    if (ours !== theirs)
      problems.push(`pipeline ${field} is "${ours}" but cluster-setup's ${key} is "${theirs}"`);
  };
  same("source.repoURL", p.source.repoURL, setup.stacksRepoURL, "stacksRepoURL");
  same("stacks.namespace", p.stacks.namespace, setup.stacksNamespace, "stacksNamespace");
  same(
    "stacks.serviceAccountName",
    p.stacks.serviceAccountName,
    setup.stackServiceAccountName,
    "stackServiceAccount",
  );
  same(
    "stacks.accessTokenSecret",
    p.stacks.accessTokenSecret,
    setup.pulumiAccessTokenSecretName,
    "Pulumi token Secret",
  );
  // The app client is created with the cluster's region; a pool elsewhere would not be found.
  if (setup.cognitoRegion !== setup.region) {
    problems.push(
      `cluster-setup's Cognito user pool is in ${setup.cognitoRegion} but the cluster (where kargo creates ` +
        `the app client) is in ${setup.region}; deploy cluster-setup with aws:region ${setup.region}`,
    );
  }
  // A claim no driver provisions stays Pending, and so would every workspace pod mounting it.
  if (p.stacks.pluginCacheGiB > 0 && !(setup.ebsCsiDriver && setup.volumeSnapshots)) {
    const missing = setup.ebsCsiDriver ? "no CSI snapshot controller" : "no EBS CSI driver";
    problems.push(
      `pipeline stacks.pluginCacheGiB is ${p.stacks.pluginCacheGiB}, but the cluster runs ${missing} to seed and restore the plugin cache; set cluster:ebsCsiDriver true and pulumi up cluster and cluster-setup first, or set stacks.pluginCacheGiB to 0`,
    );
  }
  if (p.stacks.pluginCacheGiB > 0)
    same(
      "stacks.pluginCacheGiB's StorageClass",
      PLUGIN_CACHE_STORAGE_CLASS,
      setup.pluginCacheStorageClass,
      "pluginCacheStorageClass",
    );
  // Each environment runs under its own identity and every preview under the read-only one.
  const environments = Object.keys(setup.stackIdentities);
  for (const env of Object.keys(p.environments).filter((e) => !environments.includes(e))) {
    problems.push(
      `environment "${env}" has no identity in cluster-setup; add it to cluster-setup's stackEnvironments (now ${environments.join(", ")})`,
    );
  }
  problems.push(...accountAgreement(p, setup));
  for (const stage of programStages(p)) {
    const account = accountOf(p.environments, stage.environment);
    const expected =
      stage.kind === "preview"
        ? account === undefined
          ? setup.previewIdentity.serviceAccountName
          : undefined // cluster-setup names it as stackServiceAccount does; accountAgreement checks its deploy
        : Object.hasOwn(setup.stackIdentities, stage.environment)
          ? setup.stackIdentities[stage.environment]!.serviceAccountName
          : undefined;
    const ours = stackServiceAccount(p, stage);
    if (expected !== undefined && ours !== expected)
      problems.push(
        `stage "${stage.name}" would run as ServiceAccount "${ours}" but cluster-setup made "${expected}"`,
      );
  }
  if (p.stacks.namespace === p.project || p.stacks.namespace === "kargo") {
    problems.push(
      `stacks.namespace "${p.stacks.namespace}" is Kargo's or the Kargo project's namespace; give the stacks one of their own`,
    );
  }
  const groups = [setup.cognitoAdminGroup, ...setup.cognitoApproverGroups];
  for (const stage of p.stages) {
    if (stage.kind !== "gate") continue;
    for (const group of stage.approvers.filter((g) => !groups.includes(g))) {
      problems.push(
        `stage "${stage.name}": approver group "${group}" is not a Cognito group; cluster-setup has ${groups.join(", ")}`,
      );
    }
  }
  // An environment's deciders are checked the same way as gate approvers.
  for (const [name, env] of Object.entries(p.environments)) {
    for (const group of riskPolicy(env).deciders.filter((g) => !groups.includes(g))) {
      problems.push(
        `environments.${name}.deciders: "${group}" is not a Cognito group; cluster-setup has ${groups.join(", ")}`,
      );
    }
  }
  if (problems.length > 0) {
    throw new pulumi.RunError(
      `The pipeline does not match the cluster-setup stack:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
  }
}

/** The cluster's account and partition, read from the ARN of the preview role cluster-setup made there. */
export function clusterAccount(setup: ClusterSetup): { account: string; partition: string } {
  const [, partition, , , account] = setup.previewIdentity.roleArn.split(":");
  return { account: account!, partition: partition! };
}

/**
 * Each environment in a named account must run as the role kargo makes there: cluster-setup annotated its
 * ServiceAccounts from the same pipeline, so a difference means cluster-setup was not deployed since.
 */
function accountAgreement(p: Pipeline, setup: ClusterSetup): string[] {
  const problems: string[] = [];
  if (namedAccounts(p.environments).length === 0) return problems;
  const { partition } = clusterAccount(setup);
  const rerun = "; run pulumi up in cluster-setup first";
  for (const [env, identity] of Object.entries(setup.stackIdentities)) {
    const account = accountOf(p.environments, env);
    if (account === undefined) continue;
    const expected = roleArn(partition, account, accountRoleName(p.stacks.serviceAccountName, env));
    if (identity.roleArn !== expected)
      problems.push(
        `environments.${env}.aws.accountId is ${account}, but cluster-setup's identity of "${env}" is role ${identity.roleArn}, not ${expected}${rerun}`,
      );
  }
  return problems;
}
