import * as k8s from "@pulumi/kubernetes";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";

/**
 * The StorageClass of the plugin cache's volumes (kargo's seed, and each workspace run's copy restored from
 * its snapshot). Named for that use alone: its volumes go with their claims, so nothing worth keeping
 * belongs on one.
 *
 * Encrypted gp3 volumes from the EBS CSI driver (the cluster project's add-on). A volume is created in the
 * zone of the first pod that mounts it (WaitForFirstConsumer), so that pod is never stuck on a volume in a
 * zone without a node; a deleted claim's volume goes with it (what it holds is a cache). The driver
 * declares `fsGroupPolicy: File` (kubernetes-sigs/aws-ebs-csi-driver charts/aws-ebs-csi-driver/templates/
 * csidriver.yaml), so the kubelet hands a new volume to the workspace's fsGroup: the workspaces write as uid
 * 1000, not root. Parameters: kubernetes-sigs/aws-ebs-csi-driver docs/parameters.md.
 */
export function pluginCacheClass(opts: { provider: k8s.Provider }): k8s.storage.v1.StorageClass {
  return new k8s.storage.v1.StorageClass(
    PLUGIN_CACHE_STORAGE_CLASS,
    {
      metadata: { name: PLUGIN_CACHE_STORAGE_CLASS },
      provisioner: "ebs.csi.aws.com",
      parameters: { type: "gp3", encrypted: "true", "csi.storage.k8s.io/fstype": "ext4" },
      reclaimPolicy: "Delete",
      volumeBindingMode: "WaitForFirstConsumer",
      allowVolumeExpansion: true,
    },
    opts,
  );
}
