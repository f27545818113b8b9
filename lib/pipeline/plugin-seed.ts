// The seed of the plugin cache (lib/pipeline/plugin-cache.ts): a Job that installs every pinned plugin onto
// a volume, and the snapshot of that volume each workspace run restores.
import { createHash } from "node:crypto";
import { pipelinePlugins, pluginSnapshotName, pluginVolumeSpec } from "./plugin-cache";
import { WORKSPACE_IMAGES, type Pipeline } from "./schema";
import {
  burstToleration,
  DO_NOT_DISRUPT,
  RESTRICTED_PROFILE_ID,
  WORKSPACE_PULUMI_HOME,
  workspaceEnv,
} from "./stack-manifest";

/** The VolumeSnapshotClass of the cache's snapshot (cluster-scoped, so named for the pipeline). */
const pluginSnapshotClassName = (p: Pick<Pipeline, "project">) => `${p.project}-plugin-cache`;
/** The identity the seed Job runs under: no cloud role, no Kubernetes API token. */
const pluginSeedServiceAccountName = (p: Pick<Pipeline, "project">) => `${p.project}-plugin-seed`;

/** The CLI that installs the plugins: the workspaces' own (the YAML runtime's image is the bare CLI). */
export const PLUGIN_SEED_IMAGE = WORKSPACE_IMAGES.yaml!;

/**
 * What the seed is made of; a change makes a new seed claim and Job (their names carry it) and so a new
 * snapshot, while the snapshot's own name stays.
 */
export function pluginSeedDigest(p: Pipeline): string {
  const made = { plugins: pipelinePlugins(p), image: PLUGIN_SEED_IMAGE, gib: p.stacks.pluginCacheGiB };
  return createHash("sha256").update(JSON.stringify(made)).digest("hex").slice(0, 10);
}

/**
 * The script the seed runs: one `pulumi plugin install resource <name> <version>` per plugin (an exact
 * version, pulumi/pulumi v3.259.0 pkg/cmd/pulumi/plugin/plugin_install.go; no login needed, its registry
 * falls back to the unauthenticated one: pkg/cmd/pulumi/cmd/registry.go NewDefaultRegistry), then a listing
 * of what it holds, for its log.
 */
export function pluginSeedScript(p: Pipeline): string {
  const lines = pipelinePlugins(p).map((x) => `pulumi plugin install resource ${x.name} ${x.version}`);
  return ["set -eu", ...lines, `ls -la ${WORKSPACE_PULUMI_HOME}/plugins`].join("\n");
}

/**
 * The Kubernetes objects of the cache, in the stacks namespace: the seed's identity, claim and Job, the
 * snapshot class and the snapshot. The seed runs as the workspaces do (uid and gid 1000, the same PULUMI_HOME
 * layout), so the restored files are theirs; it may run on a burst node like them.
 */
export function pluginCacheObjects(p: Pipeline) {
  const digest = pluginSeedDigest(p);
  // Short enough for a Job's name (63, the job-name label on its pods) with the longest project a Stack name
  // leaves room for.
  const seedName = `${p.project}-seed-${digest}`;
  const namespace = p.stacks.namespace;
  const labels = { "app.kubernetes.io/part-of": p.project, "app.kubernetes.io/name": "plugin-cache" };
  const serviceAccount = {
    metadata: { name: pluginSeedServiceAccountName(p), namespace, labels },
    automountServiceAccountToken: false,
  };
  const claim = {
    metadata: { name: seedName, namespace, labels },
    spec: pluginVolumeSpec(p),
  };
  const job = {
    metadata: { name: seedName, namespace, labels },
    spec: {
      backoffLimit: 3,
      activeDeadlineSeconds: 1800,
      template: {
        metadata: { labels, annotations: { ...DO_NOT_DISRUPT } },
        spec: {
          restartPolicy: "Never",
          serviceAccountName: serviceAccount.metadata.name,
          automountServiceAccountToken: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RESTRICTED_PROFILE_ID,
            runAsGroup: RESTRICTED_PROFILE_ID,
            fsGroup: RESTRICTED_PROFILE_ID,
            seccompProfile: { type: "RuntimeDefault" },
          },
          tolerations: [burstToleration],
          containers: [
            {
              name: "seed",
              image: PLUGIN_SEED_IMAGE,
              command: ["/bin/sh", "-c", pluginSeedScript(p)],
              // The CLI image's runtime is YAML's: PULUMI_HOME and HOME as every workspace has them.
              env: [...workspaceEnv("yaml"), { name: "PULUMI_SKIP_UPDATE_CHECK", value: "true" }],
              resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "512Mi" } },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
              volumeMounts: [
                { name: "pulumi-home", mountPath: WORKSPACE_PULUMI_HOME },
                { name: "plugins", mountPath: `${WORKSPACE_PULUMI_HOME}/plugins` },
              ],
            },
          ],
          volumes: [
            { name: "pulumi-home", emptyDir: {} },
            { name: "plugins", persistentVolumeClaim: { claimName: seedName } },
          ],
        },
      },
    },
  };
  const snapshotClass = {
    metadata: { name: pluginSnapshotClassName(p), labels },
    driver: "ebs.csi.aws.com",
    // A replaced seed's snapshot goes with its object: only the newest is ever restored.
    deletionPolicy: "Delete" as const,
  };
  const snapshot = {
    metadata: {
      name: pluginSnapshotName(p),
      namespace,
      labels,
      annotations: {
        // `pulumi up` of kargo ends only once the snapshot can be restored: pulumi-kubernetes' waitFor compares
        // the value as fmt.Sprint prints it (v4.32.0 provider/pkg/jsonpath/jsonpath.go), so `true`.
        "pulumi.com/waitFor": "jsonpath={.status.readyToUse}=true",
        "platform/plugins": pipelinePlugins(p)
          .map((x) => `${x.name}@${x.version}`)
          .join(","),
      },
    },
    spec: {
      volumeSnapshotClassName: snapshotClass.metadata.name,
      source: { persistentVolumeClaimName: seedName },
    },
  };
  return { serviceAccount, claim, job, snapshotClass, snapshot };
}
