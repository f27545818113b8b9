// The IAM policy of Karpenter's controller (cluster-setup/karpenter.ts gives it to the controller's role).

export interface ControllerPolicyArgs {
  clusterName: string;
  region: string;
  accountId: string;
  partition: string;
  nodeRoleArn: string;
  /** The SQS queue of EC2 interruption events, when there is one. */
  interruptionQueueArn?: string;
}

/**
 * Upstream's instance-profile statements at v1.15 (KarpenterControllerIAMIntegrationPolicy and the two
 * instance-profile statements of KarpenterControllerResourceDiscoveryPolicy), scoped by the same tags.
 * The EC2NodeClass names the cluster project's profile, so the controller creates none; but deleting or
 * replacing the EC2NodeClass runs its finalizer, which lists the profiles under the class's IAM path and
 * looks up the legacy profile name (v1.15.1 pkg/controllers/nodeclass/controller.go
 * cleanupManagedInstanceProfiles): without List and Get on any profile both calls are refused, the
 * finalizer never finishes and `pulumi destroy` or a replacement of the class hangs. Create, tag, role and
 * delete reach only profiles tagged for this cluster, this region and an EC2NodeClass, which the cluster
 * project's profile is not.
 */
export function instanceProfileStatements(a: ControllerPolicyArgs): Record<string, unknown>[] {
  const profiles = `arn:${a.partition}:iam::${a.accountId}:instance-profile/*`;
  const cluster = `kubernetes.io/cluster/${a.clusterName}`;
  const requestTags = {
    [`aws:RequestTag/${cluster}`]: "owned",
    "aws:RequestTag/eks:eks-cluster-name": a.clusterName,
    "aws:RequestTag/topology.kubernetes.io/region": a.region,
  };
  const resourceTags = {
    [`aws:ResourceTag/${cluster}`]: "owned",
    "aws:ResourceTag/topology.kubernetes.io/region": a.region,
  };
  return [
    {
      Sid: "AllowScopedInstanceProfileCreationActions",
      Effect: "Allow",
      Resource: profiles,
      Action: ["iam:CreateInstanceProfile"],
      Condition: {
        StringEquals: requestTags,
        StringLike: { "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*" },
      },
    },
    {
      Sid: "AllowScopedInstanceProfileTagActions",
      Effect: "Allow",
      Resource: profiles,
      Action: ["iam:TagInstanceProfile"],
      Condition: {
        StringEquals: { ...resourceTags, ...requestTags },
        StringLike: {
          "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
          "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
        },
      },
    },
    {
      Sid: "AllowScopedInstanceProfileActions",
      Effect: "Allow",
      Resource: profiles,
      Action: [
        "iam:AddRoleToInstanceProfile",
        "iam:RemoveRoleFromInstanceProfile",
        "iam:DeleteInstanceProfile",
      ],
      Condition: {
        StringEquals: resourceTags,
        StringLike: { "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*" },
      },
    },
    // IAM has no resource for listing: upstream's, unscoped.
    {
      Sid: "AllowUnscopedInstanceProfileListAction",
      Effect: "Allow",
      Resource: "*",
      Action: "iam:ListInstanceProfiles",
    },
    {
      Sid: "AllowInstanceProfileReadActions",
      Effect: "Allow",
      Resource: profiles,
      Action: "iam:GetInstanceProfile",
    },
  ];
}

/**
 * The controller's IAM policy: Karpenter's own (the KarpenterController*Policy documents of
 * website/content/en/v1.15/reference/cloudformation.md, aws/karpenter-provider-aws, which describes the
 * cloudformation.yaml of v1.15.x), narrowed to what this platform uses. Launching, tagging and terminating
 * only what carries the cluster's ownership tag and a NodePool tag; passing only the node role, only to EC2;
 * the instance-profile statements exactly as upstream's ({@link instanceProfileStatements}); no spot
 * requests, capacity reservations or placement groups (on-demand only); the queue only when there is one.
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
    ...instanceProfileStatements(a),
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
