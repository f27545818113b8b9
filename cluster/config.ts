import { z } from "zod";
import { cidr, configFields, internetAllowList, loadConfig } from "../lib/config";

/** Control-plane log types EKS can ship to CloudWatch. */
export const clusterLogTypes = ["api", "audit", "authenticator", "controllerManager", "scheduler"] as const;

/** Retention periods CloudWatch Logs accepts (PutRetentionPolicy). */
export const logRetentionDays = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

// Graviton families carry a "g" right after the generation digit (t4g, m7g, c8gd, ...).
const armInstanceType = /^[a-z]+\d+g[a-z]*\./;
export const architectureOf = (instanceType: string): "arm64" | "x86_64" =>
  armInstanceType.test(instanceType) ? "arm64" : "x86_64";

/**
 * Kubernetes minor versions Amazon EKS offers for new clusters, in standard or extended support, as of
 * November 2026 (docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html; 1.30's extended support
 * ended July 2026, 1.31's ends November 2026). Update the list as EKS releases and retires versions.
 */
export const eksKubernetesVersions = ["1.31", "1.32", "1.33", "1.34", "1.35", "1.36"] as const;

/**
 * The aws-ebs-csi-driver add-on version the cluster runs when cluster:ebsCsiDriver is on: the EKS build of
 * driver v1.67.1 (kubernetes-sigs/aws-ebs-csi-driver, October 2026). Not checked against AWS from here:
 * `aws eks describe-addon-versions --addon-name aws-ebs-csi-driver --kubernetes-version <version>` lists the
 * builds EKS offers; set cluster:ebsCsiDriverVersion to one of them if this one is not.
 */
export const EBS_CSI_DRIVER_VERSION = "v1.67.1-eksbuild.1";

/**
 * The snapshot-controller add-on version the cluster runs beside the EBS CSI driver: the EKS build of
 * kubernetes-csi/external-snapshotter v8.4.0 (lib/crds/sources.ts types its CRDs from that version). Not checked against AWS from here: `aws eks
 * describe-addon-versions --addon-name snapshot-controller --kubernetes-version <version>` lists the builds
 * EKS offers; set cluster:snapshotControllerVersion to one of them if this one is not.
 */
export const SNAPSHOT_CONTROLLER_VERSION = "v8.4.0-eksbuild.1";

/**
 * An EKS add-on build as `aws eks describe-addon-versions` lists them. The example stays a literal: a
 * Renovate bump of the pin should not change what an error message says.
 */
const eksAddonVersion = (addonName: string, example: string) =>
  z
    .string()
    .regex(
      /^v\d+\.\d+\.\d+-eksbuild\.\d+$/,
      `must be an EKS add-on version such as "${example}" (aws eks describe-addon-versions --addon-name ${addonName})`,
    );

/**
 * Pods per node with the VPC CNI's prefix delegation: each address slot of an interface holds a /28 (16
 * addresses), so a t4g.medium could address 3 × 5 × 16 + 2 = 242; the kubelet's own default of 110 is the
 * ceiling EKS uses for instances of fewer than 30 vCPUs. Lower than that: nodeadm reserves 11 MiB of the
 * node's memory for every pod it may run (amazon-eks-ami nodeadm/internal/kubelet/config.go,
 * getMemoryMebibytesToReserve), so 110 on a 4 GiB node reserves 1465 MiB for pods it never holds; the
 * requests of what the base runs (test/capacity.test.ts) fill a t4g.medium long before 40 pods.
 */
export const DEFAULT_MAX_PODS = 40;
const MIN_MAX_PODS = 20;

/** EKS accepts at most 40 CIDR blocks for its public endpoint (aws/containers-roadmap#2174). */
const EKS_PUBLIC_ACCESS_CIDR_LIMIT = 40;

export const clusterConfigSchema = z
  .object({
    vpcCidr: cidr((range, prefix) => {
      if (range !== "private") return "is not in a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)";
      if (prefix < 16 || prefix > 24) return `is a /${prefix}; allowed sizes are /16 to /24`;
      return undefined;
    }).default("10.0.0.0/16"),
    availabilityZoneCount: z
      .number()
      .int()
      .min(2, "must be at least 2: EKS needs subnets in two availability zones")
      .max(6, "must be at most 6")
      .default(2),
    natGatewayStrategy: z
      .enum(["Single", "OnePerAz"], {
        error: (issue) =>
          issue.input === "None"
            ? '"None" would leave the private nodes without egress; allowed values are "Single" and "OnePerAz"'
            : 'allowed values are "Single" (one NAT gateway, the default) and "OnePerAz"',
      })
      .default("Single"),
    clusterName: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/,
        "must be 1-100 letters, digits, hyphens or underscores, starting with a letter or digit",
      )
      .or(z.literal(""))
      .default(""),
    kubernetesVersion: z
      .string()
      .refine((v) => (eksKubernetesVersions as readonly string[]).includes(v), {
        message: `must be a Kubernetes minor version EKS offers: ${eksKubernetesVersions.join(", ")}`,
      })
      .default("1.35"),
    nodeInstanceTypes: z
      .array(
        z.string().regex(/^[a-z][a-z0-9-]*\.[a-z0-9]+$/, "must be an EC2 instance type such as t4g.medium"),
      )
      .min(1, "must list at least one EC2 instance type")
      .max(20, "must list at most 20 EC2 instance types")
      .refine((types) => new Set(types).size === types.length, {
        message: "must not repeat an instance type",
      })
      .refine((types) => new Set(types.map(architectureOf)).size <= 1, {
        message: "must not mix Graviton (arm64) and x86_64 instance types in one node group",
      })
      .default(["t4g.medium"]),
    nodeCapacityType: z.enum(["ON_DEMAND", "SPOT"]).default("ON_DEMAND"),
    nodeMinSize: z.number().int().min(1, "must be at least 1").default(2),
    nodeDesiredSize: z.number().int().min(1, "must be at least 1").default(2),
    nodeMaxSize: z.number().int().min(1, "must be at least 1").max(100, "must be at most 100").default(3),
    // Workspaces the base holds beside the platform; one Freight's others, and other Freight's, take burst
    // nodes. test/capacity.test.ts and docs/capacity-and-cost.md hold the base to it; no pipeline changes it.
    baseWorkspaces: z
      .number()
      .int("must be a whole number of workspaces")
      .min(0, "must be 0 (every workspace on a burst node) or more")
      .max(50, "must be at most 50; add burst capacity (cluster-setup:burstCpuLimit) instead")
      .default(2),
    nodeMaxPods: z
      .number()
      .int()
      .min(
        MIN_MAX_PODS,
        `must be at least ${MIN_MAX_PODS}: kube-system and the platform alone run about 30 pods on two nodes`,
      )
      .max(
        110,
        "must be at most 110, the kubelet's default and EKS's limit for instances of fewer than 30 vCPUs",
      )
      .default(DEFAULT_MAX_PODS),
    nodeDiskSizeGiB: z
      .number()
      .int()
      .min(20, "must be at least 20")
      .max(1000, "must be at most 1000")
      .default(20),
    clusterAdminRoleArns: z
      .array(configFields.iamRoleArn)
      .max(50, "must list at most 50 roles; give one admin role to a team instead of one per person")
      .refine((arns) => new Set(arns).size === arns.length, { message: "must not repeat a role ARN" })
      .default([]),
    publicAccessCidrs: internetAllowList(
      EKS_PUBLIC_ACCESS_CIDR_LIMIT,
      "EKS accepts at most 40 for the public endpoint",
    ).default(["0.0.0.0/0"]),
    clusterLogTypes: z
      .array(z.enum(clusterLogTypes))
      .refine((types) => new Set(types).size === types.length, { message: "must not repeat a log type" })
      .default(["audit"]),
    clusterLogRetentionDays: z
      .number()
      .refine((days) => logRetentionDays.includes(days as (typeof logRetentionDays)[number]), {
        message: `must be one of the periods CloudWatch Logs accepts: ${logRetentionDays.join(", ")}`,
      })
      .default(30),
    supportType: z
      .enum(["STANDARD", "EXTENDED"], {
        error: 'allowed values are "STANDARD" (upgraded at end of standard support) and "EXTENDED" ($0.60/h)',
      })
      .default("STANDARD"),
    ebsCsiDriver: z
      .boolean({
        error:
          "must be true (install the EBS CSI driver and snapshot controller add-ons, the default) or false",
      })
      .default(true),
    ebsCsiDriverVersion: eksAddonVersion("aws-ebs-csi-driver", "v1.67.1-eksbuild.1").default(
      EBS_CSI_DRIVER_VERSION,
    ),
    // Installed with the EBS CSI driver: the driver's snapshotter sidecar needs the snapshot CRDs and
    // controller this add-on brings before a VolumeSnapshot can be taken or restored.
    snapshotControllerVersion: eksAddonVersion("snapshot-controller", "v8.4.0-eksbuild.1").default(
      SNAPSHOT_CONTROLLER_VERSION,
    ),
    ciDeployRoleArn: configFields.iamRoleArn.or(z.literal("")).default(""),
    ciPreviewRoleArn: configFields.iamRoleArn.or(z.literal("")).default(""),
  })
  .superRefine((c, ctx) => {
    // One access entry per principal: EKS refuses a second CreateAccessEntry for the same role.
    const ciRoles = [
      ["ciDeployRoleArn", c.ciDeployRoleArn],
      ["ciPreviewRoleArn", c.ciPreviewRoleArn],
    ] as const;
    for (const [key, arn] of ciRoles) {
      if (arn && c.clusterAdminRoleArns.includes(arn)) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `"${arn}" is also in cluster:clusterAdminRoleArns; a role gets one access entry, list it once`,
        });
      }
    }
    if (c.ciDeployRoleArn && c.ciDeployRoleArn === c.ciPreviewRoleArn) {
      ctx.addIssue({
        code: "custom",
        path: ["ciPreviewRoleArn"],
        message: "must differ from cluster:ciDeployRoleArn: previews run with less access than deploys",
      });
    }
    if (c.nodeMinSize > c.nodeMaxSize) {
      ctx.addIssue({
        code: "custom",
        path: ["nodeMinSize"],
        message: `(${c.nodeMinSize}) must not exceed cluster:nodeMaxSize (${c.nodeMaxSize})`,
      });
    }
    if (c.nodeDesiredSize < c.nodeMinSize || c.nodeDesiredSize > c.nodeMaxSize) {
      ctx.addIssue({
        code: "custom",
        path: ["nodeDesiredSize"],
        message: `(${c.nodeDesiredSize}) must lie between cluster:nodeMinSize (${c.nodeMinSize}) and cluster:nodeMaxSize (${c.nodeMaxSize})`,
      });
    }
  });

export type ClusterConfig = z.infer<typeof clusterConfigSchema>;

export const loadClusterConfig = (): ClusterConfig =>
  loadConfig(clusterConfigSchema, { requireRegion: true });
