import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { karpenter } from "../lib/crds";
import { HelmAddon, mergeValues, type AddonSpec, type Values } from "../lib/helmAddon";
import { irsaRole } from "../lib/irsa";
import { NODE_AMI_RELEASE } from "../lib/nodeAmi";
import { BURST_LABEL, BURST_TAINT } from "../lib/pipeline/stack-manifest";
import { interruptionQueue } from "./interruptionQueue";
import { controllerPolicy } from "./karpenterPolicy";

export { controllerPolicy, instanceProfileStatements, type ControllerPolicyArgs } from "./karpenterPolicy";

/**
 * The AMI of burst nodes, pinned: the base nodes' amazon-eks-ami release (lib/nodeAmi.ts), which Karpenter
 * resolves to the AL2023 EKS AMI of that release for the cluster's Kubernetes version and the node's
 * architecture. `@latest` would replace every burst node as AWS publishes AMIs.
 */
export const BURST_AMI_ALIAS = `al2023@${NODE_AMI_RELEASE}`;

/** Where the controller runs, and so whom its role trusts. */
export const KARPENTER_SERVICE_ACCOUNT = { namespace: "kube-system", name: "karpenter" };

/**
 * Karpenter adds a node when a workspace or verification pod is pending and removes it once empty. The chart
 * is the one its Go module carries (aws/karpenter-provider-aws v1.15.1 charts/karpenter), published as an OCI
 * chart. One replica on the base: while it restarts, bursts wait; nothing already running stops. Its
 * affinity keeps it off the nodes it launches (values.yaml: `karpenter.sh/nodepool DoesNotExist`).
 */
export const karpenterChart: AddonSpec = {
  name: "karpenter",
  chart: "oci://public.ecr.aws/karpenter/karpenter",
  version: "1.15.1",
  namespace: KARPENTER_SERVICE_ACCOUNT.namespace,
  values: {
    replicas: 1,
    serviceAccount: { name: KARPENTER_SERVICE_ACCOUNT.name },
    // Sized for one NodePool and a handful of nodes (test/capacity.test.ts counts it against the base).
    controller: { resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "512Mi" } } },
  },
};

export interface BurstCapacityArgs {
  provider: k8s.Provider;
  clusterName: pulumi.Input<string>;
  region: pulumi.Input<string>;
  oidcProviderArn: pulumi.Input<string>;
  oidcProviderUrl: pulumi.Input<string>;
  nodeRoleArn: pulumi.Input<string>;
  instanceProfileName: pulumi.Input<string>;
  /** Max pods of a burst node: the base's (cluster:nodeMaxPods). */
  maxPods: pulumi.Input<number>;
  /** "arm64" or "amd64", the base's architecture. */
  architecture: pulumi.Input<string>;
  /** Instance families burst nodes are picked from (the base's). */
  instanceFamilies: pulumi.Input<string[]>;
  /** What all burst nodes together may hold. */
  limits: { cpu: number; memoryGiB: number };
  /** Seconds an empty burst node stays, so the next workspace of a promotion finds it. */
  consolidateAfterSeconds: number;
  /** An SQS queue of EC2 interruption events Karpenter drains nodes ahead of (interruptionQueue.ts). */
  interruptionQueue: boolean;
  values?: pulumi.Input<Values>;
  tags: Record<string, string>;
}

/**
 * Burst capacity for PKO workspaces and verification Jobs: Karpenter's controller on the base, a NodePool of
 * on-demand nodes of the base's architecture that only pods tolerating {@link BURST_TAINT} land on, removed
 * once empty, and the EC2NodeClass that launches them into the private subnets with the cluster's security
 * group and the node role.
 */
export class BurstCapacity extends pulumi.ComponentResource {
  readonly roleArn: pulumi.Output<string>;
  readonly nodePoolName: string;

  constructor(name: string, args: BurstCapacityArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster-setup:BurstCapacity", name, {}, opts);
    const sa = KARPENTER_SERVICE_ACCOUNT;
    const parent = { parent: this };
    const caller = aws.getCallerIdentityOutput({}, parent);
    const partition = aws.getPartitionOutput({}, parent).partition;
    const role = irsaRole(name, { ...args, serviceAccount: sa, purpose: "Karpenter's controller" }, parent);
    const queue = args.interruptionQueue
      ? interruptionQueue(`${name}-interruptions`, { clusterName: args.clusterName, tags: args.tags }, this)
      : undefined;
    const policy = new aws.iam.RolePolicy(
      name,
      {
        role: role.name,
        policy: pulumi
          .all([args.clusterName, args.region, caller.accountId, partition, args.nodeRoleArn, queue?.arn])
          .apply(([clusterName, region, accountId, part, nodeRoleArn, queueArn]) =>
            controllerPolicy({
              clusterName,
              region,
              accountId,
              partition: part,
              nodeRoleArn,
              interruptionQueueArn: queueArn,
            }),
          ),
      },
      parent,
    );
    const controller = new HelmAddon(
      karpenterChart,
      {
        provider: args.provider,
        values: pulumi
          .all([args.clusterName, role.arn, queue?.name, args.values ?? {}])
          .apply(([clusterName, arn, queueName, user]) =>
            mergeValues(
              {
                settings: { clusterName, ...(queueName ? { interruptionQueue: queueName } : {}) },
                serviceAccount: { annotations: { "eks.amazonaws.com/role-arn": arn } },
              },
              user as Values,
            ),
          ),
        dependsOn: [policy],
      },
      parent,
    );

    const k8sOpts = { parent: this, provider: args.provider, dependsOn: [controller] };
    const nodeClass = new karpenter.EC2NodeClass(
      `${name}-burst`,
      {
        metadata: { name: "burst" },
        spec: {
          amiSelectorTerms: [{ alias: BURST_AMI_ALIAS }],
          instanceProfile: args.instanceProfileName,
          subnetSelectorTerms: [{ tags: { "karpenter.sh/discovery": args.clusterName } }],
          // EKS tags the cluster security group it creates, which the base nodes carry too.
          securityGroupSelectorTerms: [{ tags: { "aws:eks:cluster-name": args.clusterName } }],
          kubelet: { maxPods: args.maxPods },
          blockDeviceMappings: [
            { deviceName: "/dev/xvda", ebs: { volumeSize: "20Gi", volumeType: "gp3", encrypted: true } },
          ],
          // Pods reach no instance credentials: one hop, tokens required (they use IRSA).
          metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: 1 },
          tags: args.tags,
        },
      },
      k8sOpts,
    );
    this.nodePoolName = "burst";
    new karpenter.NodePool(
      `${name}-burst`,
      {
        metadata: { name: this.nodePoolName },
        spec: {
          template: {
            metadata: { labels: { [BURST_LABEL]: "true" } },
            spec: {
              nodeClassRef: {
                group: "karpenter.k8s.aws",
                kind: "EC2NodeClass",
                name: nodeClass.metadata.name,
              },
              requirements: [
                // A `pulumi up` cut off by a spot reclaim leaves a locked stack and half a change.
                { key: "karpenter.sh/capacity-type", operator: "In", values: ["on-demand"] },
                {
                  key: "kubernetes.io/arch",
                  operator: "In",
                  values: pulumi.output(args.architecture).apply((a) => [a]),
                },
                { key: "karpenter.k8s.aws/instance-family", operator: "In", values: args.instanceFamilies },
                { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
              ],
              taints: [BURST_TAINT],
              expireAfter: "168h",
            },
          },
          disruption: {
            consolidationPolicy: "WhenEmpty",
            consolidateAfter: `${args.consolidateAfterSeconds}s`,
          },
          limits: { cpu: `${args.limits.cpu}`, memory: `${args.limits.memoryGiB}Gi` },
        },
      },
      k8sOpts,
    );
    this.roleArn = role.arn;
    this.registerOutputs({ roleArn: this.roleArn });
  }
}
