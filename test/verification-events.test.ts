// Whether an operation's engine events are all there (kargo/verification/compare.mjs stepsOf): the steps the
// verification Job reads, or an error that never lets a verdict through.
// The Go harness (test/analysis) runs the same through the Job against a Pulumi Cloud stand-in.
import { describe as group, expect, it } from "vitest";
import { COUNTED_OPS, stepsOf } from "../kargo/verification/compare.mjs";
import { urn, pre, eventsOf, role, bucket, db, replace, steps } from "./verification-events-support";

group("stepsOf", () => {
  it("reads one step per resourcePreEvent, in order, with its logical flag", () => {
    const s = steps({ op: "same", ...role }, { op: "update", ...bucket, diffs: ["tags"] }, ...replace(db));
    expect(s.map((x) => [x.op, x.urn, x.logical])).toEqual([
      ["same", urn(role.type, role.name), true],
      ["update", urn(bucket.type, bucket.name), true],
      ["create-replacement", urn(db.type, db.name), false],
      ["replace", urn(db.type, db.name), true],
      ["delete-replaced", urn(db.type, db.name), false],
    ]);
    expect(s[1]!.diffs).toEqual(["tags"]);
  });

  it("refuses events without the summary event: they are not all there", () => {
    const events = eventsOf({ op: "create", ...role }).slice(0, -1);
    expect(() => stepsOf(events)).toThrow("events incomplete: no summary event among 2 event(s)");
  });

  it("refuses events whose steps disagree with the summary's counts, for each counted op", () => {
    expect(COUNTED_OPS).toEqual(["create", "update", "delete", "replace"]);
    for (const op of COUNTED_OPS) {
      const events = eventsOf({ op, ...role }, { op, ...bucket });
      // A page lost in the middle: one step fewer than the summary counts.
      const lost = [events[0], events[2], events[3]];
      expect(() => stepsOf(lost), op).toThrow(
        `events incomplete: the summary counts 2 ${op}(s), the events hold 1`,
      );
    }
    // A step the summary does not count (or counts as 0) is as wrong.
    const extra = eventsOf({ op: "create", ...role });
    extra.splice(1, 0, pre({ op: "delete", ...bucket }));
    expect(() => stepsOf(extra)).toThrow("the summary counts 0 delete(s), the events hold 1");
  });

  it("counts only logical steps, as the engine's summary does (a replacement's halves are not)", () => {
    expect(steps(...replace(db)).length).toBe(3);
    const events = eventsOf(...replace(db));
    (
      events.at(-1) as { summaryEvent: { resourceChanges: Record<string, number> } }
    ).summaryEvent.resourceChanges = { replace: 1 };
    expect(stepsOf(events)).toHaveLength(3);
  });

  it("refuses what is not Pulumi Cloud's events", () => {
    expect(() => stepsOf({} as unknown as unknown[])).toThrow("the engine events are not a list");
    expect(() => stepsOf([null])).toThrow("an engine event is not an object");
    expect(() => stepsOf([{ type: "resourcePreEvent" }])).toThrow("a resourcePreEvent has no payload");
    expect(() => stepsOf([{ type: "resourcePreEvent", resourcePreEvent: { metadata: {} } }])).toThrow(
      "no op, type or urn",
    );
    expect(() => stepsOf([{ type: "summaryEvent", summaryEvent: {} }])).toThrow(
      "the summary event has no resourceChanges",
    );
    expect(() => stepsOf([{ type: "summaryEvent" }])).toThrow("the summary event has no resourceChanges");
  });

  it("passes over other events (prelude, diagnostics, outputs)", () => {
    const events = eventsOf({ op: "create", ...role });
    events.splice(1, 0, {
      timestamp: 1,
      type: "diagnosticEvent",
      diagnosticEvent: { message: "x" },
    } as never);
    events.splice(1, 0, {
      timestamp: 1,
      type: "resOutputsEvent",
      resOutputsEvent: { metadata: { op: "delete" } },
    } as never);
    expect(stepsOf(events).map((s) => s.op)).toEqual(["create"]);
  });
});
