// What makes taking an environment back (or bringing drift home) a promotion like any other, in the
// promote-stack PromotionTask every program stage runs: an update stage takes only the Freight its preview
// stage previews now, every promotion runs its Stack again even at a commit it already ran, and a rollback
// request is recorded with the promotions it covers. Pure functions over the definition.
import type * as kargo from "../crds/generated/kargo";
import { driftRecordPrefix, driftStages } from "./drift-record";
import { ancestry, programStages, runStages, type ProgramStage } from "./graph";
import { rollbackRequestName } from "./rollback";
import type { Pipeline } from "./schema";

type TaskStep = NonNullable<kargo.PromotionTaskSpec["steps"]>[number];

/** The Stage metadata key a preview stage's promotion writes on that Stage: `{freight, commit, promotion}`. */
export const PREVIEWING_KEY = "previewing";

/**
 * The annotation PKO v2.9.0 reads as a reconcile request: a value other than the one its last run recorded
 * (status.lastUpdate.reconcileRequest) makes the Stack run again, preview or update, even at the commit it
 * last ran successfully, and even after it stopped retrying a failure (pulumi-kubernetes-operator v2.9.0
 * operator/api/pulumi/shared/stack_types.go ReconcileRequestAnnotation; operator/internal/controller/pulumi/
 * stack_controller.go isSynced, ReconcileRequestedPredicate).
 */
export const RECONCILE_REQUEST_ANNOTATION = "pulumi.com/reconciliation-request";

/** yaml-update's key for it: Kargo splits keys on unescaped dots (akuity/kargo v1.11.2 pkg/sjson/split_key.go). */
export const reconcileRequestKey = `metadata.annotations.${RECONCILE_REQUEST_ANNOTATION.replaceAll(".", "\\.")}`;

/** The ConfigMap in the Kargo project's namespace that holds an environment's rollback (or reconcile) request. */
export { rollbackRequestName };

/**
 * Each update stage's own preview stage (same environment and program) where the update takes Freight
 * through it: those updates run only what that preview previews now. An update beside its preview (the
 * definition allows one that does not wait for it) has none, nor has an environment without a preview.
 */
export function previewsOfUpdates(p: Pick<Pipeline, "stages" | "programs">): [ProgramStage, ProgramStage][] {
  const stages = programStages(p);
  const upstream = ancestry(runStages(p));
  return stages.flatMap((u): [ProgramStage, ProgramStage][] => {
    if (u.kind !== "update") return [];
    const preview = stages.find(
      (s) =>
        s.kind === "preview" &&
        s.environment === u.environment &&
        s.program === u.program &&
        upstream(u.name).has(s.name),
    );
    return preview ? [[u, preview]] : [];
  });
}

const lit = (s: string) => JSON.stringify(s);

/**
 * The task's first step, before anything is cloned or pushed: an update stage's promotion fails unless its
 * preview stage previews this very Freight now. Freight verified in a preview long ago stays available to
 * the update stage for good (Kargo never removes status.verifiedIn), so availability alone would let an
 * update run Freight whose preview ran against a state that is gone. Kargo evaluates `if` (which must be a
 * boolean) before the step's config, and a step whose `if` is false is skipped (akuity/kargo v1.11.2
 * pkg/promotion/evaluator.go ShouldSkip); `fail` always fails the promotion with its message
 * (pkg/promotion/runner/builtin/failer.go); stageMetadata() reads the Stage from the API server, not a cache
 * (pkg/expressions/function/functions.go), and yields nil for a Stage without metadata.
 */
export function previewedFreightStep(p: Pick<Pipeline, "stages" | "programs">): [] | [TaskStep] {
  const pairs = previewsOfUpdates(p);
  if (pairs.length === 0) return [];
  // One map, update stage → its preview stage, read by the condition and the message through the step's var.
  const map = `{${pairs.map(([u, s]) => `${lit(u.name)}: ${lit(s.name)}`).join(", ")} }`;
  const preview = "vars.previewOf[ctx.stage]";
  const now = `stageMetadata(${preview})?.${PREVIEWING_KEY}?.freight`;
  return [
    {
      uses: "fail",
      as: "previewed-freight",
      vars: [{ name: "previewOf", value: `\${{ ${map} }}` }],
      if: `\${{ ${preview} != nil && ${now} != ctx.targetFreight.name }}`,
      config: {
        message:
          `Freight \${{ ctx.targetFreight.name }} is not what stage \${{ ${preview} }} previews now ` +
          `(\${{ let f = ${now}; f == nil ? "nothing" : "Freight " + f }}): an update runs only the Freight its ` +
          `preview stage previewed last, against the state that preview saw. Promote this Freight into ` +
          `\${{ ${preview} }} first; npm run rollback takes an environment back to earlier Freight that way.`,
      },
    },
  ];
}

/**
 * The task's last step for a preview stage, once its manifest is pushed and synced: what it previews now,
 * on its own Stage, for its update stage's {@link previewedFreightStep}. set-metadata upserts the key on the
 * Stage's status (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/metadata_setter.go).
 */
export function previewingStep(p: Pick<Pipeline, "stages" | "programs">): [] | [TaskStep] {
  const previews = programStages(p).filter((s) => s.kind === "preview");
  if (previews.length === 0) return [];
  const value = `{"freight": ctx.targetFreight.name, "commit": commitFrom(vars.repoURL).ID, "promotion": ctx.promotion }`;
  return [
    {
      uses: "set-metadata",
      as: PREVIEWING_KEY,
      if: `\${{ ctx.stage in [${previews.map((s) => lit(s.name)).join(", ")}] }}`,
      config: {
        updates: [
          {
            kind: "Stage",
            name: "${{ quote(ctx.stage) }}",
            values: { [PREVIEWING_KEY]: `\${{ ${value} }}` },
          },
        ],
      },
    },
  ];
}

/**
 * The record's `rollback` (an expression): the environment's request, as `npm run rollback` writes it, when
 * this promotion is one it covers (into one of its `stages`, of its Freight `to`), with the Freight this stage
 * ran before; nil otherwise. configMap() yields an empty map for a ConfigMap that does not exist, and each
 * missing key reads as "" (akuity/kargo v1.11.2 pkg/expressions/function/functions.go getConfigMap). Only
 * update stages are looked up; `stages` and `from` are JSON, read only once `to` names this Freight.
 */
export function rollbackRecord(p: Pick<Pipeline, "stages" | "programs" | "verification">): {
  bind: string;
  value: string;
  drift: string;
} {
  const updates = programStages(p).filter((s) => s.kind === "update");
  if (updates.length === 0) return { bind: "", value: "nil", drift: "nil" };
  const environments = `{${updates.map((u) => `${lit(u.name)}: ${lit(rollbackRequestName(u.environment))}`).join(", ")} }`;
  const bind = `let rbName = ${environments}[ctx.stage]; let rb = rbName == nil ? {} : configMap(rbName); `;
  const covered = `rb.to != "" && rb.to == ctx.targetFreight.name && rb.stages != "" && ctx.stage in fromJSON(rb.stages)`;
  const fields = ["kind", "to", "by", "message", "at"].map((k) => `${lit(k)}: rb.${k}`);
  const from = `"from": rb.from == "" ? nil : fromJSON(rb.from)[ctx.stage]`;
  // A reconcile's promotion of a stage with a drift check names the drift that check last found (the Sensor's
  // record, drift-record.ts): what the reconcile brings home.
  const checked = driftStages(p).map((s) => lit(s.name));
  const drift =
    checked.length > 0
      ? `${covered} && rb.kind == "reconcile" && ctx.stage in [${checked.join(", ")}] ? configMap(${lit(driftRecordPrefix)} + ctx.stage) : nil`
      : "nil";
  return { bind, value: `${covered} ? {${[...fields, from].join(", ")} } : nil`, drift };
}
