// `pulumi up` #1: the network and the EKS cluster every later project runs on.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { platformTags } from "../lib/platform";
import { architectureOf, loadClusterConfig } from "./config";
import { checkCreatorNotListed } from "./identity";
import { Network } from "./network";
import { PlatformCluster } from "./platformCluster";

export = async () => {
  const config = loadClusterConfig();
  const stack = pulumi.getStack();
  const tags = platformTags();
  const clusterName = config.clusterName || `platform-${stack}`;

  // Only the first pulumi up creates the cluster, and so makes its caller admin; later runs (CI's deploy
  // role among them) find the cluster and their own access entry already there.
  const existing = await aws.eks.getClusters();
  if (!(existing.names ?? []).includes(clusterName)) {
    const caller = await aws.getCallerIdentity();
    checkCreatorNotListed(caller.arn, {
      clusterAdminRoleArns: config.clusterAdminRoleArns,
      ciDeployRoleArn: [config.ciDeployRoleArn].filter(Boolean),
      ciPreviewRoleArn: [config.ciPreviewRoleArn].filter(Boolean),
    });
  }

  const network = new Network("platform", {
    cidrBlock: config.vpcCidr,
    availabilityZoneCount: config.availabilityZoneCount,
    natGatewayStrategy: config.natGatewayStrategy,
    clusterName,
    tags,
  });

  const cluster = new PlatformCluster("platform", {
    vpcId: network.vpcId,
    publicSubnetIds: network.publicSubnetIds,
    privateSubnetIds: network.privateSubnetIds,
    clusterName,
    kubernetesVersion: config.kubernetesVersion,
    supportType: config.supportType,
    ebsCsiDriverVersion: config.ebsCsiDriver ? config.ebsCsiDriverVersion : undefined,
    // Only with the driver: its snapshotter sidecar takes the snapshots the controller asks for.
    snapshotControllerVersion: config.ebsCsiDriver ? config.snapshotControllerVersion : undefined,
    nodeInstanceTypes: config.nodeInstanceTypes,
    nodeCapacityType: config.nodeCapacityType,
    nodeMinSize: config.nodeMinSize,
    nodeDesiredSize: config.nodeDesiredSize,
    nodeMaxSize: config.nodeMaxSize,
    nodeDiskSizeGiB: config.nodeDiskSizeGiB,
    nodeMaxPods: config.nodeMaxPods,
    clusterAdminRoleArns: config.clusterAdminRoleArns,
    ciDeployRoleArn: config.ciDeployRoleArn,
    ciPreviewRoleArn: config.ciPreviewRoleArn,
    publicAccessCidrs: config.publicAccessCidrs,
    clusterLogTypes: config.clusterLogTypes,
    clusterLogRetentionDays: config.clusterLogRetentionDays,
    tags,
  });

  // The contract `cluster-setup` reads through its StackReference.
  return {
    kubeconfig: cluster.kubeconfig,
    clusterName: cluster.clusterName,
    region: aws.getRegionOutput().region,
    vpcId: network.vpcId,
    publicSubnetIds: network.publicSubnetIds,
    privateSubnetIds: network.privateSubnetIds,
    oidcProviderArn: cluster.oidcProviderArn,
    oidcProviderUrl: cluster.oidcProviderUrl,
    nodeRoleArn: cluster.nodeRoleArn,
    nodeSecurityGroupId: cluster.nodeSecurityGroupId,
    nodeAutoScalingGroupNames: cluster.nodeAutoScalingGroupNames,
    controlPlaneLogGroupName: cluster.logGroupName,
    ebsCsiDriver: cluster.ebsCsiDriver,
    volumeSnapshots: cluster.volumeSnapshots,
    burstNodeInstanceProfile: cluster.burstNodeInstanceProfile,
    nodeMaxPods: config.nodeMaxPods,
    // Read by the capacity check only (lib/cli/plan/capacity.ts): what the base is sized to hold.
    baseWorkspaces: config.baseWorkspaces,
    // What burst nodes are made of: the base's architecture (Kubernetes' name for it) and families.
    nodeArchitecture: architectureOf(config.nodeInstanceTypes[0]!) === "arm64" ? "arm64" : "amd64",
    nodeInstanceFamilies: [...new Set(config.nodeInstanceTypes.map((t) => t.split(".")[0]!))],
  };
};
