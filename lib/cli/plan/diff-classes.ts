// The risk classes of each change in a plan diff, from the classifier the in-cluster verification runs
// (kargo/verification/classify.mjs) over the same normalized step, so that a pull request's plan diff and a
// preview's verification never disagree on what a change is. The step is built from the two plans'
// resources.json: a resource only after is a create, only before a delete; a replacement and an update carry
// both sides' inputs and the top-level inputs that differ. A removed resource with retainOnDelete is left in
// the cloud, in the classifier's words (LEFT_IN_CLOUD), as the Job says it. resources.json does not say which
// resources are components, so the step does not either, and the classifier takes it as custom.
import {
  LEFT_IN_CLOUD,
  classifyStep,
  leftInCloud,
  matchingRules,
  type RiskClass,
  type Step,
} from "../../../kargo/verification/classify.mjs";
import type { ChangeKind, ResourceChange } from "./diff";

export type { RiskClass };

/** The engine op each kind of change is (pulumi/pulumi sdk/go/common/apitype OpType). */
const ops: Record<ChangeKind, string> = {
  add: "create",
  remove: "delete",
  replace: "replace",
  update: "update",
};

/** The normalized step of a change, as the verification Job builds one from an engine event. */
export function stepOfChange(change: ResourceChange): Step {
  const step: Step = { op: ops[change.kind], type: change.type, urn: change.urn };
  if (change.before) step.oldInputs = change.before.inputs;
  if (change.before?.options.retainOnDelete) step.retainOnDelete = true;
  if (change.after) step.newInputs = change.after.inputs;
  if (change.kind === "update" || change.kind === "replace")
    step.diffs = [...new Set(change.properties.map((p) => p.path.replace(/[.[].*$/, "")))];
  return step;
}

/** The classifier's words for a removed resource that stays in the cloud; undefined for any other change. */
export const leftInCloudOf = (change: ResourceChange): string | undefined =>
  leftInCloud(stepOfChange(change)) ? LEFT_IN_CLOUD : undefined;

/** The change's risk classes, in the classifier's order; [] when none. */
export const classesOfChange = (change: ResourceChange): RiskClass[] => classifyStep(stepOfChange(change));

/** Why the classifier puts the change in `cls`: each matching rule's reason, once. */
export const whyOfChange = (change: ResourceChange, cls: RiskClass): string[] => [
  ...new Set(
    matchingRules(stepOfChange(change))
      .filter((r) => r.class === cls)
      .map((r) => r.why),
  ),
];
