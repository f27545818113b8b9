// Engine steps as the risk classifier takes them (kargo/verification/classify.mjs), for the classifier's tests.
import type { Step } from "../kargo/verification/classify.mjs";

export const OPEN = "0.0.0.0/0";

export const create = (type: string, newInputs?: Record<string, unknown>): Step => ({
  op: "create",
  type,
  newInputs,
});

export const update = (
  type: string,
  oldInputs: Record<string, unknown> | undefined,
  newInputs: Record<string, unknown> | undefined,
  diffs?: string[],
): Step => ({ op: "update", type, oldInputs, newInputs, ...(diffs ? { diffs } : {}) });
