// Drift checks (lib/pipeline/drift.ts): each update stage's branch holds a drift Stack beside its own, a
// read-only preview of the same stack at the same commit, failing on any proposed change, run again every
// `verification.driftInterval`. What PKO and Pulumi do with it is the Go harness's (test/health for the
// health Argo CD shows, test/pulumiengine for the engine's refresh and the CLI's mark, test/promotion for
// Kargo running the task); here, what the pipeline derives and what the schema lets through.
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { plannedDriftStack, stackAdmission } from "../lib/pipeline/admission";
import { accountOf, previewServiceAccount } from "../lib/pipeline/accounts";
import * as cloud from "../kargo/verification/cloud.mjs";
import {
  DRIFT_CHECK_ENV,
  DRIFT_CHECK_KEY,
  RECONCILE_REQUEST_ANNOTATION,
  driftIntervalSeconds,
  driftStackManifest,
  driftStages,
} from "../lib/pipeline/drift";
import { programStages } from "../lib/pipeline/graph";
import { driftManifestFile, driftName, stackManifestFile, stackObjectName } from "../lib/pipeline/names";
import { DRIFT_CHECK_VAR, promotionTaskSpec, stageSpec } from "../lib/pipeline/promotion";
import { durationSeconds, type Pipeline } from "../lib/pipeline/schema";
import { applicationSpec, stackManifest } from "../lib/pipeline/stack-manifest";
import { renderStacks } from "../lib/pipeline/stacks";
import { validatePipeline } from "../lib/pipeline/validate";
import { base, problemsOf, withVerification } from "./pipeline-support";

const pipeline = validatePipeline(definition);
const off = validatePipeline(withVerification({ driftInterval: "off" }));
const updates = (p: Pipeline) => programStages(p).filter((s) => s.kind === "update");

describe("a drift check", () => {
  it("exists for every update stage and no other, unless verification.driftInterval is off", () => {
    expect(updates(pipeline).length).toBeGreaterThan(0);
    expect(driftStages(pipeline)).toEqual(updates(pipeline));
    expect(driftStages(off)).toEqual([]);
  });

  it("previews, with refresh, the update stage's own stack, program, commit field and workspace, as the environment's read-only identity, failing on any proposed change and never destroying", () => {
    for (const p of [pipeline, validatePipeline(withVerification({ driftInterval: "15m" }))]) {
      for (const s of driftStages(p)) {
        const update = stackManifest(p, s);
        const drift = driftStackManifest(p, s);
        expect(drift.metadata.name).toBe(stackObjectName(p, driftName(s.name)));
        expect(drift.metadata.namespace).toBe(update.metadata.namespace);
        for (const field of ["stack", "projectRepo", "repoDir", "commit", "gitAuth", "envRefs"] as const)
          expect(drift.spec[field], `${s.name} ${field}`).toEqual(update.spec[field]);
        expect(drift.spec.serviceAccountName).toBe(
          previewServiceAccount(p.stacks.serviceAccountName, accountOf(p.environments, s.environment)),
        );
        expect(drift.spec.serviceAccountName).not.toBe(update.spec.serviceAccountName);
        expect(drift.spec.preview).toBe(true);
        expect(drift.spec.refresh).toBe(true);
        expect((drift.spec as { destroyOnFinalize?: boolean }).destroyOnFinalize).toBeUndefined();
        // What PKO v2.9.0 passes on to `pulumi preview --expect-no-changes` (lib/pipeline/drift.ts).
        expect(drift.spec.updateTemplate).toEqual({ spec: { expectNoChanges: true } });
        expect(drift.spec.continueResyncOnCommitMatch).toBe(true);
        expect(drift.spec.resyncFrequencySeconds).toBe(durationSeconds(p.verification.driftInterval));
        // Waits for the stage's own run of its current generation; never asks PKO to run it again.
        expect(drift.spec.prerequisites).toEqual([{ name: update.metadata.name }]);
        // The same workspace, plus the mark verification leaves out.
        const { env, ...workspace } = drift.spec.workspaceTemplate.spec;
        const { env: updateEnv, ...updateWorkspace } = update.spec.workspaceTemplate!.spec!;
        expect(workspace).toEqual(updateWorkspace);
        expect(env).toEqual([...updateEnv!, { name: DRIFT_CHECK_ENV, value: "true" }]);
        expect(drift.metadata.annotations[RECONCILE_REQUEST_ANNOTATION]).toBe("");
      }
    }
  });

  it("never destroys an ephemeral environment's stack, whose update Stack does on deletion", () => {
    const [env] = Object.keys(definition.environments);
    const ephemeral = validatePipeline({
      ...definition,
      environments: {
        ...definition.environments,
        [env!]: { pulumiStack: definition.environments[env!]!.pulumiStack, ephemeral: true },
      },
    });
    const s = driftStages(ephemeral).find((x) => x.environment === env)!;
    expect(stackManifest(ephemeral, s).spec.destroyOnFinalize).toBe(true);
    expect(
      (driftStackManifest(ephemeral, s).spec as { destroyOnFinalize?: boolean }).destroyOnFinalize,
    ).toBeUndefined();
  });

  it("is a template of stacks/ beside its stage's, synced by the stage's Application", () => {
    const files = renderStacks(pipeline);
    for (const s of programStages(pipeline)) {
      const include = applicationSpec(pipeline, s, { argocdProject: "p" }).source!.directory!.include;
      if (s.kind === "update") {
        expect(files.has(driftManifestFile(s.name)), s.name).toBe(true);
        expect(include).toBe(`{${stackManifestFile(s.name)},${driftManifestFile(s.name)}}`);
      } else {
        expect(include).toBe(stackManifestFile(s.name));
      }
    }
    expect([...renderStacks(off).keys()].sort()).toEqual(
      programStages(off)
        .map((s) => stackManifestFile(s.name))
        .sort(),
    );
    for (const s of updates(off))
      expect(applicationSpec(off, s, { argocdProject: "p" }).source!.directory!.include).toBe(
        stackManifestFile(s.name),
      );
  });

  it("is written by its update stage's promotion, at the promoted commit, with the promotion as its reconcile request", () => {
    const steps = promotionTaskSpec(pipeline, "argocd").steps!;
    const drift = steps.filter((x) =>
      JSON.stringify(x.config).includes(driftManifestFile("${{ ctx.stage }}")),
    );
    expect(drift.map((x) => x.uses)).toEqual(["copy", "yaml-update"]);
    for (const x of drift) expect(x.if).toBe(`\${{ string(vars.${DRIFT_CHECK_VAR}) == "true" }}`);
    const update = drift[1]!.config as { updates: { key: string; value: string }[] };
    const main = steps.find((x) => x.uses === "yaml-update")!.config as typeof update;
    expect(update.updates).toEqual([
      main.updates.find((u) => u.key === "spec.commit"),
      {
        key: "metadata.annotations.pulumi\\.com/reconciliation-request",
        value: "${{ quote(ctx.promotion) }}",
      },
    ]);
    // Before the commit and push, so one commit moves both Stacks.
    const at = (uses: string) => steps.findIndex((x) => x.uses === uses);
    expect(steps.indexOf(drift[1]!)).toBeLessThan(at("git-commit"));
    // Off unless the stage says so: only update stages with a drift check do.
    const task = promotionTaskSpec(pipeline, "argocd");
    expect(task.vars).toContainEqual({ name: DRIFT_CHECK_VAR, value: "false" });
    for (const p of [pipeline, off])
      for (const s of programStages(p)) {
        const vars = stageSpec(p, s).promotionTemplate!.spec.steps![0]!.vars;
        expect(vars, s.name).toEqual(
          s.kind === "update" && p === pipeline ? [{ name: DRIFT_CHECK_VAR, value: "true" }] : undefined,
        );
      }
  });

  it("is admitted only as planned, applied by its update stage's Application", () => {
    const names = (p: Pipeline) =>
      (stackAdmission(p) as { kind: string; metadata: { name: string } }[])
        .filter((o) => o.kind === "ValidatingAdmissionPolicy")
        .map((o) => o.metadata.name);
    for (const s of driftStages(pipeline)) {
      const planned = plannedDriftStack(pipeline, s);
      expect(planned.application).toBe(stackObjectName(pipeline, s.name));
      expect(planned.name).toBe(stackObjectName(pipeline, driftName(s.name)));
      expect(planned.spec.commit).toBeUndefined();
      expect(planned.spec.preview).toBe(true);
    }
    expect(names(pipeline).length - names(off).length).toBe(driftStages(pipeline).length);
  });
});

describe("a drift check's previews", () => {
  it("carry the key verification leaves out: the workspace variable's name, as the Pulumi CLI records it", () => {
    expect(DRIFT_CHECK_KEY).toBe(`pulumi.env.${DRIFT_CHECK_ENV}`);
    // kargo/verification/cloud.mjs is dependency-free (the Job runs it as is), so it spells the key itself.
    expect(cloud.DRIFT_CHECK_KEY).toBe(DRIFT_CHECK_KEY);
    const env = { "git.head": "c0ffee", "exec.kind": "auto.inline" };
    expect(cloud.isDriftCheck({ environment: { ...env, [DRIFT_CHECK_KEY]: "set" } })).toBe(true);
    // Whatever the CLI writes as the value: a future Pulumi declaring it a boolean writes "true".
    expect(cloud.isDriftCheck({ environment: { ...env, [DRIFT_CHECK_KEY]: "true" } })).toBe(true);
    expect(cloud.isDriftCheck({ environment: env })).toBe(false);
    expect(cloud.isDriftCheck({ environment: null })).toBe(false);
    expect(cloud.isDriftCheck(null)).toBe(false);
  });
});

describe("verification.driftInterval", () => {
  it("defaults to an hour", () => {
    const unset = validatePipeline({
      ...base,
      verification: { ...base.verification, driftInterval: undefined },
    });
    expect(unset.verification.driftInterval).toBe("1h");
    expect(driftIntervalSeconds(unset)).toBe(3600);
  });

  it.each(["1m", "60s", "90s", "30m", "24h", "168h", "10080m"])("accepts %s", (interval) => {
    expect(driftIntervalSeconds(validatePipeline(withVerification({ driftInterval: interval })))).toBe(
      durationSeconds(interval),
    );
  });

  it.each(["30s", "59s", "0", "0m", "1d", "hourly", "", "OFF", "169h", "99999999999h", "1h30m"])(
    "refuses %j, naming the field and what is allowed",
    (interval) => {
      expect(problemsOf(withVerification({ driftInterval: interval }))).toMatch(
        /verification\.driftInterval: must be a duration from "1m" to "168h", such as "30m" or "1h", or "off" for no drift checks/,
      );
    },
  );
});
