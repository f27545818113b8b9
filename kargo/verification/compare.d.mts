// Types of kargo/verification/compare.mjs (a dependency-free module the verification Job runs as is).
import type { RiskClass, Step } from "./classify.mjs";

export declare const NEUTRAL_OPS: readonly string[];
export declare const COUNTED_OPS: readonly string[];
export type EventStep = Step & { urn: string; logical: boolean };
export declare function stepsOf(events: unknown[]): EventStep[];
export declare function parseStopOn(value: string | undefined): "all" | RiskClass[];
export declare function changes(step: Step): boolean;
export interface Stopped {
  step: Step;
  classes: RiskClass[];
}
export declare function stops(steps: Step[], stopOn: "all" | readonly string[]): Stopped[];
export declare function compare(
  previewSteps: Step[],
  updateSteps: Step[],
): {
  matched: { step: Step; preview: Step | undefined }[];
  unexpected: { step: Step; why: string }[];
  neutral: Step[];
};
export declare function describe(step: Step): string;
export declare function stopLines(stopped: Stopped[]): string[];
export declare function recordOf(
  steps: Step[],
): { urn: string | undefined; type: string; op: string; classes: RiskClass[]; diffs?: string[] }[];
