import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { snapshots } from "../lib/crds";
import { pluginCacheObjects } from "../lib/pipeline/plugin-seed";
import type { Pipeline } from "../lib/pipeline/schema";

export interface PluginCacheArgs {
  provider: k8s.Provider;
  /** A pipeline whose stacks.pluginCacheGiB is above 0. */
  pipeline: Pipeline;
}

/**
 * The plugin cache every workspace restores its `$PULUMI_HOME/plugins` from (lib/pipeline/plugin-cache.ts):
 * the seed Job installs the pinned plugins onto a volume, and `pulumi up` ends once the snapshot of it is
 * ready. A new set of plugins makes a new seed claim and Job (named by what they hold), then replaces the
 * snapshot under the same name; until it is ready, a starting workspace's volume waits for it (the
 * provisioner retries), and the old seed goes last.
 */
export class PluginCache extends pulumi.ComponentResource {
  /** The VolumeSnapshot each run's plugins volume is restored from. */
  readonly snapshotName: pulumi.Output<string>;

  constructor(name: string, args: PluginCacheArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:PluginCache", name, {}, opts);
    const o = pluginCacheObjects(args.pipeline);
    const k8sOpts = { parent: this, provider: args.provider };

    const account = new k8s.core.v1.ServiceAccount(o.serviceAccount.metadata.name, o.serviceAccount, k8sOpts);
    const claim = new k8s.core.v1.PersistentVolumeClaim(o.claim.metadata.name, o.claim, k8sOpts);
    // pulumi-kubernetes waits for a Job to complete, and fails the update with its pods' errors if it does not;
    // as long as the Job itself may run (a burst node's start, the image, the downloads).
    const seed = new k8s.batch.v1.Job(o.job.metadata.name, o.job, {
      ...k8sOpts,
      dependsOn: [account, claim],
      customTimeouts: { create: `${o.job.spec.activeDeadlineSeconds}s` },
    });
    const snapshotClass = new snapshots.VolumeSnapshotClass(
      o.snapshotClass.metadata.name,
      o.snapshotClass,
      k8sOpts,
    );
    const snapshot = new snapshots.VolumeSnapshot(o.snapshot.metadata.name, o.snapshot, {
      ...k8sOpts,
      dependsOn: [seed, snapshotClass],
      // Its source is immutable and its name is the one every workspace names: a new seed means deleting the
      // old snapshot, then taking the new one.
      replaceOnChanges: ["spec"],
      deleteBeforeReplace: true,
      // EBS completes a first snapshot in minutes; beyond the provider's default wait for a first one.
      customTimeouts: { create: "30m" },
    });
    this.snapshotName = snapshot.metadata.name;
    this.registerOutputs({ snapshotName: this.snapshotName });
  }
}
