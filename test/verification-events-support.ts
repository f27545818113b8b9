// Engine events for the verification Job's tests, shaped as the CLI uploads them and Pulumi Cloud serves them:
// one place for the events the compare and events tests feed kargo/verification/compare.mjs. The shapes are
// pulumi/pulumi v3.274.1's: sdk/go/common/apitype/events.go (StepEventMetadata, StepEventStateMetadata, whose
// `custom`, `retainOnDelete`, `protect`, `delete`, `keys`, `diffs` and `logical` are omitted when empty),
// pkg/engine/events.go makeStepEventMetadata (a step's old and new states: a create has no old, a delete no
// new), pkg/resource/deploy/step.go (which steps are logical) and pkg/resource/stack/deployment.go (unknowns
// and secrets in inputs).
import { SECRET_SIG, SECRET_SIG_KEY, UNKNOWN, stepFromEngineEvent } from "../kargo/verification/classify.mjs";
import { stepsOf } from "../kargo/verification/compare.mjs";

export const stack = "urn:pulumi:dev::app::";
export const urn = (type: string, name: string) => `${stack}${type}::${name}`;
const stackUrn = urn("pulumi:pulumi:Stack", "app-dev");
const provider = `${urn("pulumi:providers:aws", "default_7_0_0")}::0b1e6a43-5d3a-4b64-9f4e-1d1a3c2b7e55`;

export type Meta = {
  op: string;
  type: string;
  name: string;
  diffs?: string[];
  /** The new state's inputs (and the old state's, unless `oldInputs` says otherwise). */
  inputs?: Record<string, unknown>;
  oldInputs?: Record<string, unknown>;
  /** The keys causing a replacement (create-replacement and replace steps). */
  keys?: string[];
  /** A component resource: `custom` omitted from its states, no ID, no provider. */
  component?: boolean;
  retainOnDelete?: boolean;
  protect?: boolean;
};

/** A value unknown at preview, and a secret, as the engine's events hold them. */
export const unknownValue = UNKNOWN;
export const secretValue = () => ({ [SECRET_SIG_KEY]: SECRET_SIG, ciphertext: "[secret]" });

/** Steps whose `new` state is nil (step.go: DeleteStep.New) and whose `old` is (CreateStep.Old, not replacing). */
const noNew = ["delete", "delete-replaced", "discard", "discard-replaced", "remove-pending-replace"];
const noOld = ["create", "import", "read"];
/** Steps the engine does not count in its summary (step.go Logical: the replacement halves, refresh). */
const notLogical = [
  "create-replacement",
  "delete-replaced",
  "import-replacement",
  "read-replacement",
  "discard-replaced",
  "refresh",
  "remove-pending-replace",
];

/** A resourcePreEvent as Pulumi Cloud stores it (pulumi-cloud-sdk apitype EngineEvent, AppStepEventMetadata). */
export const pre = (m: Meta, logical = !notLogical.includes(m.op)) => {
  const { op, type, name, diffs, inputs, oldInputs, keys, component, retainOnDelete, protect } = m;
  const state = (ins: Record<string, unknown> | undefined, old: boolean) => ({
    type,
    urn: urn(type, name),
    ...(component ? {} : { custom: true }),
    id: component || (!old && op !== "same" && op !== "update") ? "" : `id-${name}`,
    parent: type === "pulumi:pulumi:Stack" ? "" : stackUrn,
    ...(protect ? { protect: true } : {}),
    ...(retainOnDelete ? { retainOnDelete: true } : {}),
    inputs: ins ?? {},
    outputs: {},
    provider: component ? "" : provider,
  });
  return {
    sequence: 0,
    timestamp: 1,
    type: "resourcePreEvent",
    resourcePreEvent: {
      metadata: {
        op,
        urn: urn(type, name),
        type,
        old: noOld.includes(op) ? null : state(oldInputs ?? inputs, true),
        new: noNew.includes(op) ? null : state(inputs, false),
        ...(keys ? { keys } : {}),
        ...(diffs && diffs.length ? { diffs } : {}),
        detailedDiff: null,
        ...(logical ? { logical: true } : {}),
        provider: component ? "" : provider,
      },
      planning: true,
    },
  };
};

/**
 * The events of an operation: its steps, and the summary the engine counts them in (logical steps; a `read`
 * only when it changed something, which these never do).
 */
export const eventsOf = (...metas: Meta[]) => {
  const events = metas.map((m) => pre(m));
  const resourceChanges: Record<string, number> = {};
  for (const e of events)
    if (e.resourcePreEvent.metadata.logical && e.resourcePreEvent.metadata.op !== "read") {
      const op = e.resourcePreEvent.metadata.op;
      resourceChanges[op] = (resourceChanges[op] ?? 0) + 1;
    }
  const all = [
    { sequence: 0, timestamp: 0, type: "preludeEvent", preludeEvent: { config: {} } },
    ...events,
    {
      sequence: 0,
      timestamp: 2,
      type: "summaryEvent",
      summaryEvent: {
        maybeCorrupt: false,
        durationSeconds: 3,
        resourceChanges,
        PolicyPacks: {},
        isPreview: true,
        result: "succeeded",
      },
    },
  ];
  // Each event's own sequence number, in the order emitted (apitype.EngineEvent).
  return all.map((e, i) => ({ ...e, sequence: i }));
};

export const role = { type: "aws:iam/role:Role", name: "app" };
export const bucket = { type: "aws:s3/bucketV2:BucketV2", name: "data" };
export const sg = { type: "aws:ec2/securityGroup:SecurityGroup", name: "web" };
export const db = { type: "aws:rds/instance:Instance", name: "db" };
/** A create-before-delete replacement, as the engine orders its steps (step_generator.go). */
export const replace = (r: { type: string; name: string }) => [
  { op: "create-replacement", ...r },
  { op: "replace", ...r },
  { op: "delete-replaced", ...r },
];
/** A delete-before-replace: the old one first, then the replacement. */
export const replaceDeletingFirst = (r: { type: string; name: string }) => [
  { op: "delete-replaced", ...r },
  { op: "replace", ...r },
  { op: "create-replacement", ...r },
];
export const steps = (...metas: Meta[]) => stepsOf(eventsOf(...metas));
/** Steps as stepsOf reads them, without its completeness checks: for stops and compare on their own. */
export const stepsAlone = (...metas: Meta[]) =>
  metas.map((m) => {
    const { metadata } = pre(m).resourcePreEvent;
    return { ...stepFromEngineEvent(metadata), logical: metadata.logical === true };
  });
