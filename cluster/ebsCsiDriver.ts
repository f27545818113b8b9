import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import { irsaRole } from "../lib/irsa";

/**
 * Where the EKS add-on runs its controller, and so whom its role trusts: the add-on's own ServiceAccount
 * (docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html, "Step 1: Create an IAM role").
 */
export const EBS_CSI_CONTROLLER_SERVICE_ACCOUNT = { namespace: "kube-system", name: "ebs-csi-controller-sa" };

export interface EbsCsiDriverArgs {
  clusterName: pulumi.Input<string>;
  /** Pinned add-on version (`aws eks describe-addon-versions --addon-name aws-ebs-csi-driver`). */
  version: string;
  oidcProviderArn: pulumi.Input<string>;
  oidcProviderUrl: pulumi.Input<string>;
  partition: pulumi.Input<string>;
  tags: Record<string, string>;
}

/**
 * The Amazon EBS CSI driver as an EKS managed add-on, so the cluster can give a pod a volume that outlives
 * it: each PKO workspace keeps its Pulumi plugins on one (cluster-setup's StorageClass, kargo's claims).
 * Its controller alone calls the EC2 volume APIs, through an IAM role only its ServiceAccount can assume,
 * with AWS's managed policy for the driver; the nodes' role gains nothing.
 */
export function ebsCsiDriver(
  name: string,
  args: EbsCsiDriverArgs,
  parent: pulumi.Resource,
  /** What must exist before the add-on can turn active: the nodes its pods run on. */
  dependsOn: pulumi.Resource[],
): { role: aws.iam.Role; addon: aws.eks.Addon } {
  const opts = { parent };
  const sa = EBS_CSI_CONTROLLER_SERVICE_ACCOUNT;
  const role = irsaRole(
    name,
    { ...args, serviceAccount: sa, purpose: "the EBS CSI driver's controller" },
    opts,
  );
  const policy = new aws.iam.RolePolicyAttachment(
    `${name}-AmazonEBSCSIDriverPolicy`,
    {
      role: role.name,
      policyArn: pulumi.interpolate`arn:${args.partition}:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy`,
    },
    opts,
  );
  const addon = new aws.eks.Addon(
    name,
    {
      clusterName: args.clusterName,
      addonName: "aws-ebs-csi-driver",
      addonVersion: args.version,
      serviceAccountRoleArn: role.arn,
      // The add-on owns its objects: a hand edit is overwritten rather than failing the next pulumi up.
      resolveConflictsOnCreate: "OVERWRITE",
      resolveConflictsOnUpdate: "OVERWRITE",
      tags: args.tags,
    },
    { parent, dependsOn: [policy, ...dependsOn] },
  );
  return { role, addon };
}
