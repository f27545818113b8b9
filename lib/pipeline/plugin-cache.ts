// The plugin cache (stacks.pluginCacheGiB): the providers every promoted program pins, installed once by a
// seed Job onto a volume, snapshotted, and restored as a fresh volume for each workspace run. Nothing a run
// writes reaches another: each run has its own copy, deleted with its pod. So one cache serves every stage
// and environment (its idle cost does not grow with them), and no stage's identity can leave a binary that
// another stage's identity then runs. Only the seed, which runs under an identity of its own with no cloud
// access, writes what the snapshot holds.
import { uniquePlugins } from "./program-plugins";
import type { Pipeline, ProviderPlugin } from "./schema";

/** The VolumeSnapshot every workspace restores its plugins from; stable, so stacks/ does not change with it. */
export const pluginSnapshotName = (p: Pick<Pipeline, "project">) => `${p.project}-plugins`;

/**
 * The StorageClass of the seed and of every run's copy: cluster-setup's (cluster-setup/storage.ts), named
 * here because the stacks/ manifests that name it are rendered without reading cluster-setup.
 */
export const PLUGIN_CACHE_STORAGE_CLASS = "pulumi-plugin-cache";

/** The snapshot API group a claim's dataSource names. */
export const SNAPSHOT_API_GROUP = "snapshot.storage.k8s.io";

/** Every plugin the pipeline's programs pin, each once. */
export const pipelinePlugins = (p: Pick<Pipeline, "programs">): ProviderPlugin[] =>
  uniquePlugins(p.programs.flatMap((x) => x.plugins));

/** The volume the plugins live on, the seed's and each run's copy alike (a copy is at least its snapshot's size). */
export const pluginVolumeSpec = (p: Pipeline) => ({
  accessModes: ["ReadWriteOnce"],
  storageClassName: PLUGIN_CACHE_STORAGE_CLASS,
  resources: { requests: { storage: `${p.stacks.pluginCacheGiB}Gi` } },
});

/** The claim a workspace's plugins are restored onto, as each run's ephemeral volume template spec. */
export const pluginCopyClaimSpec = (p: Pipeline) => ({
  ...pluginVolumeSpec(p),
  dataSource: { apiGroup: SNAPSHOT_API_GROUP, kind: "VolumeSnapshot", name: pluginSnapshotName(p) },
});
