// What runs an environment stage's Pulumi operation: its PKO Stack manifest template (committed to stacks/,
// copied by promotions to the stage's branch), the ServiceAccount it runs as, and the Argo CD Application
// that syncs it from the stage's branch.
import type * as argocd from "../crds/generated/argocd";
import type * as pko from "../crds/generated/pko";
import { accountOf, previewServiceAccount } from "./accounts";
import type { ProgramStage } from "./graph";
import { driftManifestFile, hasDriftCheck, stackManifestFile, stackObjectName, stageBranch } from "./names";
import { pluginCopyClaimSpec } from "./plugin-cache";
import { RECONCILE_REQUEST_ANNOTATION } from "./promotion-rollback";
import { canonicalResources } from "./quantity";
import type { Pipeline, Program } from "./schema";

/** The program a program stage runs (validation makes sure it exists). */
export const programOf = (p: Pick<Pipeline, "programs">, name: string): Program =>
  p.programs.find((x) => x.name === name)!;

export function applicationSpec(
  p: Pipeline,
  s: ProgramStage,
  deploy: { argocdProject: string },
): argocd.ApplicationSpec {
  return {
    project: deploy.argocdProject,
    // The stage's own branch, which its first promotion creates: until then Argo CD reports the Application
    // as a ComparisonError with sync status Unknown (argo-cd v3.4.4 controller/state.go) and deploys nothing.
    source: {
      repoURL: p.source.repoURL,
      targetRevision: stageBranch(s.name),
      path: ".",
      // An update stage's branch also holds its drift check (lib/pipeline/drift.ts), synced with it; Argo CD
      // reads `{a,b}` as either file (argo-cd v3.4.4 docs/user-guide/directory.md, Including/Excluding Files).
      directory: {
        include: hasDriftCheck(p, s)
          ? `{${stackManifestFile(s.name)},${driftManifestFile(s.name)}}`
          : stackManifestFile(s.name),
      },
    },
    destination: { server: "https://kubernetes.default.svc", namespace: p.stacks.namespace },
    // No automated sync and no pruning: only a promotion (Kargo's argocd-update step) syncs a stage.
  };
}

/**
 * The ServiceAccount a stage's Stack runs under: the environment's own identity for an update, the read-only
 * one for a preview (cluster-setup names them `<stacks.serviceAccountName>-<environment>` and `-preview`, or
 * `-preview-<account>` for an environment in another account: lib/pipeline/accounts.ts).
 * PKO runs the workspace pod as it (pulumi-kubernetes-operator v2.9.0,
 * operator/internal/controller/pulumi/stack_controller.go), so it carries the stage's IRSA role.
 */
export function stackServiceAccount(p: Pipeline, s: ProgramStage): string {
  return s.kind === "preview"
    ? previewServiceAccount(p.stacks.serviceAccountName, accountOf(p.environments, s.environment))
    : `${p.stacks.serviceAccountName}-${s.environment}`;
}

/**
 * The PKO Stack manifest template of a program stage, committed to `stacks/<stage>.yaml` on main. A
 * promotion copies it from the Freight's commit to the stage's branch and sets `spec.commit` there.
 */
export function stackManifest(p: Pipeline, s: ProgramStage) {
  const env = p.environments[s.environment]!;
  const program = programOf(p, s.program);
  const spec: pko.StackSpec = {
    stack: `${p.pulumi.organization}/${program.project}/${env.pulumiStack}`,
    projectRepo: p.source.repoURL,
    repoDir: program.dir,
    // The scalar the promotion's yaml-update replaces: Kargo's yaml-update only rewrites a key that exists, a
    // missing one fails the promotion (akuity/kargo v1.11.2 pkg/yaml/yaml.go, findScalarNode). Empty, PKO
    // refuses to run the template as it stands (pulumi-kubernetes-operator v2.9.0
    // operator/internal/controller/pulumi/git.go: `missing "commit" or "branch"`).
    commit: "",
    gitAuth: {
      accessToken: { type: "Secret", secret: { name: p.stacks.gitCredentialsSecret, key: "accessToken" } },
    },
    serviceAccountName: stackServiceAccount(p, s),
    envRefs: {
      PULUMI_ACCESS_TOKEN: {
        type: "Secret",
        secret: { name: p.stacks.accessTokenSecret, key: "accessToken" },
      },
    },
    // Config comes from Pulumi.<stack>.yaml at the promoted commit, never from here.
    // Previews refresh like their update does (PKO passes `refresh` to preview too: v2.9.0
    // agent/pkg/server/server.go), so a preview shows what the update will do. They share the update
    // stage's Pulumi stack and must never destroy it.
    refresh: true,
    // PKO never destroys for a preview Stack (v2.9.0 stack_controller.go: `!stack.DestroyOnFinalize ||
    // stack.Preview`). No field is written as false: PKO's own updates (its finalizer) write the spec back
    // from its Go types, whose booleans are `omitempty` (v2.9.0 operator/api/pulumi/shared/stack_types.go),
    // so a `false` here would not survive them, and the admission policy would see a changed spec.
    ...(s.kind === "preview" ? { preview: true } : env.ephemeral ? { destroyOnFinalize: true } : {}),
    // After a successful run the workspace pod goes; a failed one stays for its logs (v2.9.0
    // operator/internal/controller/pulumi/stack_controller.go).
    workspaceReclaimPolicy: "Delete",
    workspaceTemplate: {
      spec: {
        image: program.workspaceImage,
        securityProfile: "restricted",
        // PKO's agent caps its own memory at the request (v2.9.0 workspace_controller.go AGENT_MEMLIMIT).
        // In the form PKO writes it back (lib/pipeline/quantity.ts).
        resources: canonicalResources(program.resources),
        // The restricted profile runs as uid 1000 (PKO v2.9.0 workspace_controller.go), which has no home
        // directory in the language images but node's; PULUMI_HOME, and HOME for the runtime's own tools
        // (npm, uv, go), are a volume of the pod instead. Only the ~2 GB pulumi/pulumi has a -nonroot variant
        // (pulumi/pulumi-docker-containers docker/pulumi/Dockerfile), so this is what lets the 200-300 MB
        // images run non-root. PKO's `pulumi install` runs before every operation, with the lock file.
        // An environment's own region, where it names one, is its programs' default (a program's aws:region
        // still wins); the pod identity webhook leaves variables the container sets alone.
        env: [
          ...workspaceEnv(program.runtime),
          ...(env.aws?.region
            ? ["AWS_REGION", "AWS_DEFAULT_REGION"].map((name) => ({ name, value: env.aws!.region! }))
            : []),
        ],
        podTemplate: workspacePodTemplate(p),
      },
    },
  };
  return {
    apiVersion: "pulumi.com/v1",
    kind: "Stack",
    metadata: {
      name: stackObjectName(p, s.name),
      namespace: p.stacks.namespace,
      labels: {
        "app.kubernetes.io/part-of": p.project,
        "app.kubernetes.io/instance": s.name,
        "app.kubernetes.io/name": program.name,
      },
      annotations: {
        // Argo CD never deletes a Stack (which could run a destroy): not when pruning, not with its Application.
        "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
        // Each promotion sets it to its own name, so PKO runs the Stack again even at a commit it already ran
        // (lib/pipeline/promotion-rollback.ts). Empty here: yaml-update only rewrites a key that exists.
        [RECONCILE_REQUEST_ANNOTATION]: "",
      },
    },
    spec,
  };
}

/**
 * The taint of burst nodes (cluster-setup's Karpenter NodePool): only workspaces and verification Jobs
 * tolerate it, so the platform stays on the base and a burst node empties, and goes, once their work is
 * done. They are not pinned there: they start on the base when it has room and a pending one brings a node.
 */
export const BURST_TAINT = { key: "platform/burst", value: "true", effect: "NoSchedule" } as const;
/** The label of burst nodes. */
export const BURST_LABEL = "platform/burst";
/** What lets a pod onto a burst node. */
export const burstToleration = {
  key: BURST_TAINT.key,
  operator: "Equal",
  value: BURST_TAINT.value,
  effect: BURST_TAINT.effect,
};

/**
 * What keeps Karpenter from stopping a pod's work: while a pod carrying it runs, its node is neither
 * consolidated nor replaced for drift, and when the node expires its drain waits for the pod to end rather
 * than evicting it (the key is sigs.k8s.io/karpenter v1.15.1 pkg/apis/v1/labels.go DoNotDisruptAnnotationKey;
 * the behaviour, karpenter.sh v1.15 docs, Disruption, Pod-Level Controls). A `pulumi up` stopped halfway leaves
 * its stack locked and half a change made. Workspaces, verification Jobs and the plugin cache's seed carry it.
 */
export const DO_NOT_DISRUPT = { "karpenter.sh/do-not-disrupt": "true" } as const;

/** Where the workspace's Pulumi CLI keeps its state: a pod-lived emptyDir, with only `plugins/` persistent. */
export const WORKSPACE_PULUMI_HOME = "/pulumi-home";

/** PULUMI_HOME and HOME in the pod's volume; each runtime's lock enforced where its tool can be told to. */
export function workspaceEnv(runtime: string): { name: string; value: string }[] {
  const env = [
    { name: "PULUMI_HOME", value: WORKSPACE_PULUMI_HOME },
    { name: "HOME", value: WORKSPACE_PULUMI_HOME },
  ];
  // pulumi-go sets GOPATH=/go, which uid 1000 cannot write (pulumi-docker-containers docker/go/Dockerfile).
  if (runtime === "go") env.push({ name: "GOPATH", value: `${WORKSPACE_PULUMI_HOME}/go` });
  // `uv sync` fails instead of relocking, and never downloads a Python of its own (uv's UV_LOCKED and
  // UV_PYTHON_DOWNLOADS settings; Pulumi runs plain `uv sync`: pulumi/pulumi sdk/python/toolchain/uv.go).
  if (runtime === "python")
    env.push({ name: "UV_LOCKED", value: "1" }, { name: "UV_PYTHON_DOWNLOADS", value: "never" });
  return env;
}

/** The uid and gid PKO v2.9.0's restricted profile runs every workspace container as (workspace_controller.go). */
export const RESTRICTED_PROFILE_ID = 1000;

/**
 * The pod template PKO merges into each workspace pod (strategic merge: pulumi-kubernetes-operator v2.9.0
 * operator/internal/controller/auto/workspace_controller.go mergePodTemplateSpec; containers merge by name,
 * volumeMounts by mountPath, volumes by name). PULUMI_HOME (credentials, workspace settings, plugins) is an
 * emptyDir that goes with the pod.
 *
 * With the plugin cache (stacks.pluginCacheGiB), `$PULUMI_HOME/plugins` is a volume of the run's own,
 * restored from the cache's snapshot (lib/pipeline/plugin-cache.ts): `pulumi install` finds the pinned
 * plugins there and downloads nothing. It is a generic ephemeral volume, so it is created with the pod and
 * deleted with it (Kubernetes' ephemeral volume controller), and no run sees what another wrote.
 * PULUMI_HOME is a volume's root, not a folder of PKO's `/share`: the runtime creates a missing mount
 * point's parents as root, mode 0755, and uid 1000 could not write beside the plugins. fsGroup makes the
 * volume writable to the workspace (PKO sets runAsUser and runAsGroup but no fsGroup); OnRootMismatch
 * skips re-owning every plugin file, which the seed already wrote as uid and gid 1000.
 */
export function workspacePodTemplate(p: Pipeline) {
  const cache = p.stacks.pluginCacheGiB > 0;
  return {
    // PKO merges the template's metadata into the workspace's pod template too (mergePodTemplateSpec).
    metadata: { annotations: { ...DO_NOT_DISRUPT } },
    spec: {
      ...(cache
        ? { securityContext: { fsGroup: RESTRICTED_PROFILE_ID, fsGroupChangePolicy: "OnRootMismatch" } }
        : {}),
      tolerations: [burstToleration],
      containers: [
        {
          name: "pulumi",
          // What PKO's own updates write back: the pod template is a core/v1 PodSpec in its Go types
          // (v2.9.0 operator/internal/apply/auto/v1alpha1/embeddedpodtemplatespec.go), whose container
          // `resources` is a struct that Go's encoder writes even when empty. Without it, PKO adding its
          // finalizer would change the spec, which the admission policy holds to the plan.
          resources: {},
          volumeMounts: [
            { name: "pulumi-home", mountPath: WORKSPACE_PULUMI_HOME },
            ...(cache ? [{ name: "plugin-cache", mountPath: `${WORKSPACE_PULUMI_HOME}/plugins` }] : []),
          ],
        },
      ],
      volumes: [
        { name: "pulumi-home", emptyDir: {} },
        ...(cache
          ? [
              {
                name: "plugin-cache",
                ephemeral: {
                  volumeClaimTemplate: {
                    metadata: { labels: { "app.kubernetes.io/part-of": p.project } },
                    spec: pluginCopyClaimSpec(p),
                  },
                },
              },
            ]
          : []),
      ],
    },
  };
}
