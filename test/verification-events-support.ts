// Engine events for the verification Job's tests, shaped as Pulumi Cloud stores them: one place for the
// events the compare and events tests feed kargo/verification/compare.mjs.
import { stepsOf } from "../kargo/verification/compare.mjs";

export const stack = "urn:pulumi:dev::app::";
export const urn = (type: string, name: string) => `${stack}${type}::${name}`;
export type Meta = {
  op: string;
  type: string;
  name: string;
  diffs?: string[];
  inputs?: Record<string, unknown>;
};

/** A resourcePreEvent as Pulumi Cloud stores it (pulumi-cloud-sdk apitype EngineEvent, AppStepEventMetadata). */
export const pre = (
  { op, type, name, diffs, inputs }: Meta,
  logical = !["create-replacement", "delete-replaced"].includes(op),
) => ({
  timestamp: 1,
  type: "resourcePreEvent",
  resourcePreEvent: {
    metadata: {
      op,
      urn: urn(type, name),
      type,
      old:
        op === "create"
          ? null
          : { type, urn: urn(type, name), id: "i", parent: "", provider: "p", inputs: {}, outputs: {} },
      new:
        op === "delete"
          ? null
          : {
              type,
              urn: urn(type, name),
              id: "",
              parent: "",
              provider: "p",
              inputs: inputs ?? {},
              outputs: {},
            },
      ...(diffs ? { diffs } : {}),
      detailedDiff: null,
      ...(logical ? { logical: true } : {}),
      provider: "p",
    },
    planning: true,
  },
});

/** The events of an operation: its steps, and the summary the engine counts them in (logical steps). */
export const eventsOf = (...metas: Meta[]) => {
  const events = metas.map((m) => pre(m));
  const resourceChanges: Record<string, number> = {};
  for (const e of events)
    if (e.resourcePreEvent.metadata.logical) {
      const op = e.resourcePreEvent.metadata.op;
      resourceChanges[op] = (resourceChanges[op] ?? 0) + 1;
    }
  return [
    { timestamp: 0, type: "preludeEvent", preludeEvent: { config: {} } },
    ...events,
    {
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
};

export const role = { type: "aws:iam/role:Role", name: "app" };
export const bucket = { type: "aws:s3/bucketV2:BucketV2", name: "data" };
export const sg = { type: "aws:ec2/securityGroup:SecurityGroup", name: "web" };
export const db = { type: "aws:rds/instance:Instance", name: "db" };
export const replace = (r: { type: string; name: string }) => [
  { op: "create-replacement", ...r },
  { op: "replace", ...r },
  { op: "delete-replaced", ...r },
];
export const steps = (...metas: Meta[]) => stepsOf(eventsOf(...metas));
