// The record of drift a check found, for the reconcile that brings it home to name: PKO records a drift
// check's failed preview as a Kubernetes Event on its Stack, in the stacks namespace (pulumi-kubernetes-operator
// v2.9.0 operator/internal/controller/pulumi/stack_controller.go markStackFailed: reason StackUpdateFailure,
// message "Failed to update stack: " and the Update's message, which for a check that found drift holds the
// CLI's output, the drifted resources, and "no changes were expected"). Argo Events' EventSource watches those
// Events there, the Sensor matches a drift Stack's (lib/pipeline/events.ts), and its `k8s` trigger patches the
// update stage's ConfigMap `drift-<stage>` in the Kargo project's namespace; a reconcile's promotion of that
// stage copies it into its record (lib/pipeline/promotion-rollback.ts). Pure functions over the definition.
import { anchored, stageNamesPattern } from "./event-filters";
import { programStages, type ProgramStage } from "./graph";
import { driftName, hasDriftCheck, stackObjectName } from "./names";
import type { Pipeline } from "./schema";

/** The reason PKO v2.9.0 gives a Stack's failed run (operator/api/pulumi/v1/events.go StackUpdateFailure). */
export const STACK_UPDATE_FAILURE = "StackUpdateFailure";
/**
 * The message of PKO's own answer to a concurrent update of the stack: the check did not run, so no drift
 * (agent/pkg/server/pulumi_errors.go knownErrors; cluster-setup/addons/stack-health.lua says the same).
 */
export const CONFLICT_MESSAGE = "Failed to update stack: Another update is currently in progress";

/** The ConfigMap holding the last drift an update stage's check found. */
export const driftRecordPrefix = "drift-";
export const driftRecordName = (stage: string) => `${driftRecordPrefix}${stage}`;
/** Its data keys: when the Event says PKO last saw it, the drift Stack, its update stage, PKO's message. */
export const driftRecordKeys = ["at", "stack", "stage", "message"] as const;

/**
 * The update stages that have a drift check (lib/pipeline/drift.ts re-exports it): every one, unless drift
 * checks are off. Each has a drift record.
 */
export const driftStages = (p: Pick<Pipeline, "stages" | "programs" | "verification">): ProgramStage[] =>
  programStages(p).filter((s) => hasDriftCheck(p, s));

/** The EventSource's event for drift: Events of the stacks namespace, added or counted again (below). */
export const driftEventName = "drift";

/**
 * The EventSource's watch of the stacks namespace. UPDATE as well as ADD: client-go's recorder counts a
 * repeat of the same Event (same reason, object and message) on the existing one (client-go
 * tools/record/events_cache.go EventCorrelator), so drift found again, after a reconcile, within the hour an
 * Event is kept, is an update of the first.
 */
export function driftEventSource(p: Pick<Pipeline, "stacks">) {
  return {
    namespace: p.stacks.namespace,
    group: "",
    version: "v1",
    resource: "events",
    eventTypes: ["ADD", "UPDATE"],
    filter: { afterStart: true },
  };
}

/**
 * The Sensor's dependency: PKO's StackUpdateFailure Event on a drift Stack (named after its update stage,
 * lib/pipeline/names.ts driftName) in the stacks namespace, unless PKO met another update of the stack.
 */
export function driftDependency(p: Pipeline, eventSourceName: string) {
  const data = [
    { path: "body.reason", type: "string", value: anchored([STACK_UPDATE_FAILURE]) },
    { path: "body.involvedObject.kind", type: "string", value: anchored(["Stack"]) },
    { path: "body.metadata.namespace", type: "string", value: anchored([p.stacks.namespace]) },
    {
      path: "body.involvedObject.name",
      type: "string",
      value: stageNamesPattern(driftStages(p), stackObjectName(p, ""), driftName("")),
    },
    { path: "body.message", type: "string", value: anchored([CONFLICT_MESSAGE]), comparator: "!=" },
  ];
  return { name: "drift-found", eventSourceName, eventName: driftEventName, filters: { data } };
}

const lit = (s: string) => JSON.stringify(s);

/**
 * The trigger: a merge patch of `drift-<stage>` (argo-events v1.9.10 pkg/sensors/triggers/standard-k8s
 * Execute: `patch` gets the object, then patches it, creating it only when it is missing). Parameters are Go
 * templates with sprig over the resource event, whose `body` is the Event (pkg/sensors/triggers/params.go).
 */
export function driftRecordTrigger(p: Pipeline) {
  const dep = "drift-found";
  const t = (body: string) => ({
    src: { dependencyName: dep, dataTemplate: `{{- $b := .Input.body | default dict -}}${body}`, value: "" },
  });
  const stack = '($b.involvedObject.name | default "")';
  const stage = `(${stack} | trimPrefix ${lit(stackObjectName(p, ""))} | trimSuffix ${lit(driftName(""))})`;
  return {
    template: {
      name: "record-drift",
      conditions: dep,
      k8s: {
        operation: "patch",
        patchStrategy: "application/merge-patch+json",
        source: {
          resource: {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "placeholder", namespace: p.project },
            data: Object.fromEntries(driftRecordKeys.map((k) => [k, ""])),
          },
        },
        parameters: [
          { ...t(`{{ printf "${driftRecordPrefix}%s" ${stage} }}`), dest: "metadata.name" },
          {
            ...t(
              "{{ $b.lastTimestamp | default $b.firstTimestamp | default $b.metadata.creationTimestamp }}",
            ),
            dest: "data.at",
          },
          { ...t(`{{ ${stack} }}`), dest: "data.stack" },
          { ...t(`{{ ${stage} }}`), dest: "data.stage" },
          { ...t('{{ $b.message | default "" }}'), dest: "data.message" },
        ],
      },
    },
    retryStrategy: { steps: 3 },
  };
}
