// The risk classes of one resource step: what a person must decide before it reaches an environment. One
// classifier for the in-cluster verification (verify.mjs, over Pulumi Cloud's engine events) and the plan
// diff's headings (lib/cli/plan/diff-*, over two offline plans), so the two never disagree.
//
// A step is normalized: { op, type, urn?, oldInputs?, newInputs?, diffs? }. `op` is a Pulumi engine step op
// (pulumi/pulumi v3.270.0 sdk/go/common/apitype/events.go OpType; the same list as pulumi-cloud-sdk
// apitype AppOpType), `type` the resource type token, `diffs` the changed top-level input keys.
//
// The classes:
// - loss: the step deletes or replaces a resource (its data, its identity, whatever depended on its ID).
// - privilege: the step changes who may do what: IAM, KMS key policies and grants, resource policies,
//   Kubernetes RBAC.
// - exposure: the step widens network reach or public access: ingress from anywhere, S3 public access,
//   internet-facing load balancers, public IPs, public endpoints.
// - cost: the step adds or resizes something billed by size or by the hour: instances, databases, node
//   groups, NAT gateways, load balancers and clusters.
//
// Covered, and only these: AWS through the `aws:` (pulumi-aws) and `aws-native:` (CloudFormation-based) type
// tokens, and Kubernetes RBAC, Services and Ingresses through `kubernetes:` tokens. A resource of another
// provider is only ever `loss` (by its op). The rows are data, in rules.mjs (RULES); each says why.
//
// A rule matches a step when the step's op is among the rule's ops, its type among the rule's types, and:
// - `keys` (when given): on an update, one of the changed keys is among them (when the step does not say
//   which keys changed and its inputs cannot tell, the rule matches: what cannot be told stops); on a
//   create or replacement, one of them is set in the new inputs (or the new inputs are unknown);
// - `when` (when given): the new inputs say so (a value test such as "ingress from 0.0.0.0/0"); when the
//   new inputs are unknown (absent), the rule matches. A value unknown at preview time (the engine's
//   unknown sentinel) counts as matching, since it may turn out to be anything.

import { CHANGE_OPS, LOSS_OPS, RISK_CLASSES, RULES, UNKNOWN, isObject } from "./rules.mjs";

export { CHANGE_OPS, LOSS_OPS, RISK_CLASSES, RULES, UNKNOWN };

const typeMatches = (patterns, type) =>
  patterns.some((p) => (p.endsWith("*") ? type.startsWith(p.slice(0, -1)) : p === type));

/** The changed top-level keys: the step's own, else those whose inputs differ, else undefined (unknown). */
function changedKeys(step) {
  if (Array.isArray(step.diffs)) return step.diffs.map((k) => String(k).split(/[.[]/)[0]);
  if (!isObject(step.oldInputs) || !isObject(step.newInputs)) return undefined;
  const keys = new Set([...Object.keys(step.oldInputs), ...Object.keys(step.newInputs)]);
  return [...keys].filter((k) => JSON.stringify(step.oldInputs[k]) !== JSON.stringify(step.newInputs[k]));
}

/** Whether one rule matches the step. */
export function ruleMatches(rule, step) {
  if (!isObject(step) || typeof step.op !== "string" || typeof step.type !== "string") return false;
  if (!(rule.ops ?? CHANGE_OPS).includes(step.op)) return false;
  if (!typeMatches(rule.types, step.type)) return false;
  const inputs = isObject(step.newInputs) ? step.newInputs : undefined;
  if (step.op === "update" && (rule.keys || rule.ignoreKeys)) {
    const changed = changedKeys(step);
    if (changed !== undefined) {
      const relevant = changed.filter((k) => !(rule.ignoreKeys ?? []).includes(k));
      if (!relevant.some((k) => (rule.keys ? rule.keys.includes(k) : true))) return false;
    }
  } else if (rule.keys && !rule.when && inputs) {
    // A create or replacement: the keys matter when they are set (a value test decides for itself, since an
    // unset value may be the risky default).
    if (!rule.keys.some((k) => inputs[k] !== undefined && inputs[k] !== null)) return false;
  }
  return !rule.when || !inputs || rule.when(inputs);
}

/** The rules that match the step, for a message saying why. */
export const matchingRules = (step) => RULES.filter((r) => ruleMatches(r, step));

/** The step's risk classes, in RISK_CLASSES order; [] when none. */
export function classifyStep(step) {
  const classes = new Set(matchingRules(step).map((r) => r.class));
  return RISK_CLASSES.filter((c) => classes.has(c));
}

/**
 * The normalized step of a Pulumi Cloud engine event's `resourcePreEvent.metadata` (pulumi-cloud-sdk apitype
 * AppStepEventMetadata; pulumi/pulumi apitype StepEventMetadata): its op, type and URN, the old and new
 * states' inputs, and the changed keys (`diffs`, else the top-level keys of `detailedDiff`, else unknown).
 */
export function stepFromEngineEvent(metadata) {
  if (!isObject(metadata)) throw new Error("an engine event's step metadata is not an object");
  const { op, type, urn } = metadata;
  if (typeof op !== "string" || typeof type !== "string" || typeof urn !== "string")
    throw new Error("an engine event's step metadata has no op, type or urn");
  const step = { op, type, urn };
  if (isObject(metadata.old) && isObject(metadata.old.inputs)) step.oldInputs = metadata.old.inputs;
  if (isObject(metadata.new) && isObject(metadata.new.inputs)) step.newInputs = metadata.new.inputs;
  // `diffs` is omitted when empty, and an empty `detailedDiff` means none was available: neither says
  // "nothing changed", so the keys are then unknown and the inputs are compared instead.
  const paths = [
    ...(Array.isArray(metadata.diffs) ? metadata.diffs : []),
    ...(isObject(metadata.detailedDiff) ? Object.keys(metadata.detailedDiff) : []),
  ];
  if (paths.length) step.diffs = [...new Set(paths.map(topKey))];
  return step;
}

/** The top-level key of a property path (`ingress[0].cidrBlocks` is `ingress`). */
const topKey = (path) => String(path).split(/[.[]/)[0];
