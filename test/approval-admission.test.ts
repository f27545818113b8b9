// The admission policy that holds every approval to the pipeline's path (lib/pipeline/approval-admission.ts),
// as the kargo project plans it. That the API server enforces it on Freight as Kargo writes it, for the
// example and the largest pipeline, is the Go harness's (test/kube/approval_test.go); here, that its rules
// are what the planned Stages wait for, and that its split by name leaves no stage and no key unjudged.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  approvalAdmission,
  approvalAdmissionName,
  approvalAdmissionOf,
  approvalRules,
  ruleRanges,
  type ApprovalRule,
} from "../lib/pipeline/approval-admission";
import { CEL_MAX_EXPRESSION_CODE_POINTS, codePoints } from "../lib/pipeline/cel";
import { runStages } from "../lib/pipeline/graph";
import { stageSpec } from "../lib/pipeline/promotion";
import type { Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { planKargo, type Obj } from "./kargo-support";
import { largestPipeline } from "./largest-pipeline";

const pipeline = validatePipeline(definition);

/** What Kargo reads of a Stage's Freight sources (akuity/kargo v1.11.2 stage_types.go IsFreightAvailable). */
const sources = (p: Pipeline, name: string) => {
  const s = runStages(p).find((x) => x.name === name)!;
  const [request] = stageSpec(p, s).requestedFreight;
  return { stages: request!.sources.stages ?? [], all: request!.sources.availabilityStrategy === "All" };
};

/** The rules as the Stages read them: an update's preview is the same program's in its environment. */
function checkRules(p: Pipeline) {
  const stages = runStages(p);
  const rules = approvalRules(p);
  expect(rules.map((r) => r.stage).sort()).toEqual(stages.map((s) => s.name).sort());
  for (const r of rules) {
    const s = stages.find((x) => x.name === r.stage)!;
    expect(r.kind).toBe(s.kind);
    const { stages: from, all } = sources(p, r.stage);
    expect([...(r.preview ? [r.preview] : []), ...r.upstream].sort()).toEqual(
      [...new Set([...from, ...(r.preview && !from.includes(r.preview) ? [r.preview] : [])])].sort(),
    );
    if (r.kind !== "join") expect(r.all).toBe(all);
    if (s.kind === "update") {
      const own = stages.filter(
        (x) => x.kind === "preview" && x.environment === s.environment && x.program === s.program,
      );
      expect(r.preview).toBe(own[0]?.name);
    } else expect(r.preview).toBeUndefined();
  }
}

/** The range that judges key `k`: the one whose bounds hold it. */
const rangesHolding = (ranges: ReturnType<typeof ruleRanges>, k: string) =>
  ranges.filter((g) => (g.from === undefined || k >= g.from) && (g.to === undefined || k < g.to));

describe("the approval admission policy", () => {
  let ofKind: (kind: string) => Obj[];
  let plan: Awaited<ReturnType<typeof planKargo>>["plan"];
  let largest: Pipeline;
  beforeAll(async () => {
    ({ ofKind, plan } = await planKargo());
    largest = largestPipeline();
  });

  it("is planned as lib/pipeline/approval-admission.ts derives it, bound to the project's namespace", () => {
    const derived = approvalAdmission(pipeline) as Obj[];
    const key = (o: Obj) => `${o.kind} ${o.metadata.name}`;
    const planned = [
      ...ofKind("ValidatingAdmissionPolicy"),
      ...ofKind("ValidatingAdmissionPolicyBinding"),
    ].filter((o) => (o.metadata.name as string).startsWith(approvalAdmissionName(pipeline)));
    expect(planned.map(key).sort()).toEqual(derived.map(key).sort());
    for (const d of derived) {
      const o = planned.find((x) => key(x) === key(d))!;
      expect({ metadata: o.metadata, spec: o.spec }).toEqual({ metadata: d.metadata, spec: d.spec });
    }
    for (const b of derived.filter((o) => o.kind === "ValidatingAdmissionPolicyBinding"))
      expect(b.spec.matchResources.namespaceSelector.matchLabels).toEqual({
        "kubernetes.io/metadata.name": pipeline.project,
      });
  });

  it("is bound before any Stage exists: each Stage waits for the binding of the policy that judges its name", () => {
    const bindings = plan.resources.filter((r) => r.type.endsWith("ValidatingAdmissionPolicyBinding"));
    const urnOf = (name: string) => bindings.find((r) => (r.inputs.metadata as Obj).name === name)!.urn;
    const stages = plan.resources.filter((r) => r.type === "kubernetes:kargo.akuity.io/v1alpha1:Stage");
    expect(stages.map((r) => (r.inputs.metadata as Obj).name).sort()).toEqual(
      runStages(pipeline)
        .map((s) => s.name)
        .sort(),
    );
    const judging = approvalAdmissionOf(pipeline);
    for (const stage of stages) {
      const name = (stage.inputs.metadata as Obj).name as string;
      expect(stage.dependsOn, name).toContain(urnOf(judging(name)));
      const own = ruleRanges(approvalRules(pipeline)).find((g) => g.rules.some((r) => r.stage === name))!;
      expect(own.rules.map((r) => r.stage)).toContain(name);
    }
  });

  it("holds each stage to the Freight sources its planned Stage waits for (the example and the largest pipeline)", () => {
    checkRules(pipeline);
    checkRules(largest);
  });

  it("splits the rules by name so every stage is in one range and every key is judged by exactly one", () => {
    for (const p of [pipeline, largest]) {
      const rules = approvalRules(p);
      // A budget that forces several ranges, and the real one.
      for (const budget of [400, undefined]) {
        const ranges = ruleRanges(rules, budget);
        if (budget !== undefined) expect(ranges.length).toBeGreaterThan(1);
        const placed = ranges.flatMap((g) => g.rules.map((r: ApprovalRule) => r.stage));
        expect(placed.sort()).toEqual(rules.map((r) => r.stage).sort());
        for (const r of rules) {
          const holding = rangesHolding(ranges, r.stage);
          expect(holding).toHaveLength(1);
          expect(holding[0]!.rules.map((x) => x.stage)).toContain(r.stage);
        }
        // Keys no stage has, before, between and after the names.
        for (const k of ["", "-", "a", "zzzz", ...rules.map((r) => `${r.stage}-x`)])
          expect(rangesHolding(ranges, k)).toHaveLength(1);
      }
    }
  });

  it("names for each stage of the largest pipeline the policy whose rules hold it (what its Stage waits for)", () => {
    const policies = (approvalAdmission(largest) as Obj[]).filter(
      (o) => o.kind === "ValidatingAdmissionPolicy",
    );
    expect(policies.length).toBeGreaterThan(1);
    const judging = approvalAdmissionOf(largest);
    for (const s of runStages(largest)) {
      const holding = policies.filter((o) =>
        (o.spec.variables as { name: string; expression: string }[])
          .find((v) => v.name === "kinds")!
          .expression.includes(`'${s.name}': `),
      );
      expect(holding.map((o) => o.metadata.name)).toEqual([judging(s.name)]);
    }
  });

  it("keeps every expression within what the API server's CEL parses, at the largest pipeline too", () => {
    for (const p of [pipeline, largest])
      for (const o of approvalAdmission(p) as Obj[])
        for (const e of [...(o.spec.variables ?? []), ...(o.spec.validations ?? [])])
          for (const x of [e.expression, e.messageExpression].filter(Boolean))
            expect(codePoints(x as string)).toBeLessThanOrEqual(CEL_MAX_EXPRESSION_CODE_POINTS);
  });
});
