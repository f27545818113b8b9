import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { karpenter } from "../lib/crds";
import { HelmAddon, mergeValues, type AddonSpec, type Values } from "../lib/helmAddon";
import { irsaRole } from "../lib/irsa";
import { BURST_LABEL, BURST_TAINT } from "../lib/pipeline/stack-manifest";
import { interruptionQueue } from "./interruptionQueue";

/**
 * The AMI of burst nodes, pinned: an amazon-eks-ami release (awslabs/amazon-eks-ami tag v20260724), which
 * Karpenter resolves to the AL2023 EKS AMI of that release for the cluster's Kubernetes version and the
 * node's architecture. `@latest` would replace every burst node as AWS publishes AMIs.
 */
export const BURST_AMI_ALIAS = "al2023@v20260724";

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

export interface ControllerPolicyArgs {
  clusterName: string;
  region: string;
  accountId: string;
  partition: string;
  nodeRoleArn: string;
  instanceProfileName: string;
  /** The SQS queue of EC2 interruption events, when there is one. */
  interruptionQueueArn?: string;
}

/**
 * The controller's IAM policy: Karpenter's own (website/content/en/v1.14/getting-started/
 * getting-started-with-karpenter/cloudformation.yaml, the newest the docs carry; the v1.15.1 module ships no
 * website), narrowed to what this platform uses. Launching, tagging and terminating only what carries the
 * cluster's ownership tag and a NodePool tag; passing only the node role, only to EC2; no instance-profile
 * management (the cluster project makes the profile and the EC2NodeClass names it); no spot requests,
 * capacity reservations or placement groups (on-demand only); the queue only when there is one.
 */
export function controllerPolicy(a: ControllerPolicyArgs): string {
  const ec2 = (resource: string) => `arn:${a.partition}:ec2:${a.region}:*:${resource}`;
  const owned = { [`aws:ResourceTag/kubernetes.io/cluster/${a.clusterName}`]: "owned" };
  const requestOwned = {
    [`aws:RequestTag/kubernetes.io/cluster/${a.clusterName}`]: "owned",
    "aws:RequestTag/eks:eks-cluster-name": a.clusterName,
  };
  const launched = [
    ec2("fleet/*"),
    ec2("instance/*"),
    ec2("volume/*"),
    ec2("network-interface/*"),
    ec2("launch-template/*"),
  ];
  const statements: Record<string, unknown>[] = [
    {
      Sid: "LaunchFromTheClustersImagesSubnetsAndGroups",
      Effect: "Allow",
      Action: ["ec2:RunInstances", "ec2:CreateFleet"],
      Resource: [
        `arn:${a.partition}:ec2:${a.region}::image/*`,
        `arn:${a.partition}:ec2:${a.region}::snapshot/*`,
        ec2("security-group/*"),
        ec2("subnet/*"),
      ],
    },
    {
      Sid: "LaunchFromItsOwnLaunchTemplates",
      Effect: "Allow",
      Action: ["ec2:RunInstances", "ec2:CreateFleet"],
      Resource: ec2("launch-template/*"),
      Condition: { StringEquals: owned, StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" } },
    },
    {
      Sid: "CreateOnlyTaggedForTheCluster",
      Effect: "Allow",
      Action: ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
      Resource: launched,
      Condition: {
        StringEquals: requestOwned,
        StringLike: { "aws:RequestTag/karpenter.sh/nodepool": "*" },
      },
    },
    {
      Sid: "TagWhatItCreates",
      Effect: "Allow",
      Action: "ec2:CreateTags",
      Resource: launched,
      Condition: {
        StringEquals: {
          ...requestOwned,
          "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
        },
        StringLike: { "aws:RequestTag/karpenter.sh/nodepool": "*" },
      },
    },
    {
      Sid: "NameItsInstances",
      Effect: "Allow",
      Action: "ec2:CreateTags",
      Resource: ec2("instance/*"),
      Condition: {
        StringEquals: owned,
        StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" },
        StringEqualsIfExists: { "aws:RequestTag/eks:eks-cluster-name": a.clusterName },
        "ForAllValues:StringEquals": {
          "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"],
        },
      },
    },
    {
      Sid: "DeleteOnlyItsOwn",
      Effect: "Allow",
      Action: ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
      Resource: [ec2("instance/*"), ec2("launch-template/*")],
      Condition: { StringEquals: owned, StringLike: { "aws:ResourceTag/karpenter.sh/nodepool": "*" } },
    },
    {
      Sid: "PassOnlyTheNodeRoleToEc2",
      Effect: "Allow",
      Action: "iam:PassRole",
      Resource: a.nodeRoleArn,
      Condition: { StringEquals: { "iam:PassedToService": "ec2.amazonaws.com" } },
    },
    {
      Sid: "ReadTheNodeInstanceProfile",
      Effect: "Allow",
      Action: "iam:GetInstanceProfile",
      Resource: `arn:${a.partition}:iam::${a.accountId}:instance-profile/${a.instanceProfileName}`,
    },
    {
      Sid: "FindTheApiServer",
      Effect: "Allow",
      Action: "eks:DescribeCluster",
      Resource: `arn:${a.partition}:eks:${a.region}:${a.accountId}:cluster/${a.clusterName}`,
    },
    {
      Sid: "ReadInstanceTypesImagesAndNetworkInTheRegion",
      Effect: "Allow",
      Action: [
        "ec2:DescribeImages",
        "ec2:DescribeInstances",
        "ec2:DescribeInstanceStatus",
        "ec2:DescribeInstanceTypeOfferings",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeLaunchTemplates",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSpotPriceHistory",
        "ec2:DescribeSubnets",
      ],
      Resource: "*",
      Condition: { StringEquals: { "aws:RequestedRegion": a.region } },
    },
    {
      Sid: "ReadTheEksAmiParameters",
      Effect: "Allow",
      Action: "ssm:GetParameter",
      Resource: `arn:${a.partition}:ssm:${a.region}::parameter/aws/service/*`,
    },
    { Sid: "ReadPrices", Effect: "Allow", Action: "pricing:GetProducts", Resource: "*" },
  ];
  if (a.interruptionQueueArn)
    statements.push({
      Sid: "ReadInterruptionEvents",
      Effect: "Allow",
      Action: ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
      Resource: a.interruptionQueueArn,
    });
  return JSON.stringify({ Version: "2012-10-17", Statement: statements });
}

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
          .all([
            args.clusterName,
            args.region,
            caller.accountId,
            partition,
            args.nodeRoleArn,
            args.instanceProfileName,
            queue?.arn,
          ])
          .apply(([clusterName, region, accountId, part, nodeRoleArn, instanceProfileName, queueArn]) =>
            controllerPolicy({
              clusterName,
              region,
              accountId,
              partition: part,
              nodeRoleArn,
              instanceProfileName,
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
