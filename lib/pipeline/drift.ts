// Drift checks: each update stage's branch also holds a drift Stack, which previews the stage's program
// again, at the commit the stage last ran, every `verification.driftInterval`, as the environment's
// read-only identity. A resource changed outside Pulumi makes that preview propose changes, and the preview
// fails; the stage's Application goes Degraded (cluster-setup/addons/stack-health.lua says "drift" and which
// Stack), and the stage's people hear of it through the Degraded notification. Nothing here changes
// anything: bringing it home is a promotion of the current Freight through the preview stop
// (`npm run rollback -- <environment> --reconcile`), whose record names the drift found (drift-record.ts).
import { type ProgramStage } from "./graph";
import { driftName, stackObjectName } from "./names";
import { RECONCILE_REQUEST_ANNOTATION } from "./promotion-rollback";
import { DRIFT_OFF, durationSeconds, type Pipeline } from "./schema";
import { stackManifest, stackServiceAccount } from "./stack-manifest";

/**
 * The workspace variable marking a drift check's previews. The Pulumi CLI records every `PULUMI_*`
 * variable's name (not its value) into the update's `environment` map as `pulumi.env.<NAME>` (pulumi/pulumi
 * pkg/v3 v3.274.1 cmd/pulumi/metadata/metadata.go, addPulumiCLIMetadataToEnvironment), and Pulumi Cloud
 * lists that map with each preview: verification (kargo/verification/verify.mjs) never takes a drift
 * check's preview for a promotion's.
 */
export const DRIFT_CHECK_ENV = "PULUMI_PLATFORM_DRIFT_CHECK";
/** The key the CLI records {@link DRIFT_CHECK_ENV} under in an update's `environment`. */
export const DRIFT_CHECK_KEY = `pulumi.env.${DRIFT_CHECK_ENV}`;

/** The annotation PKO v2.9.0 reads as a reconcile request (promotion-rollback.ts says how). */
export { RECONCILE_REQUEST_ANNOTATION };

/** The drift Stack's annotation naming its environment. */
export const DRIFT_ENVIRONMENT_ANNOTATION = "platform/environment";

/** Seconds between drift checks, or undefined when `verification.driftInterval` is "off". */
export function driftIntervalSeconds(p: Pick<Pipeline, "verification">): number | undefined {
  const interval = p.verification.driftInterval;
  return interval === DRIFT_OFF ? undefined : durationSeconds(interval);
}

/** The update stages that have a drift check (drift-record.ts holds it: the drift record needs it too). */
export { driftStages } from "./drift-record";

/**
 * The drift Stack of an update stage: the update's Stack, same Pulumi stack, program and workspace, but a
 * preview (PKO never runs `up` or a destroy for one: v2.9.0 stack_controller.go), as the environment's
 * read-only preview ServiceAccount, with refresh, failing on any proposed change, run again at the same
 * commit every interval.
 */
export function driftStackManifest(p: Pipeline, s: ProgramStage) {
  const interval = driftIntervalSeconds(p)!;
  const update = stackManifest(p, s);
  const workspace = update.spec.workspaceTemplate!.spec!;
  // A preview never destroys (v2.9.0 stack_controller.go: `!stack.DestroyOnFinalize || stack.Preview`).
  const { destroyOnFinalize: _never, ...spec } = update.spec;
  return {
    ...update,
    metadata: {
      ...update.metadata,
      name: stackObjectName(p, driftName(s.name)),
      labels: { ...update.metadata.labels, "app.kubernetes.io/component": "drift-check" },
      annotations: {
        ...update.metadata.annotations,
        // Set by each promotion of the update stage, so a check that stopped on drift runs again once the
        // drift is brought home at the same commit (PKO reconciles on a changed value: v2.9.0
        // stack_controller.go ReconcileRequestedPredicate). Kargo's yaml-update needs the key to exist.
        [RECONCILE_REQUEST_ANNOTATION]: "",
        // What its Degraded health names (cluster-setup/addons/stack-health.lua): the command that brings
        // the environment back.
        [DRIFT_ENVIRONMENT_ANNOTATION]: s.environment,
      },
    },
    spec: {
      ...spec,
      serviceAccountName: stackServiceAccount(p, { ...s, kind: "preview" }),
      preview: true,
      refresh: true,
      // PKO v2.9.0 ignores spec.expectNoRefreshChanges (operator/internal/controller/pulumi/migration.go
      // "expectNoRefreshChanges is ignored"; stack_controller.go newUp leaves ExpectNoChanges commented out).
      // What it does pass on is the Update's expectNoChanges (update_controller.go Preview), which becomes
      // `pulumi preview --refresh --expect-no-changes` (agent/pkg/server/server.go Preview): the refreshed
      // state differs from what the program declares, the preview proposes changes and fails
      // (pulumi/pulumi pkg/v3 v3.274.1 cmd/pulumi/operations/preview.go, NoChangesExpectedError).
      updateTemplate: { spec: { expectNoChanges: true } },
      // At the same commit, again every interval after a check that passed (stack_controller.go isSynced).
      continueResyncOnCommitMatch: true,
      resyncFrequencySeconds: interval,
      // Only after the stage's own Stack has run its current generation and succeeded
      // (stack_controller.go isRequirementSatisfied): a check never previews a release its update has not
      // applied yet. No `requirement`: with succeededWithinDuration PKO would re-run the update itself.
      prerequisites: [{ name: update.metadata.name }],
      workspaceTemplate: {
        spec: { ...workspace, env: [...(workspace.env ?? []), { name: DRIFT_CHECK_ENV, value: "true" }] },
      },
    },
  };
}
