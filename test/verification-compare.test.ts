// What the verification Job decides from engine events (kargo/verification/compare.mjs): whether the events
// are complete, which preview steps stop Freight, and whether an update did only what its preview showed.
// The Go harness (test/analysis) runs the same through the Job against a Pulumi Cloud stand-in.
import { describe as group, expect, it } from "vitest";
import { RISK_CLASSES, type Step } from "../kargo/verification/classify.mjs";
import {
  LESS_THAN_REPLACE,
  NEUTRAL_OPS,
  changes,
  compare,
  describe,
  matchedRecord,
  parseStopOn,
  recordOf,
  stopLines,
  stops,
} from "../kargo/verification/compare.mjs";
import {
  urn,
  role,
  bucket,
  sg,
  db,
  replace,
  steps,
  stepsAlone,
  unknownValue,
  type Meta,
} from "./verification-events-support";

group("STOP_ON", () => {
  it("is all, a comma-separated subset of the classes, or empty", () => {
    expect(parseStopOn("all")).toBe("all");
    expect(parseStopOn(" all ")).toBe("all");
    expect(parseStopOn("")).toEqual([]);
    expect(parseStopOn(undefined)).toEqual([]);
    expect(parseStopOn(RISK_CLASSES.join(","))).toEqual(RISK_CLASSES);
    expect(parseStopOn("loss, privilege")).toEqual(["loss", "privilege"]);
    expect(() => parseStopOn("loss,deletes")).toThrow(
      'STOP_ON must be "all", or classes among loss, privilege, exposure, cost, comma-separated; not "loss,deletes"',
    );
    expect(() => parseStopOn("loss,")).toThrow("STOP_ON must be");
  });

  const preview = steps(
    { op: "same", ...role },
    { op: "update", ...bucket, diffs: ["tags"] },
    { op: "create", ...sg, inputs: { ingress: [{ cidrBlocks: ["0.0.0.0/0"] }] } },
    { op: "read", type: "aws:iam/policy:Policy", name: "ro" },
  );

  it("stops on each class where a step has it, and not on a class no step has", () => {
    for (const c of RISK_CLASSES) {
      const stopped = stops(preview, [c]);
      expect(
        stopped.map((s) => s.step.urn),
        c,
      ).toEqual(c === "exposure" ? [urn(sg.type, sg.name)] : []);
    }
    expect(stops(preview, ["exposure"])[0]!.classes).toEqual(["exposure"]);
    expect(stops(preview, [])).toEqual([]);
  });

  it("with all, stops on every step that changes something, and on none that changes nothing", () => {
    expect(stops(preview, "all").map((s) => s.step.op)).toEqual(["update", "create"]);
    expect(stops(stepsAlone(...NEUTRAL_OPS.map((op) => ({ op, ...role, name: op }))), "all")).toEqual([]);
  });

  it("says each stopped resource's name, type, op, classes and changed keys", () => {
    const lines = stopLines(
      stops(steps({ op: "update", ...role, diffs: ["assumeRolePolicy"] }, ...replace(db)), [
        "loss",
        "privilege",
      ]),
    );
    expect(lines).toEqual([
      "- app (aws:iam/role:Role): update, privilege; changes assumeRolePolicy",
      "- db (aws:rds/instance:Instance): create-replacement, loss, cost",
      "- db (aws:rds/instance:Instance): replace, loss, cost",
      "- db (aws:rds/instance:Instance): delete-replaced, loss",
    ]);
    expect(stopLines(stops(steps({ op: "update", ...bucket, diffs: [] }), "all"))).toEqual([
      "- data (aws:s3/bucketV2:BucketV2): update, a change",
    ]);
  });
});

group("compare", () => {
  const p = (...m: Meta[]) => steps(...m);

  it("passes an update that did what its preview showed, and records each step matched", () => {
    const preview = p({ op: "same", ...role }, { op: "update", ...bucket, diffs: ["tags"] }, ...replace(db), {
      op: "create",
      ...sg,
    });
    const update = p(
      { op: "same", ...role },
      ...replace(db).reverse(),
      { op: "update", ...bucket, diffs: ["tags"] },
      { op: "create", ...sg },
    );
    const r = compare(preview, update);
    expect(r.unexpected).toEqual([]);
    expect(r.matched.map((m) => m.step.op)).toEqual([
      "delete-replaced",
      "replace",
      "create-replacement",
      "update",
      "create",
    ]);
    for (const m of r.matched) expect(m.preview!.urn).toBe(m.step.urn);
    expect(r.neutral.map((s) => s.op)).toEqual(["same"]);
  });

  it("passes steps that change nothing wherever they appear: same, read, refresh and the discards", () => {
    const update = stepsAlone(...NEUTRAL_OPS.map((op) => ({ op, ...bucket })));
    expect(compare([], update)).toEqual({ matched: [], unexpected: [], neutral: update });
    expect(NEUTRAL_OPS.every((op) => !changes({ op, type: "t" }))).toBe(true);
    for (const op of [
      "create",
      "update",
      "delete",
      "replace",
      "create-replacement",
      "delete-replaced",
      "import",
      "import-replacement",
    ])
      expect(changes({ op, type: "t" }), op).toBe(true);
  });

  it("passes an update that did less than its preview (unknowns that turned out unchanged)", () => {
    const r = compare(
      p({ op: "update", ...bucket, diffs: ["policy"] }, { op: "create", ...sg }),
      p({ op: "same", ...bucket }),
    );
    expect(r.unexpected).toEqual([]);
  });

  const why = (preview: Step[], update: Step[]) =>
    compare(preview, update).unexpected.map((u) => [u.step.op, u.why]);

  it("fails a new resource the preview did not show", () => {
    expect(why(p({ op: "same", ...role }), p({ op: "create", ...bucket }))).toEqual([
      ["create", "a new resource the preview did not show"],
    ]);
    expect(why([], p({ op: "delete", ...bucket }))).toEqual([
      ["delete", "delete of a resource the preview did not show"],
    ]);
  });

  it("fails an update that became a replace, or a delete", () => {
    expect(why(p({ op: "update", ...db }), p(...replace(db)))).toEqual([
      [
        "create-replacement",
        "the preview showed update, not create-replacement: the update became a loss the preview did not show",
      ],
      [
        "replace",
        "the preview showed update, not replace: the update became a loss the preview did not show",
      ],
      [
        "delete-replaced",
        "the preview showed update, not delete-replaced: the update became a loss the preview did not show",
      ],
    ]);
    expect(why(p({ op: "update", ...db }), p({ op: "delete", ...db }))).toEqual([
      ["delete", "the preview showed update, not delete: the update became a loss the preview did not show"],
    ]);
    // A replacement previewed, a delete done: a loss either way, but not the one shown.
    expect(why(p(...replace(db)), p({ op: "delete", ...db }))).toEqual([
      ["delete", "the preview showed create-replacement, replace, delete-replaced, not delete"],
    ]);
  });

  it("calls a loss new only when none of the resource's preview steps was one", () => {
    const mixed = [...p({ op: "update", ...db }), ...p({ op: "delete-replaced", ...db })];
    expect(why(mixed, p({ op: "delete", ...db }))).toEqual([
      ["delete", "the preview showed update, delete-replaced, not delete"],
    ]);
    const read = [...p({ op: "read", ...db }), ...p({ op: "update", ...db })];
    expect(why(read, p({ op: "delete", ...db }))).toEqual([
      [
        "delete",
        "the preview showed read, update, not delete: the update became a loss the preview did not show",
      ],
    ]);
  });

  it("fails a resource of another type (another URN) where the preview had one", () => {
    const other = { type: "aws:s3/bucket:Bucket", name: "data" };
    expect(why(p({ op: "update", ...bucket }), p({ op: "update", ...other }))).toEqual([
      ["update", "update of a resource the preview did not show"],
    ]);
    // The same URN with another type cannot come from the engine (the URN holds the type), and is not matched.
    const [u] = p({ op: "update", ...bucket });
    expect(compare(p({ op: "update", ...bucket }), [{ ...u!, type: other.type }]).unexpected).toHaveLength(1);
  });

  it("fails an update where the preview showed no change, saying to preview again", () => {
    expect(
      why(p({ op: "same", ...bucket }, { op: "read", ...role }), p({ op: "update", ...bucket })),
    ).toEqual([
      [
        "update",
        "the preview showed no change (same): the state or the inputs moved after the preview; preview again to see it",
      ],
    ]);
  });

  it("fails a step that changed keys its preview step did not show changing", () => {
    expect(
      why(
        p({ op: "update", ...bucket, diffs: ["tags"] }),
        p({ op: "update", ...bucket, diffs: ["tags", "policy", "acl"] }),
      ),
    ).toEqual([["update", "changed policy, acl, which the preview did not show changing"]]);
    // Where either side does not say which keys, the classes decide.
    expect(why(p({ op: "update", ...bucket }), p({ op: "update", ...bucket, diffs: ["policy"] }))).toEqual([
      ["update", "is privilege, which its preview step was not"],
    ]);
    expect(why(p({ op: "update", ...bucket }), p({ op: "update", ...bucket, diffs: ["tags"] }))).toEqual([]);
    expect(why(p({ op: "update", ...bucket, diffs: ["policy"] }), p({ op: "update", ...bucket }))).toEqual(
      [],
    );
  });

  it("fails a step whose risk classes go beyond its preview step's", () => {
    const open = { ingress: [{ cidrBlocks: ["0.0.0.0/0"] }] };
    const closed = { ingress: [{ cidrBlocks: ["10.0.0.0/8"] }] };
    expect(why(p({ op: "create", ...sg, inputs: closed }), p({ op: "create", ...sg, inputs: open }))).toEqual(
      [["create", "is exposure, which its preview step was not"]],
    );
    expect(why(p({ op: "create", ...sg, inputs: open }), p({ op: "create", ...sg, inputs: closed }))).toEqual(
      [],
    );
  });
});

group("an update that did less than a previewed replacement", () => {
  const why = (preview: Step[], update: Step[]) =>
    compare(preview, update).unexpected.map((u) => [u.step.op, u.why]);
  // The preview replaced the database: its subnet group, a replacement trigger, was unknown at preview. The
  // update found it unchanged, and the provider updated the database in place.
  const previewed = steps(
    {
      op: "create-replacement",
      ...db,
      keys: ["dbSubnetGroupName"],
      diffs: ["dbSubnetGroupName", "tags"],
      inputs: { dbSubnetGroupName: unknownValue },
    },
    {
      op: "replace",
      ...db,
      keys: ["dbSubnetGroupName"],
      diffs: ["dbSubnetGroupName", "tags"],
      inputs: { dbSubnetGroupName: unknownValue },
    },
    { op: "delete-replaced", ...db },
  );

  it("passes, and is recorded as less than its preview", () => {
    const update = steps({ op: "update", ...db, diffs: ["tags"] });
    const r = compare(previewed, update);
    expect(r.unexpected).toEqual([]);
    expect(r.matched).toEqual([{ step: update[0], preview: previewed[1], lessThan: LESS_THAN_REPLACE }]);
    expect(LESS_THAN_REPLACE).toMatch(
      /^less than its preview: the preview replaced it .*updated it in place$/,
    );
    expect(matchedRecord(r.matched)).toEqual([
      {
        urn: urn(db.type, db.name),
        type: db.type,
        op: "update",
        classes: [],
        diffs: ["tags"],
        lessThan: LESS_THAN_REPLACE,
      },
    ]);
    // A step that matched its own op is recorded as it is.
    expect(matchedRecord(compare(update, update).matched)[0]).not.toHaveProperty("lessThan");
  });

  it("fails an in-place update that changed what the replacement did not, or carries a class it had not", () => {
    expect(why(previewed, steps({ op: "update", ...db, diffs: ["tags", "publiclyAccessible"] }))).toEqual([
      ["update", "changed publiclyAccessible, which the preview did not show changing"],
    ]);
    const closed = { ingress: [{ cidrBlocks: ["10.0.0.0/8"] }] };
    const open = { ingress: [{ cidrBlocks: ["0.0.0.0/0"] }] };
    const group = steps(
      { op: "replace", ...sg, diffs: ["ingress"], inputs: closed },
      { op: "create-replacement", ...sg, diffs: ["ingress"], inputs: closed },
    );
    expect(why(group, steps({ op: "update", ...sg, diffs: ["ingress"], inputs: open }))).toEqual([
      ["update", "is exposure, which its preview step was not"],
    ]);
    expect(why(group, steps({ op: "update", ...sg, diffs: ["ingress"], inputs: closed }))).toEqual([]);
    // A replacement of another type at the same URN cannot come from the engine, and is not matched.
    const [u] = steps({ op: "update", ...db, diffs: ["tags"] });
    expect(compare(previewed, [{ ...u!, type: "aws:rds/cluster:Cluster" }]).unexpected).toHaveLength(1);
  });

  it("is only an update where the preview replaced: a delete or a create is not less", () => {
    expect(why(previewed, steps({ op: "delete", ...db }))).toEqual([
      ["delete", "the preview showed create-replacement, replace, delete-replaced, not delete"],
    ]);
    expect(
      why(
        steps(
          { op: "create-replacement", ...db },
          { op: "replace", ...db },
          { op: "delete-replaced", ...db },
        ).filter((s) => s.op !== "replace"),
        steps({ op: "update", ...db }),
      ),
    ).toEqual([["update", "the preview showed create-replacement, delete-replaced, not update"]]);
  });
});

group("what a person reads", () => {
  it("names a resource by its URN's name and its type", () => {
    expect(describe({ op: "create", type: role.type, urn: urn(role.type, "a::b") })).toBe(
      "a::b (aws:iam/role:Role)",
    );
    expect(describe({ op: "create", type: role.type, urn: "not-a-urn" })).toBe(
      "not-a-urn (aws:iam/role:Role)",
    );
    expect(describe({ op: "create", type: role.type })).toBe("? (aws:iam/role:Role)");
  });

  it("records each step that changes something: URN, type, op, classes and changed keys", () => {
    expect(
      recordOf(
        steps(
          { op: "same", ...role },
          { op: "update", ...bucket, diffs: ["policy"] },
          { op: "create", ...sg, inputs: {} },
        ),
      ),
    ).toEqual([
      {
        urn: urn(bucket.type, bucket.name),
        type: bucket.type,
        op: "update",
        classes: ["privilege"],
        diffs: ["policy"],
      },
      { urn: urn(sg.type, sg.name), type: sg.type, op: "create", classes: [] },
    ]);
  });
});
