// The risk classes of one resource step: what a person must decide before it reaches an environment. One
// classifier for the in-cluster verification (verify.mjs, over Pulumi Cloud's engine events) and the plan
// diff's headings (lib/cli/plan/diff-*, over two offline plans), so the two never disagree.
//
// A step is normalized: { op, type, urn?, oldInputs?, newInputs?, diffs?, custom?, retainOnDelete? }. `op` is
// a Pulumi engine step op (pulumi/pulumi v3.274.1 sdk/go/common/apitype/history.go OpType; the same list as
// pulumi-cloud-sdk apitype AppOpType), `type` the resource type token, `diffs` the changed top-level input
// keys, `custom` false for a component (absent: not told, taken as custom), `retainOnDelete` the old state's.
//
// The classes:
// - loss: the step deletes or replaces a resource (its data, its identity, whatever depended on its ID); not
//   a component's or a provider's step (neither has a cloud object), and not the delete of a resource with
//   `retainOnDelete`, which is left in the cloud (LEFT_IN_CLOUD, the words the plan diff uses too).
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
//   new inputs are unknown (absent), the rule matches. A value the test reads that is unknown at preview time
//   (the engine's unknown sentinel) or secret (the engine's blinded secret) counts as matching, since it may
//   be anything, and the match says which and why (`unclear`); an unknown or secret value the test does not
//   read (a security group rule's `securityGroupId`) decides nothing.

import {
  CHANGE_OPS,
  LEFT_IN_CLOUD,
  LOSS_OPS,
  RISK_CLASSES,
  RULES,
  UNKNOWN,
  isObject,
  isProvider,
  leftInCloud,
} from "./rules.mjs";
import { SECRET_SIG, SECRET_SIG_KEY, unclear } from "./values.mjs";

export {
  CHANGE_OPS,
  LEFT_IN_CLOUD,
  LOSS_OPS,
  RISK_CLASSES,
  RULES,
  SECRET_SIG,
  SECRET_SIG_KEY,
  UNKNOWN,
  isProvider,
  leftInCloud,
};

const typeMatches = (patterns, type) =>
  patterns.some((p) => (p.endsWith("*") ? type.startsWith(p.slice(0, -1)) : p === type));

/** Whether a value is, or holds, one that cannot be told (unknown at preview, or secret). */
const hasUnclear = (v) => unclear(v).found.length > 0;

/**
 * The changed top-level keys: the step's own, else those whose inputs differ (or hold a value that cannot
 * be told: two secrets read the same, blinded), else undefined (unknown).
 */
function changedKeys(step) {
  if (Array.isArray(step.diffs)) return step.diffs.map((k) => String(k).split(/[.[]/)[0]);
  if (!isObject(step.oldInputs) || !isObject(step.newInputs)) return undefined;
  const keys = new Set([...Object.keys(step.oldInputs), ...Object.keys(step.newInputs)]);
  return [...keys].filter(
    (k) =>
      JSON.stringify(step.oldInputs[k]) !== JSON.stringify(step.newInputs[k]) ||
      hasUnclear(step.oldInputs[k]) ||
      hasUnclear(step.newInputs[k]),
  );
}

/**
 * Whether one rule matches the step: false, or the values it could not tell that made it match (each
 * `<path> unknown at preview` or `<path> secret`; [] when it matched on what it read).
 */
export function ruleMatch(rule, step) {
  if (!isObject(step) || typeof step.op !== "string" || typeof step.type !== "string") return false;
  if (!(rule.ops ?? CHANGE_OPS).includes(step.op)) return false;
  if (!typeMatches(rule.types, step.type)) return false;
  if (rule.step && !rule.step(step)) return false;
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
  if (!rule.when || !inputs) return [];
  const marked = unclear(inputs);
  if (!rule.when(marked.inputs)) return false;
  return marked.found.filter((u) => u.used).map((u) => `${u.path} ${u.why}`);
}

/** Whether one rule matches the step. */
export const ruleMatches = (rule, step) => ruleMatch(rule, step) !== false;

/** The rules that match the step, for a message saying why. */
export const matchingRules = (step) => RULES.filter((r) => ruleMatches(r, step));

/** The step's risk classes, in RISK_CLASSES order; [] when none. */
export function classifyStep(step) {
  const classes = new Set(matchingRules(step).map((r) => r.class));
  return RISK_CLASSES.filter((c) => classes.has(c));
}

/**
 * The values that could not be told and put the step in a class, by class: `{ exposure: ["ingress[0]
 * .cidrBlocks unknown at preview"] }`. A class some rule gives on what it read has none: it holds anyway.
 */
export function unclearOf(step) {
  const matches = RULES.map((r) => [r.class, ruleMatch(r, step)]).filter(([, found]) => found !== false);
  const sure = new Set(matches.filter(([, found]) => found.length === 0).map(([c]) => c));
  const byClass = {};
  for (const [c, found] of matches)
    if (!sure.has(c)) byClass[c] = [...new Set([...(byClass[c] ?? []), ...found])];
  return byClass;
}

/**
 * The normalized step of a Pulumi Cloud engine event's `resourcePreEvent.metadata` (pulumi-cloud-sdk apitype
 * AppStepEventMetadata; pulumi/pulumi apitype StepEventMetadata): its op, type and URN, the old and new
 * states' inputs, the changed keys (`diffs`, else the top-level keys of `detailedDiff`, else unknown),
 * whether it is a custom resource (the state's `custom`, omitted when false) and the old state's
 * `retainOnDelete`.
 */
export function stepFromEngineEvent(metadata) {
  if (!isObject(metadata)) throw new Error("an engine event's step metadata is not an object");
  const { op, type, urn } = metadata;
  if (typeof op !== "string" || typeof type !== "string" || typeof urn !== "string")
    throw new Error("an engine event's step metadata has no op, type or urn");
  const step = { op, type, urn };
  if (isObject(metadata.old) && isObject(metadata.old.inputs)) step.oldInputs = metadata.old.inputs;
  if (isObject(metadata.new) && isObject(metadata.new.inputs)) step.newInputs = metadata.new.inputs;
  const state = isObject(metadata.new) ? metadata.new : isObject(metadata.old) ? metadata.old : undefined;
  if (state) step.custom = state.custom === true;
  if (isObject(metadata.old) && metadata.old.retainOnDelete === true) step.retainOnDelete = true;
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
