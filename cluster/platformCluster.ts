import * as aws from "@pulumi/aws";
import * as eks from "@pulumi/eks";
import * as pulumi from "@pulumi/pulumi";
import { architectureOf } from "./config";

export interface PlatformClusterArgs {
  vpcId: pulumi.Input<string>;
  publicSubnetIds: pulumi.Input<pulumi.Input<string>[]>;
  /** Nodes run here only; they get no public addresses. */
  privateSubnetIds: pulumi.Input<pulumi.Input<string>[]>;
  /** EKS cluster name; also what `aws eks update-kubeconfig --name` takes. */
  clusterName: string;
  /** Pinned Kubernetes minor version, e.g. "1.35". */
  kubernetesVersion: string;
  /** Instance types of the managed node group; all of one architecture. */
  nodeInstanceTypes: string[];
  nodeCapacityType: "ON_DEMAND" | "SPOT";
  nodeMinSize: number;
  nodeDesiredSize: number;
  nodeMaxSize: number;
  nodeDiskSizeGiB: number;
  /**
   * IAM roles granted cluster admin through access entries, besides the identity running `pulumi up`
   * (which EKS makes admin when it creates the cluster). Must not include that identity.
   */
  clusterAdminRoleArns: string[];
  /** CIDRs allowed to reach the public API endpoint. The private endpoint is always on. */
  publicAccessCidrs: string[];
  /** Control-plane log types shipped to CloudWatch Logs. */
  clusterLogTypes: string[];
  tags: Record<string, string>;
}

/**
 * An EKS cluster for the platform: access-entry authentication, an IAM OIDC provider for IRSA, Secrets
 * encrypted with a dedicated KMS key, control-plane logging, and one managed node group in the private
 * subnets instead of the default self-managed group.
 */
export class PlatformCluster extends pulumi.ComponentResource {
  readonly clusterName: pulumi.Output<string>;
  readonly kubeconfig: pulumi.Output<string>;
  readonly oidcProviderArn: pulumi.Output<string>;
  readonly oidcProviderUrl: pulumi.Output<string>;
  readonly nodeRoleArn: pulumi.Output<string>;
  readonly clusterSecurityGroupId: pulumi.Output<string>;
  /** Auto Scaling groups EKS runs the managed nodes in, for load balancers that target node ports. */
  readonly nodeAutoScalingGroupNames: pulumi.Output<string[]>;

  constructor(name: string, args: PlatformClusterArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster:PlatformCluster", name, {}, opts);
    const partition = aws.getPartitionOutput({}, { parent: this }).partition;

    const secretsKey = new aws.kms.Key(
      `${name}-secrets`,
      {
        description: `Envelope encryption of Kubernetes Secrets in EKS cluster ${args.clusterName}`,
        enableKeyRotation: true,
        deletionWindowInDays: 30,
        tags: args.tags,
      },
      { parent: this },
    );

    const nodeRole = new aws.iam.Role(
      `${name}-nodes`,
      {
        description: `Managed node group of EKS cluster ${args.clusterName}`,
        assumeRolePolicy: aws.iam.assumeRolePolicyForPrincipal({ Service: "ec2.amazonaws.com" }),
        tags: args.tags,
      },
      { parent: this },
    );
    const nodePolicies = [
      "AmazonEKSWorkerNodePolicy",
      "AmazonEKS_CNI_Policy",
      "AmazonEC2ContainerRegistryPullOnly",
    ];
    const nodePolicyAttachments = nodePolicies.map(
      (policy) =>
        new aws.iam.RolePolicyAttachment(
          `${name}-nodes-${policy}`,
          { role: nodeRole.name, policyArn: pulumi.interpolate`arn:${partition}:iam::aws:policy/${policy}` },
          { parent: this },
        ),
    );

    const adminPolicyArn = pulumi.interpolate`arn:${partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy`;
    const accessEntries: Record<string, eks.types.input.AccessEntryArgs> = {};
    for (const roleArn of args.clusterAdminRoleArns) {
      accessEntries[`admin-${roleArn.split("/").pop()}`] = {
        principalArn: roleArn,
        accessPolicies: { clusterAdmin: { policyArn: adminPolicyArn, accessScope: { type: "cluster" } } },
      };
    }

    const cluster = new eks.Cluster(
      name,
      {
        name: args.clusterName,
        version: args.kubernetesVersion,
        vpcId: args.vpcId,
        publicSubnetIds: args.publicSubnetIds,
        privateSubnetIds: args.privateSubnetIds,
        endpointPrivateAccess: true,
        endpointPublicAccess: true,
        publicAccessCidrs: args.publicAccessCidrs,
        // Access entries only; the component also makes the deploying identity cluster admin.
        authenticationMode: eks.AuthenticationMode.Api,
        accessEntries,
        createOidcProvider: true,
        encryptionConfigKeyArn: secretsKey.arn,
        enabledClusterLogTypes: args.clusterLogTypes,
        skipDefaultNodeGroup: true,
        tags: args.tags,
      },
      { parent: this },
    );

    const nodeGroup = new eks.ManagedNodeGroup(
      `${name}-nodes`,
      {
        cluster,
        nodeRole,
        subnetIds: args.privateSubnetIds,
        instanceTypes: args.nodeInstanceTypes,
        amiType:
          architectureOf(args.nodeInstanceTypes[0]!) === "arm64"
            ? "AL2023_ARM_64_STANDARD"
            : "AL2023_x86_64_STANDARD",
        capacityType: args.nodeCapacityType,
        diskSize: args.nodeDiskSizeGiB,
        scalingConfig: {
          minSize: args.nodeMinSize,
          desiredSize: args.nodeDesiredSize,
          maxSize: args.nodeMaxSize,
        },
        tags: args.tags,
      },
      { parent: this, dependsOn: nodePolicyAttachments },
    );

    this.clusterName = pulumi.output(args.clusterName);
    // Depend on the node group so downstream projects only start once nodes can run their pods.
    this.kubeconfig = pulumi.secret(pulumi.all([cluster.kubeconfigJson, nodeGroup.urn]).apply(([kc]) => kc));
    this.oidcProviderArn = cluster.oidcProviderArn;
    this.oidcProviderUrl = cluster.oidcProviderUrl;
    this.nodeRoleArn = nodeRole.arn;
    this.clusterSecurityGroupId = cluster.clusterSecurityGroupId;
    this.nodeAutoScalingGroupNames = nodeGroup.nodeGroup
      .apply((group) => pulumi.output(group.resources))
      .apply((resources) => resources.flatMap((r) => r.autoscalingGroups.map((asg) => asg.name)));
    this.registerOutputs({
      clusterName: this.clusterName,
      kubeconfig: this.kubeconfig,
      oidcProviderArn: this.oidcProviderArn,
      oidcProviderUrl: this.oidcProviderUrl,
      nodeRoleArn: this.nodeRoleArn,
      clusterSecurityGroupId: this.clusterSecurityGroupId,
      nodeAutoScalingGroupNames: this.nodeAutoScalingGroupNames,
    });
  }
}
