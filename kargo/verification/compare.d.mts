// Types of kargo/verification/compare.mjs (a dependency-free module the verification Job runs as is).
import type { RiskClass, Step } from "./classify.mjs";

export declare const NEUTRAL_OPS: readonly string[];
export declare const COUNTED_OPS: readonly string[];
export declare const REPLACEMENT_HALVES: { create: readonly string[]; delete: readonly string[] };
export declare const LESS_THAN_REPLACE: string;
/** Events that are not all there yet. */
export declare class Incomplete extends Error {}
export type EventStep = Step & { urn: string; logical: boolean };
export declare function stepsOf(events: unknown[]): EventStep[];
export declare function parseStopOn(value: string | undefined): "all" | RiskClass[];
export declare function changes(step: Step): boolean;
export interface Stopped {
  step: Step;
  classes: RiskClass[];
  unclear?: Partial<Record<RiskClass, string[]>>;
}
export declare function stops(steps: Step[], stopOn: "all" | readonly string[]): Stopped[];
export declare function compare(
  previewSteps: Step[],
  updateSteps: Step[],
): {
  matched: { step: Step; preview: Step | undefined; lessThan?: string }[];
  unexpected: { step: Step; why: string }[];
  neutral: Step[];
};
export declare function describe(step: Step): string;
export declare function stopLines(stopped: Stopped[]): string[];
export interface StepRecord {
  urn: string | undefined;
  type: string;
  op: string;
  classes: RiskClass[];
  diffs?: string[];
  unclear?: Partial<Record<RiskClass, string[]>>;
  leftInCloud?: string;
}
export declare function recordOf(steps: Step[]): StepRecord[];
export declare function matchedRecord(
  matched: { step: Step; lessThan?: string }[],
): (StepRecord & { lessThan?: string })[];
