// `pulumi up` #1: the network and the EKS cluster every later project runs on.
import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { platformTags } from "../lib/platform";
import { loadClusterConfig } from "./config";
import { Network } from "./network";
import { PlatformCluster } from "./platformCluster";

const config = loadClusterConfig();
const stack = pulumi.getStack();
const tags = platformTags();

const network = new Network("platform", {
  cidrBlock: config.vpcCidr,
  availabilityZoneCount: config.availabilityZoneCount,
  natGatewayStrategy: config.natGatewayStrategy,
  tags,
});

const cluster = new PlatformCluster("platform", {
  vpcId: network.vpcId,
  publicSubnetIds: network.publicSubnetIds,
  privateSubnetIds: network.privateSubnetIds,
  clusterName: config.clusterName || `platform-${stack}`,
  kubernetesVersion: config.kubernetesVersion,
  nodeInstanceTypes: config.nodeInstanceTypes,
  nodeCapacityType: config.nodeCapacityType,
  nodeMinSize: config.nodeMinSize,
  nodeDesiredSize: config.nodeDesiredSize,
  nodeMaxSize: config.nodeMaxSize,
  nodeDiskSizeGiB: config.nodeDiskSizeGiB,
  clusterAdminRoleArns: config.clusterAdminRoleArns,
  publicAccessCidrs: config.publicAccessCidrs,
  clusterLogTypes: config.clusterLogTypes,
  tags,
});

// The contract `cluster-setup` reads through its StackReference.
export const kubeconfig = cluster.kubeconfig;
export const clusterName = cluster.clusterName;
export const region = aws.getRegionOutput().region;
export const vpcId = network.vpcId;
export const publicSubnetIds = network.publicSubnetIds;
export const privateSubnetIds = network.privateSubnetIds;
export const oidcProviderArn = cluster.oidcProviderArn;
export const oidcProviderUrl = cluster.oidcProviderUrl;
export const nodeRoleArn = cluster.nodeRoleArn;
export const clusterSecurityGroupId = cluster.clusterSecurityGroupId;
export const nodeAutoScalingGroupNames = cluster.nodeAutoScalingGroupNames;
