// `pulumi up` #2: the platform add-ons, single sign-on, and the identity PKO runs stacks under.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { clusterProvider, platformTags } from "../lib/platform";
import * as random from "@pulumi/random";
import { ArgoCd } from "./addons/argoCd";
import { argoCdNotificationValues, argoCdSubscriptions } from "./addons/argoCdNotifications";
import { ArgoEvents } from "./addons/argoEvents";
import { argoRollouts } from "./addons/argoRollouts";
import { certManager } from "./addons/certManager";
import { HelmAddon, mergeValues } from "../lib/helmAddon";
import {
  notificationSummary,
  rolloutsNotificationValues,
  type NotificationDestinations,
} from "./addons/notifications";
import { pulumiOperator } from "./addons/pulumiOperator";
import { defaultDomainPrefix, loadClusterSetupConfig } from "./config";
import { SingleSignOn } from "./singleSignOn";
import { StackIdentity } from "./stackIdentity";
import { BurstCapacity } from "./karpenter";
import { pluginCacheClass } from "./storage";

const config = loadClusterSetupConfig();
const stack = pulumi.getStack();
const tags = platformTags();
// Checked before anything is declared: Cognito refuses some prefixes a stack name could produce.
const domainPrefix =
  config.cognitoDomainPrefix || defaultDomainPrefix(stack, aws.getCallerIdentityOutput().accountId);

const cluster = new pulumi.StackReference("cluster", { name: config.clusterStack });
const kubeconfig = cluster.requireOutput("kubeconfig") as pulumi.Output<string>;
const provider = clusterProvider(kubeconfig);

const certManagerAddon = new HelmAddon(certManager, { provider, values: config.certManagerValues });
// Who is told what (notifications.ts): Argo Rollouts announces each verification it finishes, to the
// destinations configured; none configured, none sent, and the plan and `pulumi up` say so.
const destinations: NotificationDestinations = {
  ...(config.notifySlackChannel && config.notifySlackToken
    ? {
        slack: {
          channel: config.notifySlackChannel,
          token: config.notifySlackToken,
          mentions: config.notifySlackMentions,
        },
      }
    : {}),
  ...(config.notifyWebhookUrl ? { webhook: { url: config.notifyWebhookUrl } } : {}),
};
const notificationValues = rolloutsNotificationValues(destinations);
if (!notificationValues)
  pulumi.log.warn(
    "cluster-setup:notifySlackChannel is not set: notifications are off and nothing is sent; the event router only records who approved each stopped preview (set it with notifySlackToken, or set notifyWebhookUrl)",
  );
// Kargo's own events (new Freight, a promotion failing before any sync, a stopped preview's approval), which
// only Kubernetes Events record (an hour), are routed by Argo Events: always installed, as the record of who
// approved a stopped preview must not depend on a destination; its messages only with one.
const argoEventsAddon = new ArgoEvents("argo-events", {
  provider,
  destinations,
  values: config.argoEventsValues,
});
const argoRolloutsAddon = new HelmAddon(
  notificationValues
    ? { ...argoRollouts, values: mergeValues(argoRollouts.values, { notifications: notificationValues }) }
    : argoRollouts,
  { provider, values: config.argoRolloutsValues },
);
const operatorAddon = new HelmAddon(pulumiOperator, {
  provider,
  values: config.pulumiOperatorValues,
  dependsOn: [certManagerAddon],
});

const argoCdAdminPassword = new random.RandomPassword("argocd-admin", { length: 32, special: false });
const argoCd = new ArgoCd("argocd", {
  provider,
  adminPasswordHash: argoCdAdminPassword.bcryptHash,
  stacksRepoURL: config.stacksRepoURL,
  stacksNamespace: config.stacksNamespace,
  projectName: config.argocdProject,
  // A stage that fails before its verification (a failed sync, a Degraded Stack), to the same destinations.
  notifications: argoCdNotificationValues(destinations),
  values: config.argoCdValues,
});

const sso = new SingleSignOn("platform", {
  domainPrefix,
  mfa: config.cognitoMfa,
  deletionProtection: config.cognitoDeletionProtection,
  adminGroup: config.cognitoAdminGroup,
  approverGroups: config.cognitoApproverGroups,
  tags,
});

const identity = new StackIdentity("stacks", {
  provider,
  namespace: config.stacksNamespace,
  serviceAccountName: config.stackServiceAccount,
  environments: config.stackEnvironments,
  accounts: config.stackAccounts,
  oidcProviderArn: cluster.requireOutput("oidcProviderArn") as pulumi.Output<string>,
  oidcProviderUrl: cluster.requireOutput("oidcProviderUrl") as pulumi.Output<string>,
  policyArns: config.stackPolicyArns,
  rbacRules: config.stackRbacRules,
  rbacScope: config.stackRbacScope,
  pulumiAccessToken: config.pulumiAccessToken,
  operator: operatorAddon.release,
  tags,
});

const storageClass = pluginCacheClass({ provider });

const burst = new BurstCapacity("karpenter", {
  provider,
  clusterName: cluster.requireOutput("clusterName") as pulumi.Output<string>,
  region: cluster.requireOutput("region") as pulumi.Output<string>,
  oidcProviderArn: cluster.requireOutput("oidcProviderArn") as pulumi.Output<string>,
  oidcProviderUrl: cluster.requireOutput("oidcProviderUrl") as pulumi.Output<string>,
  nodeRoleArn: cluster.requireOutput("nodeRoleArn") as pulumi.Output<string>,
  instanceProfileName: cluster.requireOutput("burstNodeInstanceProfile") as pulumi.Output<string>,
  maxPods: cluster.requireOutput("nodeMaxPods") as pulumi.Output<number>,
  architecture: cluster.requireOutput("nodeArchitecture") as pulumi.Output<string>,
  instanceFamilies: cluster.requireOutput("nodeInstanceFamilies") as pulumi.Output<string[]>,
  limits: { cpu: config.burstCpuLimit, memoryGiB: config.burstMemoryGiB },
  consolidateAfterSeconds: config.burstConsolidateAfterSeconds,
  interruptionQueue: config.karpenterInterruptionQueue,
  values: config.karpenterValues,
  tags,
});

// The contract `kargo` reads through its StackReference.
export { kubeconfig };
export const clusterName = cluster.requireOutput("clusterName");
export const region = cluster.requireOutput("region");
// Passed through for the load balancer in front of Kargo.
export const vpcId = cluster.requireOutput("vpcId");
export const publicSubnetIds = cluster.requireOutput("publicSubnetIds");
export const nodeSecurityGroupId = cluster.requireOutput("nodeSecurityGroupId");
export const nodeAutoScalingGroupNames = cluster.requireOutput("nodeAutoScalingGroupNames");
// Whether the cluster can provision the plugin cache's volumes, and snapshot and restore them; false for a
// cluster from before the output.
export const ebsCsiDriver = cluster.getOutput("ebsCsiDriver").apply((on) => on === true);
export const volumeSnapshots = cluster.getOutput("volumeSnapshots").apply((on) => on === true);
export const stacksRepoURL = config.stacksRepoURL;
export const stacksNamespace = identity.namespace;
// ServiceAccounts are named <stackServiceAccount>-<environment> and <stackServiceAccount>-preview.
export const stackServiceAccountName = config.stackServiceAccount;
// One identity per environment, and the read-only one every preview runs under.
export const stackIdentities = identity.environments;
export const previewServiceAccountName = identity.preview.serviceAccountName;
export const previewRoleName = identity.preview.roleName;
export const previewRoleArn = identity.preview.roleArn;
export const pulumiAccessTokenSecretName = identity.accessTokenSecretName;
// The class of the plugin cache's volumes.
export const pluginCacheStorageClass = storageClass.metadata.name;
// Karpenter's role and the NodePool workspaces and verification Jobs burst onto.
export const karpenterRoleArn = burst.roleArn;
export const burstNodePool = burst.nodePoolName;
// Kargo's verification reads Pulumi Cloud with the same token.
export const pulumiAccessToken = config.pulumiAccessToken;
export const cognitoUserPoolId = sso.userPoolId;
export const cognitoUserPoolArn = sso.userPoolArn;
export const cognitoIssuerUrl = sso.issuerUrl;
export const cognitoDomainUrl = sso.domainUrl;
// kargo creates the app client in the cluster's region and checks that the pool lives there too.
export const cognitoRegion = sso.region;
export const cognitoAdminGroup = config.cognitoAdminGroup;
export const cognitoApproverGroups = config.cognitoApproverGroups;
export const argocdNamespace = argoCd.namespace;
export const argocdProject = argoCd.projectName;
export const argocdAdminPassword = argoCdAdminPassword.result;
export const argoRolloutsNamespace = argoRolloutsAddon.namespace;
// Where notifications go, or that none are sent (no destination configured).
export const notifications = notificationSummary(destinations);
// The annotations kargo puts on each stage's Application to subscribe it to Argo CD's notifications; none
// without a destination.
export const argocdSubscriptions = argoCdSubscriptions(destinations);
// Where kargo declares the EventSource and Sensor of Kargo's events, and the webhook's URL (a secret; null
// without one), which Argo Events' http trigger reads from the Sensor's spec.
export const eventRouter = argoEventsAddon.router;
export const eventRouterWebhookUrl = config.notifyWebhookUrl ? pulumi.secret(config.notifyWebhookUrl) : null;
