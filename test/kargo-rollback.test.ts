// What the promote-stack PromotionTask does for a rollback, as planned (lib/pipeline/promotion-rollback.ts):
// an update stage's promotion first refuses Freight its own preview stage does not preview now, a preview's
// promotion records what it previews, every promotion sets PKO's reconcile request, and the record reads the
// environment's rollback request. That Kargo runs them so is the Go harness's (test/promotion/previewing_test.go,
// rollback_record_test.go, largest_test.go); here, that they hold what the pipeline says, at any size.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { pipeline as definition } from "../kargo/pipeline";
import { ancestors, programStages, runStages } from "../lib/pipeline/graph";
import { stackManifestFile } from "../lib/pipeline/names";
import { promotionMessage, promotionTaskSpec } from "../lib/pipeline/promotion";
import { type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { repoRoot } from "../lib/cli/plan/projects";
import { largestPipeline } from "./largest-pipeline";

type Step = { uses: string; as?: string; if?: string; vars?: { name: string; value: string }[]; config: any };
const steps = (p: Pipeline) => promotionTaskSpec(p, "argocd").steps as Step[];

/** Each update stage's own preview, from the definition: same environment and program, upstream of it. */
function ownPreviews(p: Pipeline): Record<string, string> {
  const stages = programStages(p);
  const all = runStages(p);
  return Object.fromEntries(
    stages.flatMap((u) => {
      if (u.kind !== "update") return [];
      const before = ancestors(all, u.name);
      const own = stages.filter(
        (s) => s.kind === "preview" && s.program === u.program && s.environment === u.environment,
      );
      return own.filter((s) => before.has(s.name)).map((s) => [u.name, s.name]);
    }),
  );
}

/** The value of a `${{ <literal> }}` whose literal is JSON (a map or list of strings). */
const literal = (template: string) => JSON.parse(/^\$\{\{ (.*) \}\}$/s.exec(template)![1]!) as unknown;

describe("the promotion's part in a rollback", () => {
  const pipeline = validatePipeline(definition);
  let largest: Pipeline;
  beforeAll(() => {
    largest = largestPipeline();
  });

  const checkGuard = (p: Pipeline) => {
    const [first, ...rest] = steps(p);
    expect(first!.uses).toBe("fail");
    // Before anything is cloned or pushed.
    expect(rest.findIndex((s) => s.uses === "git-clone")).toBe(0);
    const map = first!.vars!.find((v) => v.name === "previewOf")!;
    expect(literal(map.value)).toEqual(ownPreviews(p));
    expect(first!.if).toBe(
      "${{ vars.previewOf[ctx.stage] != nil && stageMetadata(vars.previewOf[ctx.stage])?.previewing?.freight != ctx.targetFreight.name }}",
    );
    for (const said of [
      "ctx.targetFreight.name",
      "stage ${{ vars.previewOf[ctx.stage] }}",
      "npm run rollback",
    ])
      expect(first!.config.message).toContain(said);
  };

  it("refuses, before git-clone, an update of Freight its own preview stage does not preview now", () => {
    expect(Object.keys(ownPreviews(pipeline)).length).toBeGreaterThan(0);
    checkGuard(pipeline);
  });

  it("leaves alone an update beside its preview (both after the same stage), which never takes Freight through it", () => {
    const preview = definition.stages.find((s) => s.kind === "preview")!;
    const update = definition.stages.find(
      (s) => s.kind === "update" && s.environment === (preview.kind === "preview" && preview.environment),
    )!;
    const beside = validatePipeline({
      ...definition,
      stages: definition.stages.map((s) => (s.name === update.name ? { ...s, from: preview.from } : s)),
    });
    const guarded = ownPreviews(beside);
    expect(Object.keys(guarded).length).toBeLessThan(Object.keys(ownPreviews(pipeline)).length);
    checkGuard(beside);
  });

  it("has each preview stage record on its own Stage the Freight, commit and promotion it previews, once pushed", () => {
    const last = steps(pipeline).at(-1)!;
    expect(last.uses).toBe("set-metadata");
    const previews = programStages(pipeline).filter((s) => s.kind === "preview");
    expect(last.if).toBe(
      `\${{ ctx.stage in ${JSON.stringify(previews.map((s) => s.name)).replaceAll(",", ", ")} }}`,
    );
    expect(last.config.updates).toEqual([
      {
        kind: "Stage",
        name: "${{ quote(ctx.stage) }}",
        values: {
          previewing:
            '${{ {"freight": ctx.targetFreight.name, "commit": commitFrom(vars.repoURL).ID, "promotion": ctx.promotion } }}',
        },
      },
    ]);
  });

  it("sets PKO's reconcile request to the promotion's name, a key every committed Stack template carries empty", () => {
    const update = steps(pipeline).find((s) => s.uses === "yaml-update")!;
    expect(update.config.updates).toContainEqual({
      key: "metadata.annotations.pulumi\\.com/reconciliation-request",
      value: "${{ quote(ctx.promotion) }}",
    });
    for (const s of programStages(pipeline)) {
      const file = path.join(repoRoot, pipeline.stacks.dir, stackManifestFile(s.name));
      const stack = parse(fs.readFileSync(file, "utf8")) as {
        metadata: { annotations: Record<string, string> };
      };
      expect(stack.metadata.annotations["pulumi.com/reconciliation-request"], s.name).toBe("");
    }
  });

  it("records the environment's rollback request, read from rollback-<environment> for each update stage", () => {
    const message = promotionMessage(pipeline, "c");
    const names = Object.fromEntries(
      programStages(pipeline)
        .filter((s) => s.kind === "update")
        .map((s) => [s.name, `rollback-${s.environment}`]),
    );
    expect(message).toContain(
      `let rbName = ${JSON.stringify(names).replaceAll(",", ", ").replaceAll(":", ": ").replace(/\}$/, " }")}[ctx.stage];`,
    );
    expect(message).toContain(
      '"rollback": rb.to != "" && rb.to == ctx.targetFreight.name && rb.stages != "" && ctx.stage in fromJSON(rb.stages)',
    );
  });

  it("holds the same at the largest pipeline the validation allows, in a task well within the API server's size", () => {
    checkGuard(largest);
    const size = JSON.stringify(promotionTaskSpec(largest, "argocd")).length;
    expect(size).toBeLessThan(1 << 20);
  });
});
