// The PromotionTask every program stage runs, as planned: what it clones, writes and pushes, and the
// Application it syncs.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages, runStages } from "../lib/pipeline/graph";
import {
  driftManifestFile,
  hasDriftCheck,
  stackManifestFile,
  stackObjectName,
  stageBranch,
} from "../lib/pipeline/names";
import { DRIFT_CHECK_VAR, promotionTaskSpec } from "../lib/pipeline/promotion";
import { type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { type Obj } from "./kargo-support";

describe("kargo project", () => {
  const pipeline: Pipeline = validatePipeline(definition);
  let objects: Obj[];
  const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const stage = (name: string) => ofKind("Stage").find((s) => s.metadata.name === name)!;

  beforeAll(async () => {
    objects = kubernetesObjects((await planChain())[2]!) as Obj[];
  });

  describe("the shared PromotionTask", () => {
    type Step = { uses: string; as?: string; config: any };
    const steps = () => ofKind("PromotionTask")[0]!.spec.steps as Step[];
    const step = (uses: string) => steps().find((s) => s.uses === uses)!;

    it("copies the stage's template from the Freight's commit to the stage's own branch, pins it, pushes there and syncs to that push", () => {
      // Around them, a rollback's guard and record (test/kargo-rollback.test.ts), for a pipeline with previews.
      expect(steps().map((s) => s.uses)).toEqual([
        "fail",
        "git-clone",
        "git-clear",
        "copy",
        "yaml-update",
        // An update stage's drift check beside its Stack (test/drift.test.ts).
        "copy",
        "yaml-update",
        "file-write",
        "git-commit",
        "git-push",
        "argocd-update",
        "set-metadata",
      ]);
      const commit = "${{ quote(commitFrom(vars.repoURL).ID) }}";
      expect(step("git-clone").config.checkout).toEqual([
        { commit, path: "./freight" },
        { branch: "stage/${{ ctx.stage }}", create: true, path: "./stage" },
      ]);
      expect(step("git-clear").config).toEqual({ path: "./stage" });
      expect(step("copy").config).toEqual({
        inPath: "./freight/${{ vars.stacksDir }}/${{ ctx.stage }}.yaml",
        outPath: "./stage/${{ ctx.stage }}.yaml",
      });
      expect(step("yaml-update").config).toEqual({
        path: "./stage/${{ ctx.stage }}.yaml",
        updates: [
          { key: "spec.commit", value: commit },
          {
            key: "metadata.annotations.pulumi\\.com/reconciliation-request",
            value: "${{ quote(ctx.promotion) }}",
          },
        ],
      });
      expect(step("file-write").config).toMatchObject({ path: "./stage/PIPELINE-STAGE.md", overwrite: true });
      // The branch's PIPELINE-STAGE.md says whose branch it is and which commit it runs.
      // From promotionTaskSpec too: the example plan is made once per worker and reused, so npm run
      // test:mutation sees a change to the task only through a direct call.
      const direct = promotionTaskSpec(pipeline, "argocd").steps!.find((s) => s.uses === "file-write")!;
      expect(direct.config).toEqual(step("file-write").config);
      const readme = step("file-write").config.contents as string;
      expect(readme).toMatch(/^# Pipeline stage \$\{\{ ctx\.stage \}\}\n/);
      expect(readme).toContain(
        "${{ ctx.stage }}.yaml runs the promoted program at commit ${{ commitFrom(vars.repoURL).ID }}.",
      );
      expect(step("git-commit").config.path).toBe("./stage");
      expect(step("git-push")).toEqual({
        uses: "git-push",
        as: "push",
        config: { path: "./stage", targetBranch: "stage/${{ ctx.stage }}" },
      });
      expect(step("argocd-update").config.apps[0].sources).toEqual([
        { repoURL: "${{ vars.repoURL }}", desiredRevision: "${{ quote(task.outputs.push.commit) }}" },
      ]);
    });

    it("gives its steps the pipeline's repository, its stacks folder and the namespace the Applications live in, and every variable they read", () => {
      const task = ofKind("PromotionTask")[0]!;
      const vars = Object.fromEntries(
        (task.spec.vars as { name: string; value: string }[]).map((v) => [v.name, v.value]),
      );
      // Less those a step declares for itself.
      const own = new Set(
        (task.spec.steps as { vars?: { name: string }[] }[]).flatMap((s) =>
          (s.vars ?? []).map((v) => v.name),
        ),
      );
      const read = [...JSON.stringify(task.spec.steps).matchAll(/\bvars\.(\w+)/g)].map((m) => m[1]!);
      expect(Object.keys(vars).sort()).toEqual([...new Set(read)].filter((v) => !own.has(v)).sort());
      expect(vars.repoURL).toBe(pipeline.source.repoURL);
      expect(vars.stacksDir).toBe(pipeline.stacks.dir);
      const namespaces = new Set(ofKind("Application").map((a) => a.metadata.namespace));
      expect([...namespaces]).toEqual([vars.argocdNamespace]);
    });

    it("never writes to the branch the Warehouse watches: every write and the push are in the stage branch's checkout", () => {
      const watched = ofKind("Warehouse")[0]!.spec.subscriptions[0].git.branch as string;
      for (const s of steps()) {
        expect(JSON.stringify(s.config)).not.toContain(`"${watched}"`);
        if (["git-clear", "yaml-update", "file-write", "git-commit", "git-push"].includes(s.uses))
          expect(s.config.path).toMatch(/^\.\/stage(\/|$)/);
      }
      expect(step("copy").config.outPath).toMatch(/^\.\/stage\//);
      expect(step("git-push").config.targetBranch).not.toBe(watched);
    });

    it("quotes every expression that is a commit ID on its own, so Kargo never turns one into a number", () => {
      const strings: string[] = [];
      const visit = (v: unknown): void => {
        if (typeof v === "string") strings.push(v);
        else if (v && typeof v === "object") Object.values(v).forEach(visit);
      };
      visit(objects);
      // Not a map's: its values stay strings inside the JSON Kargo reads it from (a preview's `previewing`).
      const whole = strings.filter(
        (t) => /^\$\{\{.*\}\}$/.test(t) && /commitFrom|\.commit\b/.test(t) && !t.startsWith("${{ {"),
      );
      // git-clone's commit, yaml-update's value (the stage's and its drift check's), argocd-update's revision,
      // each program stage's verification arg.
      expect(whole.length).toBe(4 + programStages(pipeline).length);
      for (const t of whole) expect(t).toMatch(/^\$\{\{ quote\(.*\) \}\}$/);
    });

    it("is what every program stage runs, and syncs exactly that stage's Application, tracking its branch; gates and joins never run it", () => {
      const task = ofKind("PromotionTask")[0]!;
      const app = step("argocd-update").config.apps[0];
      for (const s of programStages(pipeline)) {
        // An update stage tells the task to write its drift check too (test/drift.test.ts).
        expect(stage(s.name).spec.promotionTemplate.spec.steps).toEqual([
          {
            task: { kind: "PromotionTask", name: task.metadata.name },
            ...(hasDriftCheck(pipeline, s) ? { vars: [{ name: DRIFT_CHECK_VAR, value: "true" }] } : {}),
          },
        ]);
        const appName = app.name
          .replace("${{ ctx.project }}", pipeline.project)
          .replace("${{ ctx.stage }}", s.name);
        expect(appName).toBe(stackObjectName(pipeline, s.name));
        const application = ofKind("Application").find((a) => a.metadata.name === appName);
        expect(application, appName).toBeDefined();
        expect(application!.metadata.annotations["kargo.akuity.io/authorized-stage"]).toBe(
          `${pipeline.project}:${s.name}`,
        );
        expect(application!.spec.source).toEqual({
          repoURL: pipeline.source.repoURL,
          targetRevision: stageBranch(s.name),
          path: ".",
          directory: {
            include: hasDriftCheck(pipeline, s)
              ? `{${stackManifestFile(s.name)},${driftManifestFile(s.name)}}`
              : stackManifestFile(s.name),
          },
        });
        // The template the task copies from the Freight's commit is committed.
        expect(
          fs.existsSync(path.join(repoRoot, pipeline.stacks.dir, stackManifestFile(s.name))),
          s.name,
        ).toBe(true);
      }
      const others = runStages(pipeline).filter((s) => s.kind === "gate" || s.kind === "join");
      expect(others.length).toBeGreaterThan(0);
      for (const s of others)
        expect(JSON.stringify(stage(s.name).spec.promotionTemplate ?? {}), s.name).not.toContain(
          task.metadata.name,
        );
    });
  });
});
