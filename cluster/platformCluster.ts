import * as aws from "@pulumi/aws";
import * as eks from "@pulumi/eks";
import * as pulumi from "@pulumi/pulumi";
import { al2023AmiParameter } from "../lib/nodeAmi";
import { architectureOf } from "./config";
import { ebsCsiDriver } from "./ebsCsiDriver";
import { accessEntryKey } from "./identity";
import { snapshotController } from "./snapshotController";

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
  /** Most pods a node runs (prefix delegation lifts the address limit; see config.ts DEFAULT_MAX_PODS). */
  nodeMaxPods: number;
  /**
   * IAM roles granted cluster admin through access entries, besides the identity running `pulumi up`
   * (which EKS makes admin when it creates the cluster). Must not include that identity (see identity.ts).
   */
  clusterAdminRoleArns: string[];
  /** CIDRs allowed to reach the public API endpoint. The private endpoint is always on. */
  publicAccessCidrs: string[];
  /**
   * Role CI deploys with (`pulumi up` of all three projects): cluster admin. Empty for none. The kubeconfig
   * runs `aws eks get-token` with whatever credentials run Pulumi, so CI needs an access entry of its own.
   */
  ciDeployRoleArn: string;
  /**
   * Role CI previews with: read access to everything, Secrets included (docs/deploy.md, "The CI roles"), so its
   * trust policy accepts only jobs of the `preview` environment, which a reviewer approves run by run.
   */
  ciPreviewRoleArn: string;
  /** Control-plane log types shipped to CloudWatch Logs. */
  clusterLogTypes: string[];
  /** Days CloudWatch keeps the control-plane logs. */
  clusterLogRetentionDays: number;
  /** The EBS CSI driver add-on at this pinned version (`aws eks describe-addon-versions`), or none. */
  ebsCsiDriverVersion: string | undefined;
  /** The snapshot-controller add-on (and the VolumeSnapshot CRDs) at this pinned version, or none. */
  snapshotControllerVersion: string | undefined;
  /** "STANDARD": EKS upgrades the cluster at the end of standard support; "EXTENDED": $0.60/h instead. */
  supportType: "STANDARD" | "EXTENDED";
  tags: Record<string, string>;
}

/** Pods per node with prefix delegation: 16 addresses per slot, at most `maxPods` (see config.ts). */
export const maxPodsExpression = (maxPods: number) => {
  const prefixed = "default_enis * (ips_per_eni - 1) * 16 + 2";
  return `${prefixed} < ${maxPods} ? ${prefixed} : ${maxPods}`;
};

/** The nodeadm NodeConfig merged into the base nodes' own (awslabs/amazon-eks-ami nodeadm doc/api.md). */
export const nodeConfig = (maxPods: number) =>
  [
    "apiVersion: node.eks.aws/v1alpha1",
    "kind: NodeConfig",
    "spec:",
    "  kubelet:",
    `    maxPodsExpression: "${maxPodsExpression(maxPods)}"`,
    "",
  ].join("\n");

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
  /**
   * The security group EKS creates for the cluster (`eks-cluster-sg-*`), which managed nodes launched without
   * a launch template carry: the one to open node ports on.
   */
  readonly nodeSecurityGroupId: pulumi.Output<string>;
  /** `/aws/eks/<cluster>/cluster`, where the control-plane logs go. */
  readonly logGroupName: pulumi.Output<string>;
  /** Auto Scaling groups EKS runs the managed nodes in, for load balancers that target node ports. */
  readonly nodeAutoScalingGroupNames: pulumi.Output<string[]>;
  /** Whether the EBS CSI driver runs, so pods can have EBS volumes. */
  readonly ebsCsiDriver: boolean;
  /** Whether the snapshot controller runs, so the snapshot.storage.k8s.io kinds exist and are acted on. */
  readonly volumeSnapshots: boolean;
  /** The instance profile of the node role, which burst nodes (Karpenter's) launch with. */
  readonly burstNodeInstanceProfile: pulumi.Output<string>;

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

    const accessPolicy = (policy: string) => ({
      policyArn: pulumi.interpolate`arn:${partition}:eks::aws:cluster-access-policy/${policy}`,
      accessScope: { type: "cluster" },
    });
    const entry = (principalArn: string, policy: string) => ({
      principalArn,
      accessPolicies: { [policy]: accessPolicy(policy) },
    });
    const accessEntries: Record<string, eks.types.input.AccessEntryArgs> = {};
    for (const roleArn of args.clusterAdminRoleArns) {
      accessEntries[accessEntryKey("admin", roleArn)] = entry(roleArn, "AmazonEKSClusterAdminPolicy");
    }
    if (args.ciDeployRoleArn) {
      accessEntries["ci-deploy"] = entry(args.ciDeployRoleArn, "AmazonEKSClusterAdminPolicy");
    }
    if (args.ciPreviewRoleArn) {
      // Read-only, Secrets included: Helm releases keep their state in Secrets, which a preview of
      // cluster-setup and kargo reads. AmazonEKSViewPolicy excludes Secrets; AmazonEKSAdminViewPolicy
      // (get/list/watch on every resource) does not. https://docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html
      accessEntries["ci-preview"] = entry(args.ciPreviewRoleArn, "AmazonEKSAdminViewPolicy");
    }

    // EKS would create this group itself on first log write, keep it forever and leave it behind on destroy.
    const logGroup = new aws.cloudwatch.LogGroup(
      `${name}-control-plane`,
      {
        name: `/aws/eks/${args.clusterName}/cluster`,
        retentionInDays: args.clusterLogRetentionDays,
        tags: args.tags,
      },
      { parent: this },
    );

    const cluster = new eks.Cluster(
      name,
      {
        // Through the log group, so the EKS cluster inside the component waits for it too (a component's
        // dependsOn does not reach its children).
        name: logGroup.name.apply(() => args.clusterName),
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
        // Without it EKS moves the cluster into extended support ($0.60/h instead of $0.10/h) at the end of
        // standard support; STANDARD upgrades it to the next minor version instead.
        upgradePolicy: { supportType: args.supportType },
        skipDefaultNodeGroup: true,
        // The component's own cluster group would sit on the control plane only; managed nodes without a
        // launch template carry the EKS-created cluster group (pulumi-eks v4.3.0 nodejs/eks/cluster/cluster.ts).
        skipDefaultSecurityGroups: true,
        // Prefix delegation: each address slot of a node's interfaces holds a /28, so pods are bounded by
        // CPU and memory instead of addresses (t4g.medium: 17 pods without). Needs Nitro instances (every
        // t4g) and free /28 blocks in the private subnets; one spare prefix per node keeps a starting pod
        // from waiting on an EC2 call (docs.aws.amazon.com/eks/latest/userguide/cni-increase-ip-addresses.html).
        vpcCniOptions: { enablePrefixDelegation: true, warmPrefixTarget: 1 },
        tags: args.tags,
      },
      { parent: this, dependsOn: [logGroup] },
    );

    const nodeGroup = new eks.ManagedNodeGroup(
      `${name}-nodes`,
      {
        cluster,
        nodeRole,
        subnetIds: args.privateSubnetIds,
        instanceTypes: args.nodeInstanceTypes,
        // The AL2023 EKS AMI of one pinned release (lib/nodeAmi.ts), not `.../recommended`, which each
        // `pulumi up` would re-read and roll the nodes onto whatever AWS published last. pulumi-eks takes
        // amiId instead of amiType (v4.3.0 nodejs/eks/nodes/nodegroup.ts, amiIdMutuallyExclusive) and writes
        // it into the launch template; the operating system says which user data (nodeadm) it gets.
        amiId: aws.ssm.getParameterOutput(
          { name: al2023AmiParameter(args.kubernetesVersion, architectureOf(args.nodeInstanceTypes[0]!)) },
          { parent: this },
        ).value,
        operatingSystem: eks.OperatingSystem.AL2023,
        capacityType: args.nodeCapacityType,
        diskSize: args.nodeDiskSizeGiB,
        // nodeadm sets max pods from the interfaces' address slots alone, prefix delegation or not, and
        // reserves 11 MiB of memory per pod from that figure; its maxPodsExpression sets both
        // (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go and eni_max_pods.go, since v20251007).
        // With it pulumi-eks writes the node's user data into a launch template of the AMI above
        // (pulumi-eks v4.3.0 nodejs/eks/nodes/nodegroup.ts createMNGCustomLaunchTemplate), whose root
        // volume is gp3 (amazon-eks-ami templates/al2023/variables-default.json).
        nodeadmExtraOptions: [
          { contentType: "application/node.eks.aws", content: nodeConfig(args.nodeMaxPods) },
        ],
        scalingConfig: {
          minSize: args.nodeMinSize,
          desiredSize: args.nodeDesiredSize,
          maxSize: args.nodeMaxSize,
        },
        tags: args.tags,
      },
      { parent: this, dependsOn: nodePolicyAttachments },
    );

    const ebs =
      args.ebsCsiDriverVersion === undefined
        ? undefined
        : ebsCsiDriver(
            `${name}-ebs-csi-driver`,
            {
              clusterName: cluster.eksCluster.name,
              version: args.ebsCsiDriverVersion,
              oidcProviderArn: cluster.oidcProviderArn,
              oidcProviderUrl: cluster.oidcProviderUrl,
              partition,
              tags: args.tags,
            },
            this,
            [nodeGroup],
          );
    this.ebsCsiDriver = ebs !== undefined;

    const snapshots =
      args.snapshotControllerVersion === undefined
        ? undefined
        : snapshotController(
            `${name}-snapshot-controller`,
            {
              clusterName: cluster.eksCluster.name,
              version: args.snapshotControllerVersion,
              tags: args.tags,
            },
            this,
            [nodeGroup],
          );
    this.volumeSnapshots = snapshots !== undefined;

    // Burst nodes run as the same role, so the access entry EKS keeps for the node group admits them too;
    // Karpenter is handed this profile and needs no IAM permissions of its own to make one.
    const burstProfile = new aws.iam.InstanceProfile(
      `${name}-burst-nodes`,
      { name: `${args.clusterName}-burst-nodes`, role: nodeRole.name, tags: args.tags },
      { parent: this },
    );
    this.burstNodeInstanceProfile = burstProfile.name;

    this.clusterName = pulumi.output(args.clusterName);
    // Depend on the node group, the EBS CSI driver and the snapshot controller so downstream projects only
    // start once nodes can run their pods, volumes can be provisioned for them, and the VolumeSnapshot CRDs
    // cluster-setup's VolumeSnapshotClass needs exist.
    this.kubeconfig = pulumi.secret(
      pulumi.all([cluster.kubeconfigJson, nodeGroup.urn, ebs?.addon.urn, snapshots?.urn]).apply(([kc]) => kc),
    );
    this.oidcProviderArn = cluster.oidcProviderArn;
    this.oidcProviderUrl = cluster.oidcProviderUrl;
    this.nodeRoleArn = nodeRole.arn;
    this.nodeSecurityGroupId = cluster.eksCluster
      .apply((eksCluster) => pulumi.output(eksCluster.vpcConfig))
      .apply((vpcConfig) => vpcConfig.clusterSecurityGroupId);
    this.logGroupName = logGroup.name;
    this.nodeAutoScalingGroupNames = nodeGroup.nodeGroup
      .apply((group) => pulumi.output(group.resources))
      .apply((resources) => resources.flatMap((r) => r.autoscalingGroups.map((asg) => asg.name)));
    this.registerOutputs({
      clusterName: this.clusterName,
      kubeconfig: this.kubeconfig,
      oidcProviderArn: this.oidcProviderArn,
      oidcProviderUrl: this.oidcProviderUrl,
      nodeRoleArn: this.nodeRoleArn,
      nodeSecurityGroupId: this.nodeSecurityGroupId,
      logGroupName: this.logGroupName,
      nodeAutoScalingGroupNames: this.nodeAutoScalingGroupNames,
      burstNodeInstanceProfile: this.burstNodeInstanceProfile,
    });
  }
}
