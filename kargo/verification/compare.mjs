// What the verification Job decides from an operation's engine events: the resource steps they hold (and
// whether they hold them all), which steps of a preview stop it (STOP_ON), and whether an update did only
// what its preview showed. Pure functions over Pulumi Cloud's engine events (pulumi-cloud-sdk apitype
// EngineEvent; pulumi/pulumi v3.270.0 sdk/go/common/apitype/events.go), dependency-free.
//
// "The same", decided from Pulumi's engine (pulumi/pulumi pkg/engine/update.go and events.go,
// pkg/resource/deploy/step_generator.go and step.go; v3.259.0 from the repository and v3.274.1 from the Go
// proxy agree on each point, and bracket the CLI pin v3.270.0):
// - A step that changes nothing in the cloud (`same`, `read`, `refresh`, the discards of read resources,
//   `remove-pending-replace`) passes wherever it appears: NEUTRAL_OPS. Refresh-only differences are these.
// - Every other step of the update must be a step of the preview: the same resource (its URN, which holds
//   its type) and the same op. A replacement is three steps (create-replacement, replace, delete-replaced,
//   in either order), each matched by its own. An update where the preview showed a replace, or a delete,
//   or a resource the preview did not have, fails, saying which and why.
// - A step whose keys or risk classes go beyond its preview step's fails: the preview showed that update of
//   that resource, not this one.
// - An `update` where the preview showed `same` fails. The engine hands a preview's unknown values (outputs
//   a dependency's own update will change) to the provider (step_generator.go diffResource, AllowUnknowns
//   during preview), and a diff of unknowns is a change: such a dependent shows as `update` in the preview.
//   A `same` there is the engine saying, with all it knew, "nothing"; an update then means the state or the
//   inputs moved after the preview (drift, another program, a hand change), which is what this check exists
//   to catch. Preview again to see it.
// - The preview showing more than the update did (an update whose unknowns turned out unchanged) passes:
//   what was approved is a superset of what happened. So does an `update` of a resource the preview
//   replaced (a replacement trigger or ForceNew input unknown at preview turned out unchanged, and the
//   provider updated it in place), when it changed no key and has no class beyond the replacement's: it
//   is recorded as less than its preview (`lessThan`).
// - Events are complete only with the operation's summary event, when its counts of each op it counts
//   exactly (COUNTED_OPS; engine update.go OnResourceStepPost: logical, non-internal steps) equal the
//   logical steps the events hold and its `read`s are no more than they hold (a read that changed nothing
//   is not counted), and when each replacement is whole (REPLACEMENT_HALVES): otherwise events are missing
//   (Incomplete) and nothing is compared.

import {
  LEFT_IN_CLOUD,
  LOSS_OPS,
  RISK_CLASSES,
  classifyStep,
  leftInCloud,
  stepFromEngineEvent,
  unclearOf,
} from "./classify.mjs";

/** Ops that change nothing in the cloud (sdk/go/common/apitype OpType). */
export const NEUTRAL_OPS = [
  "same",
  "read",
  "refresh",
  "read-replacement",
  "discard",
  "discard-replaced",
  "remove-pending-replace",
];

/**
 * The ops whose counts the summary event holds for logical steps, and the events must match: every logical
 * step but `same` (the summary counts the untargeted ones the CLI does not upload: pulumi/pulumi v3.274.1
 * pkg/backend/httpstate/state.go isUntargetedEvent) and `read` (counted only when its outputs changed:
 * update.go shouldRecordReadStep). A `refresh` of `pulumi up --refresh` is not logical, and not counted.
 */
export const COUNTED_OPS = ["create", "update", "delete", "replace", "import", "discard"];

/**
 * The halves the engine makes with each logical `replace` of a resource (step_generator.go): its create
 * (create-replacement; import-replacement or read-replacement for an imported or read resource), always;
 * and its delete (delete-replaced; discard-replaced for a read one), after it when the create came first
 * (create-before-delete). A delete-before-replace's delete comes first, or not at all when an earlier,
 * interrupted update already deleted the old resource, which the events cannot tell from a lost one.
 */
export const REPLACEMENT_HALVES = {
  create: ["create-replacement", "import-replacement", "read-replacement"],
  delete: ["delete-replaced", "discard-replaced"],
};

/** Events that are not all there yet: the Job reads them again, for a while, before it fails. */
export class Incomplete extends Error {}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The resource steps of an operation's engine events (one per resourcePreEvent, with its `logical` flag),
 * in order. Throws Incomplete when the events are not all there (no summary event, counts that disagree
 * with it, a replacement missing a half), and an Error when they are not the engine's events.
 */
export function stepsOf(events) {
  if (!Array.isArray(events)) throw new Error("the engine events are not a list");
  const steps = [];
  let summary;
  for (const event of events) {
    if (!isObject(event)) throw new Error("an engine event is not an object");
    if (event.type === "resourcePreEvent") {
      if (!isObject(event.resourcePreEvent)) throw new Error("a resourcePreEvent has no payload");
      const metadata = event.resourcePreEvent.metadata;
      steps.push({ ...stepFromEngineEvent(metadata), logical: metadata.logical === true });
    } else if (event.type === "summaryEvent") {
      if (!isObject(event.summaryEvent) || !isObject(event.summaryEvent.resourceChanges))
        throw new Error("the summary event has no resourceChanges");
      summary = event.summaryEvent.resourceChanges;
    }
  }
  if (!summary) throw new Incomplete(`events incomplete: no summary event among ${events.length} event(s)`);
  const held = (op) => steps.filter((s) => s.logical && s.op === op).length;
  for (const op of COUNTED_OPS)
    if ((summary[op] ?? 0) !== held(op))
      throw new Incomplete(
        `events incomplete: the summary counts ${summary[op] ?? 0} ${op}(s), the events hold ${held(op)}`,
      );
  if ((summary.read ?? 0) > held("read"))
    throw new Incomplete(
      `events incomplete: the summary counts ${summary.read} read(s), the events hold ${held("read")}`,
    );
  const missing = missingHalves(steps);
  if (missing) throw new Incomplete(`events incomplete: ${missing}`);
  return steps;
}

/** The first replacement missing a half, said; undefined when each is whole. */
function missingHalves(steps) {
  const at = (ops, urn) => steps.findIndex((s) => ops.includes(s.op) && s.urn === urn);
  for (const [i, s] of steps.entries()) {
    const replace = s.op === "replace" && s.logical;
    const halfCreate = REPLACEMENT_HALVES.create.includes(s.op);
    if (!replace && !halfCreate) continue;
    const other = replace ? at(REPLACEMENT_HALVES.create, s.urn) : at(["replace"], s.urn);
    if (other < 0)
      return `${s.op} of ${describe(s)} without its ${replace ? REPLACEMENT_HALVES.create.join(" or ") : "replace"}`;
    // Create-before-delete: the old resource is deleted once the replacement exists, later on.
    if (replace && other < i && at(REPLACEMENT_HALVES.delete, s.urn) < 0)
      return `replace of ${describe(s)} without its ${REPLACEMENT_HALVES.delete.join(" or ")}`;
  }
  return undefined;
}

/** STOP_ON parsed: "all", or the classes listed (empty: stops for nothing). */
export function parseStopOn(value) {
  const v = (value ?? "").trim();
  if (v === "all") return "all";
  const classes = v === "" ? [] : v.split(",").map((c) => c.trim());
  for (const c of classes)
    if (!RISK_CLASSES.includes(c))
      throw new Error(
        `STOP_ON must be "all", or classes among ${RISK_CLASSES.join(", ")}, comma-separated; not ${JSON.stringify(value)}`,
      );
  return classes;
}

/** Whether a step changes something in the cloud. */
export const changes = (step) => !NEUTRAL_OPS.includes(step.op);

/**
 * The steps that stop a preview, each with its classes and what could not be told (`unclear`, by class):
 * those with a class STOP_ON lists, or with "all" every step that changes something.
 */
export function stops(steps, stopOn) {
  const out = [];
  for (const step of steps) {
    const classes = classifyStep(step);
    if (stopOn === "all" ? changes(step) : classes.some((c) => stopOn.includes(c)))
      out.push({ step, classes, unclear: unclearOf(step) });
  }
  return out;
}

/** The keys in `a` and not in `b`. */
const beyond = (a, b) => a.filter((k) => !b.includes(k));

/**
 * An update's steps against its preview's: `matched` (each update step that changes something, with the
 * preview step it matched), `unexpected` (each with why), and `neutral` (the steps that change nothing).
 */
export function compare(previewSteps, updateSteps) {
  const byUrn = new Map();
  for (const p of previewSteps) byUrn.set(p.urn, [...(byUrn.get(p.urn) ?? []), p]);
  const matched = [];
  const unexpected = [];
  const neutral = [];
  for (const u of updateSteps) {
    if (!changes(u)) {
      neutral.push(u);
      continue;
    }
    const shown = byUrn.get(u.urn) ?? [];
    const p = shown.find((s) => s.op === u.op && s.type === u.type);
    // Less than a replacement: the preview replaced it, the update updated it in place.
    const replaced =
      p ?? (u.op === "update" ? shown.find((s) => s.op === "replace" && s.type === u.type) : undefined);
    const why = replaced ? exceeds(replaced, u) : notShown(shown, u);
    if (why) unexpected.push({ step: u, why });
    else matched.push({ step: u, preview: replaced, ...(p ? {} : { lessThan: LESS_THAN_REPLACE }) });
  }
  return { matched, unexpected, neutral };
}

/** What the record says of an update that did less than its preview's replacement. */
export const LESS_THAN_REPLACE =
  "less than its preview: the preview replaced it (a replacement trigger unknown at preview), the update updated it in place";

/** Why an update step that the preview had with the same op still does more; undefined when it does not. */
function exceeds(p, u) {
  if (Array.isArray(p.diffs) && Array.isArray(u.diffs)) {
    const extra = beyond(u.diffs, p.diffs);
    if (extra.length) return `changed ${extra.join(", ")}, which the preview did not show changing`;
  }
  const extra = beyond(classifyStep(u), classifyStep(p));
  if (extra.length) return `is ${extra.join(", ")}, which its preview step was not`;
  return undefined;
}

/** Why an update step is not among the preview's. */
function notShown(shown, u) {
  const ops = [...new Set(shown.map((s) => s.op))];
  if (shown.length === 0)
    return u.op === "create"
      ? "a new resource the preview did not show"
      : `${u.op} of a resource the preview did not show`;
  if (!shown.some(changes))
    return `the preview showed no change (${ops.join(", ")}): the state or the inputs moved after the preview; preview again to see it`;
  const loss = LOSS_OPS.includes(u.op) && !shown.some((s) => LOSS_OPS.includes(s.op));
  return `the preview showed ${ops.join(", ")}, not ${u.op}${loss ? ": the update became a loss the preview did not show" : ""}`;
}

/** The URN's name and type, as a person reads them: `name (type)`. */
export function describe(step) {
  const parts = String(step.urn ?? "").split("::");
  const name = parts.length >= 4 ? parts.slice(3).join("::") : (step.urn ?? "?");
  return `${name} (${step.type})`;
}

/** One line per stopped step: what, its op and classes (with what could not be told), the keys it changes. */
export function stopLines(stopped) {
  return stopped.map(({ step, classes, unclear = {} }) => {
    const keys = Array.isArray(step.diffs) && step.diffs.length ? `; changes ${step.diffs.join(", ")}` : "";
    const cls = classes.map((c) => (unclear[c] ? `${c} (${unclear[c].join(", ")})` : c));
    if (leftInCloud(step)) cls.push(LEFT_IN_CLOUD);
    return `- ${describe(step)}: ${step.op}, ${cls.length ? cls.join(", ") : "a change"}${keys}`;
  });
}

/**
 * The steps of a record: what an auditor reads and an update is compared against. A step left in the cloud
 * says so; a matched step that did less than its preview says how (`lessThan`).
 */
export const recordOf = (steps) =>
  steps.filter(changes).map((s) => {
    const unclear = unclearOf(s);
    return {
      urn: s.urn,
      type: s.type,
      op: s.op,
      classes: classifyStep(s),
      ...(Array.isArray(s.diffs) ? { diffs: s.diffs } : {}),
      ...(Object.keys(unclear).length ? { unclear } : {}),
      ...(leftInCloud(s) ? { leftInCloud: LEFT_IN_CLOUD } : {}),
    };
  });

/** The matched steps of a comparison, as recorded: each step's record, and how it did less, if it did. */
export const matchedRecord = (matched) =>
  matched.map((m) => ({ ...recordOf([m.step])[0], ...(m.lessThan ? { lessThan: m.lessThan } : {}) }));
