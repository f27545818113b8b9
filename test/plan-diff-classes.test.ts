// The plan diff heads each change by the class the in-cluster verification's classifier
// (kargo/verification/classify.mjs) gives the same step, so a pull request's plan diff and an environment's
// preview never disagree on what a change is, and a promoted program's change says where it stops.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { LEFT_IN_CLOUD, classifyStep, matchingRules, type Step } from "../kargo/verification/classify.mjs";
import { stopLines, stops } from "../kargo/verification/compare.mjs";
import { diffPlans, type PlanResource, type ProjectPlan } from "../lib/cli/plan/diff";
import { renderDiff, type DiffReport } from "../lib/cli/plan/diff-format";
import { programPlans } from "../lib/cli/plan/diff-program";
import { stopsOf } from "../lib/cli/plan/diff-run";
import { reviewSummary, type ReviewSummary } from "../lib/cli/plan/diff-summary";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { validatePipeline } from "../lib/pipeline/validate";
import { stepsAlone } from "./verification-events-support";

const pipeline = validatePipeline(definition);
let platform: ProjectPlan[];
let programs: ProjectPlan[];
beforeAll(async () => {
  platform = (await planChain()) as ProjectPlan[];
  programs = programPlans(repoRoot, pipeline.programs).plans;
  expect(programs.length, "a YAML program to change").toBeGreaterThan(0);
});

const headings = (s: ReviewSummary) => ({
  exposure: s.exposure,
  privilege: s.privilege,
  loss: s.loss,
  cost: s.cost.findings,
});

/** The step the verification would read for a resource before and after (engine ops, as classify.mjs takes them). */
function stepOf(before: PlanResource | undefined, after: PlanResource | undefined, op: string): Step {
  const r = (after ?? before)!;
  const step: Step = { op, type: r.type, urn: r.urn };
  if (before) step.oldInputs = before.inputs;
  if (before?.options.retainOnDelete) step.retainOnDelete = true;
  if (after) step.newInputs = after.inputs;
  if (before && after)
    step.diffs = [...new Set([...Object.keys(before.inputs), ...Object.keys(after.inputs)])].filter(
      (k) => JSON.stringify(before.inputs[k]) !== JSON.stringify(after.inputs[k]),
    );
  return step;
}

/** Every change's classes, as the classifier gives them, is each a heading holding that change, the reason first. */
function expectHeadedAsClassified(before: ProjectPlan[], after: ProjectPlan[], op: string) {
  const diff = diffPlans(before, after);
  const summary = headings(reviewSummary(diff, before, after));
  const index = (plans: ProjectPlan[]) => new Map(plans.flatMap((p) => p.resources).map((r) => [r.urn, r]));
  const [was, now] = [index(before), index(after)];
  let classified = 0;
  for (const change of diff.projects.flatMap((p) => p.changes)) {
    const step = stepOf(was.get(change.urn), now.get(change.urn), op);
    const classes = classifyStep(step);
    classified += classes.length;
    for (const cls of classes) {
      const finding = summary[cls].find((f) => f.urn === change.urn);
      expect(finding, `${change.urn} under ${cls}`).toBeDefined();
      expect(finding!.classes).toEqual(classes);
      const why = matchingRules(step).find((r) => r.class === cls)!.why;
      expect(finding!.lines, change.urn).toContain(`${cls}: ${why}`);
    }
    // A heading the classifier does not give is the platform's own rules' (types it does not know).
    for (const [cls, findings] of Object.entries(summary))
      if (!classes.includes(cls as never))
        for (const f of findings.filter((x) => x.urn === change.urn))
          expect(
            f.lines.some((l) => l.startsWith(`${cls}: `)),
            `${f.urn} ${cls}`,
          ).toBe(false);
  }
  return classified;
}

/** A copy of `plans` with resource `name` of `project` changed by `change`, or removed when it returns null. */
function edited(
  plans: ProjectPlan[],
  name: string,
  change: (r: PlanResource) => PlanResource | null,
): ProjectPlan[] {
  return structuredClone(plans).map((p) => ({
    ...p,
    resources: p.resources.flatMap((r) => {
      if (r.name !== name) return [r];
      const out = change(r);
      return out ? [out] : [];
    }),
  }));
}

describe("the plan diff's headings", () => {
  it("head everything created as the classifier would at a preview: every planned resource, platform and programs", () => {
    const all = [...platform, ...programs];
    const empty = all.map((p) => ({ ...p, resources: [] }));
    expect(expectHeadedAsClassified(empty, all, "create")).toBeGreaterThan(0);
  });

  it("head everything deleted as loss, as the classifier does", () => {
    const all = [...platform, ...programs];
    const empty = all.map((p) => ({ ...p, resources: [] }));
    expectHeadedAsClassified(all, empty, "delete");
    const loss = reviewSummary(diffPlans(all, empty), all, empty).loss;
    // Every resource but the providers (the classifier's rule: they hold nothing in the cloud) and those
    // left in the cloud.
    const held = all
      .flatMap((p) => p.resources)
      .filter((r) => !r.type.startsWith("pulumi:providers:") && !r.options.retainOnDelete);
    expect(loss.map((f) => f.urn).sort()).toEqual(held.map((r) => r.urn).sort());
  });

  it("say a removed resource with retainOnDelete is left in the cloud, in the Job's words, and not a loss", () => {
    const target = programs[0]!.resources.find((r) => !r.type.startsWith("pulumi:providers:"))!;
    const before = edited(programs, target.name, (r) => ({
      ...r,
      options: { ...r.options, retainOnDelete: true },
    }));
    const after = edited(programs, target.name, () => null);
    const diff = diffPlans(before, after);
    const summary = reviewSummary(diff, before, after);
    expect(summary.loss.map((f) => f.urn)).not.toContain(target.urn);
    const report: DiffReport = {
      base: { ref: "main", commit: "0".repeat(40) },
      diff,
      summary,
      violations: [],
      before,
      after,
    };
    const text = renderDiff(report, "text");
    expect(text).toContain(LEFT_IN_CLOUD);
    // The Job, reading the engine's delete of that resource, says the same words and no loss.
    const job = stepsAlone({ op: "delete", type: target.type, name: target.name, retainOnDelete: true });
    expect(stopLines(stops(job, "all"))[0]).toContain(LEFT_IN_CLOUD);
    expect(stops(job, ["loss"])).toEqual([]);
    // Without retainOnDelete, both call it a loss.
    const plain = diffPlans(programs, after);
    expect(reviewSummary(plain, programs, after).loss.map((f) => f.urn)).toContain(target.urn);
    expect(
      renderDiff({ ...report, diff: plain, summary: reviewSummary(plain, programs, after) }, "text"),
    ).not.toContain(LEFT_IN_CLOUD);
  });

  it("head a promoted program's updates by the classifier's classes, and say where each stops and who decides", () => {
    const bucket = programs[0]!.resources;
    const block = bucket.find((r) => r.type === "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock");
    const target = block ?? bucket[0]!;
    // Public access let through: exposure; a policy on the bucket: privilege.
    const after = edited(programs, target.name, (r) => ({
      ...r,
      inputs: { ...r.inputs, blockPublicPolicy: false },
    }));
    after[0]!.resources.push({
      ...structuredClone(target),
      urn: target.urn
        .replace(/::[^:]+$/, "::zz-policy")
        .replace(target.type, "aws:s3/bucketPolicy:BucketPolicy"),
      type: "aws:s3/bucketPolicy:BucketPolicy",
      name: "zz-policy",
      inputs: { bucket: "b", policy: JSON.stringify({ Statement: [{ Effect: "Allow", Principal: "*" }] }) },
    });
    expectHeadedAsClassified(programs, after, "update");
    const diff = diffPlans(programs, after);
    const report: DiffReport = {
      base: { ref: "main", commit: "0".repeat(40) },
      diff,
      summary: reviewSummary(diff, programs, after),
      violations: [],
      before: programs,
      after,
      stops: stopsOf(pipeline),
    };
    const text = renderDiff(report, "text");
    for (const cls of ["exposure", "privilege"] as const) {
      if (cls === "exposure" && !block) continue;
      // Where the definition says this class stops, with who decides there.
      const where = Object.entries(definition.environments)
        .filter(
          ([, e]) =>
            !e.ephemeral &&
            e.protected !== false &&
            (e.stopEveryPreview || (e.stopOn ?? ["loss", "privilege", "exposure"]).includes(cls)),
        )
        .map(([name, e]) => `${name} (${(e.deciders ?? e.destructiveChangeApprovers)!.join(", ")} decide)`);
      const line =
        where.length > 0 ? `stops at the preview in ${where.join(", ")}` : "stops in no environment";
      const section = text.slice(text.indexOf(cls[0]!.toUpperCase() + cls.slice(1)));
      expect(section, cls).toContain(line);
    }
    // The platform's own changes do not stop in an environment: no such line.
    const nodes = platform.flatMap((p) => p.resources).find((r) => r.type === "eks:index:ManagedNodeGroup")!;
    const grown = edited(platform, nodes.name, (r) => ({
      ...r,
      inputs: { ...r.inputs, instanceTypes: ["m5.large"] },
    }));
    const d2 = diffPlans(platform, grown);
    const platformText = renderDiff(
      { ...report, diff: d2, summary: reviewSummary(d2, platform, grown), before: platform, after: grown },
      "text",
    );
    expect(platformText).not.toContain("stops at the preview");
    expect(platformText).not.toContain("stops in no environment");
  });
});
