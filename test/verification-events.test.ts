// Whether an operation's engine events are all there (kargo/verification/compare.mjs stepsOf): the steps the
// verification Job reads, or an error that never lets a verdict through.
// The Go harness (test/analysis) runs the same through the Job against a Pulumi Cloud stand-in.
import { describe as group, expect, it } from "vitest";
import { COUNTED_OPS, Incomplete, REPLACEMENT_HALVES, stepsOf } from "../kargo/verification/compare.mjs";
import {
  urn,
  pre,
  eventsOf,
  role,
  bucket,
  db,
  replace,
  replaceDeletingFirst,
  steps,
} from "./verification-events-support";

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
    expect(COUNTED_OPS).toEqual(["create", "update", "delete", "replace", "import", "discard"]);
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

  type Summary = { summaryEvent: { resourceChanges: Record<string, number> } };
  const summaryOf = (events: unknown[]) => (events.at(-1) as Summary).summaryEvent.resourceChanges;

  it("throws Incomplete for events that are not all there, which the Job reads again", () => {
    const events = eventsOf({ op: "create", ...role }, { op: "import", ...bucket });
    for (const lost of [
      events.slice(0, -1),
      [events[0], events[2], events[3]],
      [events[0], events[1], events[3]],
    ])
      expect(() => stepsOf(lost)).toThrow(Incomplete);
    expect(() => stepsOf([events[0], events[1], events[3]])).toThrow(
      "events incomplete: the summary counts 1 import(s), the events hold 0",
    );
    // Not the engine's events at all is an error, not a wait.
    let thrown: unknown;
    try {
      stepsOf([null]);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(Incomplete);
  });

  it("holds the events to at least the reads the summary counts (a read that changed nothing is not counted)", () => {
    const events = eventsOf({ op: "read", ...role }, { op: "read", ...bucket });
    expect(summaryOf(events)).toEqual({});
    expect(stepsOf(events)).toHaveLength(2);
    summaryOf(events).read = 2;
    expect(stepsOf(events)).toHaveLength(2);
    summaryOf(events).read = 3;
    expect(() => stepsOf(events)).toThrow(
      "events incomplete: the summary counts 3 read(s), the events hold 2",
    );
  });

  it("takes a summary counting more same steps than the events hold (untargeted ones are not uploaded)", () => {
    const events = eventsOf({ op: "same", ...role }, { op: "update", ...bucket });
    summaryOf(events).same = 40;
    expect(stepsOf(events).map((s) => s.op)).toEqual(["same", "update"]);
  });

  it("passes the refreshes of pulumi up --refresh, which are not logical and not counted", () => {
    const events = eventsOf(
      { op: "refresh", ...role },
      { op: "refresh", ...bucket },
      { op: "same", ...role },
    );
    expect(summaryOf(events)).toEqual({ same: 1 });
    expect(stepsOf(events).map((s) => [s.op, s.logical])).toEqual([
      ["refresh", false],
      ["refresh", false],
      ["same", true],
    ]);
  });

  it("pairs each replacement's halves: a lost create-replacement or (created first) delete-replaced is missing", () => {
    expect(REPLACEMENT_HALVES).toEqual({
      create: ["create-replacement", "import-replacement", "read-replacement"],
      delete: ["delete-replaced", "discard-replaced"],
    });
    const whole = eventsOf(...replace(db), { op: "update", ...bucket });
    expect(stepsOf(whole)).toHaveLength(4);
    // The batch holding only a non-logical half lost: the summary's counts still agree.
    const [prelude, create, logical, del, update, summary] = whole;
    expect(() => stepsOf([prelude, logical, del, update, summary])).toThrow(
      "events incomplete: replace of db (aws:rds/instance:Instance) without its create-replacement or import-replacement or read-replacement",
    );
    expect(() => stepsOf([prelude, create, logical, update, summary])).toThrow(
      "events incomplete: replace of db (aws:rds/instance:Instance) without its delete-replaced or discard-replaced",
    );
    // The delete half counts wherever it is, the first step included.
    expect(stepsOf([prelude, del, create, logical, update, summary])).toHaveLength(4);
    // A half whose replace the summary does not count either.
    const half = eventsOf({ op: "update", ...bucket });
    half.splice(1, 0, pre({ op: "create-replacement", ...db }));
    expect(() => stepsOf(half)).toThrow(
      "events incomplete: create-replacement of db (aws:rds/instance:Instance) without its replace",
    );
    // Another resource's halves do not stand in.
    const other = eventsOf(...replace(db), ...replace({ ...db, name: "db2" }));
    expect(() => stepsOf([...other.slice(0, 4), ...other.slice(5)])).toThrow(
      "events incomplete: replace of db2 (aws:rds/instance:Instance) without its create-replacement",
    );
  });

  it("takes a delete-before-replace without its delete-replaced (an earlier, interrupted update deleted it)", () => {
    const dbr = eventsOf(...replaceDeletingFirst(db));
    expect(stepsOf(dbr).map((s) => s.op)).toEqual(["delete-replaced", "replace", "create-replacement"]);
    expect(stepsOf([dbr[0], dbr[2], dbr[3], dbr[4]]).map((s) => s.op)).toEqual([
      "replace",
      "create-replacement",
    ]);
    // An imported or read resource's replacement pairs with its own halves.
    const imported = eventsOf(
      { op: "import-replacement", ...db },
      { op: "replace", ...db },
      { op: "delete-replaced", ...db },
      { op: "read-replacement", ...role },
      { op: "replace", ...role },
      { op: "discard-replaced", ...role },
    );
    expect(stepsOf(imported)).toHaveLength(6);
  });
});
