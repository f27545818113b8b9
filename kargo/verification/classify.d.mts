// Types of kargo/verification/classify.mjs (a dependency-free module the verification Job runs as is).

export type RiskClass = "loss" | "privilege" | "exposure" | "cost";
export declare const RISK_CLASSES: readonly RiskClass[];
export declare const LOSS_OPS: readonly string[];
export declare const CHANGE_OPS: readonly string[];
export declare const UNKNOWN: string;
export declare const SECRET_SIG_KEY: string;
export declare const SECRET_SIG: string;
/** What the Job and the plan diff say of a resource deleted with retainOnDelete. */
export declare const LEFT_IN_CLOUD: string;

/** One resource step, normalized from an engine event or from two offline plans' resources. */
export interface Step {
  /** A Pulumi engine step op: "same", "create", "update", "delete", "replace", "create-replacement", ... */
  op: string;
  /** The resource type token, e.g. "aws:iam/rolePolicy:RolePolicy". */
  type: string;
  urn?: string;
  oldInputs?: Record<string, unknown>;
  newInputs?: Record<string, unknown>;
  /** The changed top-level input keys; unknown when absent. */
  diffs?: string[];
  /** False for a component resource; absent when not told (taken as custom). */
  custom?: boolean;
  /** The old state's retainOnDelete: a delete leaves it in the cloud. */
  retainOnDelete?: boolean;
}

export interface Rule {
  class: RiskClass;
  /** Type tokens; a trailing `*` matches any token with that prefix. */
  types: readonly string[];
  /** The ops the rule applies to; CHANGE_OPS when absent. */
  ops?: readonly string[];
  keys?: readonly string[];
  ignoreKeys?: readonly string[];
  when?: (inputs: Record<string, unknown>) => boolean;
  /** A test of the whole step (the loss rule: a custom resource that the op removes from the cloud). */
  step?: (step: Step) => boolean;
  why: string;
}

export declare const RULES: readonly Rule[];
export declare function ruleMatches(rule: Rule, step: Step): boolean;
/** False, or the values that could not be told which made the rule match (`<path> unknown at preview`). */
export declare function ruleMatch(rule: Rule, step: Step): false | string[];
/** By class, the values that could not be told and alone put the step in that class. */
export declare function unclearOf(step: Step): Partial<Record<RiskClass, string[]>>;
export declare function isProvider(type: string): boolean;
export declare function leftInCloud(step: Step): boolean;
export declare function matchingRules(step: Step): Rule[];
/** The step's risk classes in RISK_CLASSES order; [] when none. */
export declare function classifyStep(step: Step): RiskClass[];
/** The normalized step of an engine event's `resourcePreEvent.metadata` (apitype StepEventMetadata). */
export declare function stepFromEngineEvent(metadata: unknown): Step & { urn: string };
