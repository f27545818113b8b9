import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface SnapshotControllerArgs {
  clusterName: pulumi.Input<string>;
  /** Pinned add-on version (`aws eks describe-addon-versions --addon-name snapshot-controller`). */
  version: string;
  tags: Record<string, string>;
}

/**
 * The CSI snapshot controller as an EKS managed add-on, with the snapshot.storage.k8s.io CRDs it brings, so
 * a VolumeSnapshot of an EBS volume can be taken and restored: the plugin caches are seeded once and restored
 * for each workspace. It calls no AWS API (docs.aws.amazon.com/eks/latest/userguide/csi-snapshot-controller.html),
 * so it gets no role: the EBS CSI driver's snapshotter sidecar takes the snapshots, under the driver's role.
 */
export function snapshotController(
  name: string,
  args: SnapshotControllerArgs,
  parent: pulumi.Resource,
  /** What must exist before the add-on can turn active: the nodes its pods run on. */
  dependsOn: pulumi.Resource[],
): aws.eks.Addon {
  return new aws.eks.Addon(
    name,
    {
      clusterName: args.clusterName,
      addonName: "snapshot-controller",
      addonVersion: args.version,
      // The add-on owns its objects: a hand edit is overwritten rather than failing the next pulumi up.
      resolveConflictsOnCreate: "OVERWRITE",
      resolveConflictsOnUpdate: "OVERWRITE",
      tags: args.tags,
    },
    { parent, dependsOn },
  );
}
