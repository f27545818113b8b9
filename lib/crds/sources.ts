/**
 * The upstream files our typed resources and the validator are made from, at the versions we pin
 * (ARCHITECTURE.md). `file` is relative to the CRDs folder (`../shared/crds` or `CRDS_DIR`); `url` is the
 * same file at the pinned upstream tag, which `npm run crds -- --fetch` downloads.
 */

const raw = (repo: string, tag: string, file: string) =>
  `https://raw.githubusercontent.com/${repo}/${tag}/${file}`;

export const pinned = {
  kargo: "v1.11.2",
  pko: "v2.9.0",
  argocd: "v3.4.4",
  rollouts: "v1.9.0", // the chart's appVersion and the Go module the harness runs (CRDs identical to v1.9.1's)
  argoCdChart: "argo-cd-10.1.1",
  argoRolloutsChart: "argo-rollouts-2.41.0",
  certManager: "v1.21.1",
  karpenter: "v1.15.1",
  // The EKS snapshot-controller add-on's upstream (cluster/config.ts SNAPSHOT_CONTROLLER_VERSION), whose
  // CRDs the add-on installs.
  externalSnapshotter: "v8.4.0",
  // Argo Events' CRDs (EventBus, EventSource, Sensor), from its Go module, which test/argoevents runs.
  argoEvents: "v1.9.10",
} as const;

/** A Go module whose zip, as `go mod download` leaves it in the module cache, carries upstream files. */
export interface GoModule {
  path: string;
  version: string;
}

/**
 * Karpenter's CRDs and chart values also come in its Go module, which the module proxy serves
 * (`go mod download github.com/aws/karpenter-provider-aws@v1.15.1` leaves the .zip in the module cache even
 * though it reports an error about the go version the module needs; nothing is built). A file missing from
 * the CRDs folder is read from that zip; without either, the committed schemas stand.
 */
export const karpenterModule: GoModule = {
  path: "github.com/aws/karpenter-provider-aws",
  version: pinned.karpenter,
};

/**
 * The CSI snapshot CRDs (VolumeSnapshot, VolumeSnapshotClass) are in external-snapshotter's client module,
 * whose root is the repository's client/ folder (`config/crd`).
 */
export const snapshotterModule: GoModule = {
  path: "github.com/kubernetes-csi/external-snapshotter/client/v8",
  version: pinned.externalSnapshotter,
};

/**
 * Argo Events' CRDs are in its Go module (manifests/base/crds). They hold no schema of the spec
 * (x-kubernetes-preserve-unknown-fields): what the spec may hold, test/argoevents checks with Argo Events'
 * own types and validators.
 */
export const argoEventsModule: GoModule = {
  path: "github.com/argoproj/argo-events",
  version: pinned.argoEvents,
};

/** An upstream file as it sits inside a Go module's zip, for when the CRDs folder lacks it. */
export interface GoModuleFile {
  module: GoModule;
  file: string;
}

export interface CrdSource {
  /** Module under lib/crds/generated the kinds go to. */
  module: "kargo" | "pko" | "argocd" | "rollouts" | "karpenter" | "snapshots" | "argoevents";
  file: string;
  url: string;
  /** The same file inside a Go module's zip, when the CRDs folder lacks it. */
  inModule?: GoModuleFile;
  /** Kinds and versions to generate typed resources for; every served version is validated. */
  generate: { kind: string; version: string }[];
}

const kargoCrd = (plural: string, kind: string | undefined): CrdSource => ({
  module: "kargo",
  file: `kargo/kargo.akuity.io_${plural}.yaml`,
  url: raw("akuity/kargo", pinned.kargo, `charts/kargo/resources/crds/kargo.akuity.io_${plural}.yaml`),
  generate: kind ? [{ kind, version: "v1alpha1" }] : [],
});

function karpenterCrd(name: string, kind: string): CrdSource {
  const file = `pkg/apis/crds/${name}`;
  return {
    module: "karpenter",
    file: `karpenter/${name}`,
    url: raw("aws/karpenter-provider-aws", pinned.karpenter, file),
    inModule: { module: karpenterModule, file },
    generate: [{ kind, version: "v1" }],
  };
}

function snapshotCrd(plural: string, kind: string): CrdSource {
  const file = `config/crd/snapshot.storage.k8s.io_${plural}.yaml`;
  return {
    module: "snapshots",
    file: `external-snapshotter/snapshot.storage.k8s.io_${plural}.yaml`,
    url: raw("kubernetes-csi/external-snapshotter", pinned.externalSnapshotter, `client/${file}`),
    inModule: { module: snapshotterModule, file },
    generate: [{ kind, version: "v1" }],
  };
}

/** Validated only as a kind (its spec has no schema); declared untyped (kargo/eventRouter.ts). */
function argoEventsCrd(plural: string): CrdSource {
  const file = `manifests/base/crds/argoproj.io_${plural}.yaml`;
  return {
    module: "argoevents",
    file: `argo-events/argoproj.io_${plural}.yaml`,
    url: raw("argoproj/argo-events", pinned.argoEvents, file),
    inModule: { module: argoEventsModule, file },
    generate: [],
  };
}

export const crdSources: CrdSource[] = [
  kargoCrd("projects", "Project"),
  kargoCrd("projectconfigs", "ProjectConfig"),
  kargoCrd("warehouses", "Warehouse"),
  kargoCrd("stages", "Stage"),
  kargoCrd("promotiontasks", "PromotionTask"),
  kargoCrd("clusterpromotiontasks", "ClusterPromotionTask"),
  // Validated, never declared by us: Kargo creates these.
  kargoCrd("freights", undefined),
  kargoCrd("promotions", undefined),
  kargoCrd("clusterconfigs", undefined),
  {
    module: "pko",
    file: "pko/pulumi.com_stacks.yaml",
    url: raw(
      "pulumi/pulumi-kubernetes-operator",
      pinned.pko,
      "operator/config/crd/bases/pulumi.com_stacks.yaml",
    ),
    generate: [{ kind: "Stack", version: "v1" }],
  },
  {
    module: "argocd",
    file: "argo-cd/application-crd.yaml",
    url: raw("argoproj/argo-cd", pinned.argocd, "manifests/crds/application-crd.yaml"),
    generate: [{ kind: "Application", version: "v1alpha1" }],
  },
  {
    module: "argocd",
    file: "argo-cd/appproject-crd.yaml",
    url: raw("argoproj/argo-cd", pinned.argocd, "manifests/crds/appproject-crd.yaml"),
    generate: [{ kind: "AppProject", version: "v1alpha1" }],
  },
  {
    module: "rollouts",
    file: "argo-rollouts/analysis-template-crd.yaml",
    url: raw("argoproj/argo-rollouts", pinned.rollouts, "manifests/crds/analysis-template-crd.yaml"),
    generate: [{ kind: "AnalysisTemplate", version: "v1alpha1" }],
  },
  karpenterCrd("karpenter.sh_nodepools.yaml", "NodePool"),
  karpenterCrd("karpenter.k8s.aws_ec2nodeclasses.yaml", "EC2NodeClass"),
  snapshotCrd("volumesnapshotclasses", "VolumeSnapshotClass"),
  snapshotCrd("volumesnapshots", "VolumeSnapshot"),
  ...["eventbus", "eventsources", "sensors"].map(argoEventsCrd),
];

/** Kargo's promotion-step config schemas (the CRDs leave step `config` unchecked). */
export const kargoStepSchemaDir = {
  dir: "kargo/step-schemas",
  url: (name: string) => raw("akuity/kargo", pinned.kargo, `pkg/promotion/runner/builtin/schemas/${name}`),
};

/** Kargo's Warehouse subscription schemas (the CRD leaves `subscriptions[]` unchecked). */
export const kargoSubscriptionSchemas = {
  dir: "kargo/subscription-schemas",
  names: ["git", "image", "chart"] as const,
  url: (name: string) => raw("akuity/kargo", pinned.kargo, `pkg/subscription/schemas/${name}.json`),
};

/** The built-in steps of Kargo v1.11.2 (OSS) whose config schemas the fetch downloads. */
export const kargoBuiltinSteps = [
  "argocd-update",
  "argocd-wait",
  "compose-output",
  "copy",
  "delete",
  "fail",
  "file-write",
  "git-clear",
  "git-clone",
  "git-commit",
  "git-merge-pr",
  "git-open-pr",
  "git-push",
  "git-tag",
  "git-wait-for-pr",
  "github-push",
  "helm-template",
  "helm-update-chart",
  "http",
  "http-download",
  "json-parse",
  "json-update",
  "kustomize-build",
  "kustomize-set-image",
  "oci-download",
  "oci-push",
  "set-freight-alias",
  "set-metadata",
  "toml-parse",
  "toml-update",
  "untar",
  "yaml-merge",
  "yaml-parse",
  "yaml-update",
] as const;

/** A chart's default values: the validator checks that every key we set is one the chart reads. */
export interface ChartValuesSource {
  /** Name the tests look the chart up by (the Helm release name we install it as). */
  chart: string;
  file: string;
  url: string;
  /** The same file inside a Go module's zip, when the CRDs folder lacks it. */
  inModule?: GoModuleFile;
}

export const chartValuesSources: ChartValuesSource[] = [
  {
    chart: "kargo",
    file: "kargo/chart-values.yaml",
    url: raw("akuity/kargo", pinned.kargo, "charts/kargo/values.yaml"),
  },
  {
    chart: "argocd",
    file: "argo-helm/argo-cd-chart-values.yaml",
    url: raw("argoproj/argo-helm", pinned.argoCdChart, "charts/argo-cd/values.yaml"),
  },
  {
    chart: "argo-rollouts",
    file: "argo-helm/argo-rollouts-chart-values.yaml",
    url: raw("argoproj/argo-helm", pinned.argoRolloutsChart, "charts/argo-rollouts/values.yaml"),
  },
  {
    chart: "pulumi-kubernetes-operator",
    file: "pko/chart-values.yaml",
    url: raw("pulumi/pulumi-kubernetes-operator", pinned.pko, "deploy/helm/pulumi-operator/values.yaml"),
  },
  {
    chart: "karpenter",
    file: "karpenter/chart-values.yaml",
    url: raw("aws/karpenter-provider-aws", pinned.karpenter, "charts/karpenter/values.yaml"),
    inModule: { module: karpenterModule, file: "charts/karpenter/values.yaml" },
  },
];

/** cert-manager ships a JSON schema for its values instead. */
export const certManagerValuesSchema = {
  file: "cert-manager/values.schema.json",
  url: raw("cert-manager/cert-manager", pinned.certManager, "deploy/charts/cert-manager/values.schema.json"),
};
