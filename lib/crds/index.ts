// Typed custom resources, generated from the upstream CRDs at the versions we pin (`npm run crds`).
export * as argocd from "./generated/argocd";
export * as kargo from "./generated/kargo";
export * as karpenter from "./generated/karpenter";
export * as pko from "./generated/pko";
export * as rollouts from "./generated/rollouts";
export * as snapshots from "./generated/snapshots";
export type { StepConfigs } from "./generated/kargo-steps";
export type { DeepInput, NamedObjectMeta } from "./input";
