// Kargo's own events, routed by Argo Events: what Kargo's open-source edition records only as Kubernetes
// Events in the project's namespace (akuity/kargo v1.11.2 pkg/event/kubernetes/sender.go: reason = the event
// type, facts in `event.kargo.akuity.io/*` annotations, api/v1alpha1/event.go). One EventSource watches them;
// one Sensor's dependencies match by reason (argo-events v1.9.10 pkg/sensors/dependencies/filter.go: a data
// filter's string values are regular expressions, so each is anchored), and its triggers are Argo Events'
// own: `slack` and `http` for the messages (only with a destination), `k8s` for the record of a stopped
// preview's approval (always) and for the drift a drift check finds (drift-record.ts, from PKO's Events).
// Pure functions over the definition; kargo/eventRouter.ts registers them.
import {
  driftDependency,
  driftEventName,
  driftEventSource,
  driftStages,
  driftRecordTrigger,
} from "./drift-record";
import { anchored, stageNamesPattern } from "./event-filters";
import { programStages, runStages, type ProgramStage } from "./graph";
import { isProtected, type Pipeline } from "./schema";
import { updateAfter } from "./notify";

/** Kargo's event annotations (akuity/kargo v1.11.2 api/v1alpha1/event.go). */
export const kargoEventKeys = {
  actor: "event.kargo.akuity.io/actor",
  freight: "event.kargo.akuity.io/freight-name",
  alias: "event.kargo.akuity.io/freight-alias",
  commits: "event.kargo.akuity.io/freight-commits",
  stage: "event.kargo.akuity.io/stage-name",
  promotion: "event.kargo.akuity.io/promotion-name",
} as const;

export const eventSourceName = "kargo-events";
/** The EventSource's event of the project's namespace (Kargo's Events). */
export const eventName = "kargo";
export const sensorName = "kargo-events";
/** The ServiceAccounts the EventSource's and the Sensor's pods run as, in Argo Events' namespace. */
export const eventSourceAccount = "kargo-events-source";
export const sensorAccount = "kargo-events-sensor";

/** The ConfigMap that records who approved a stopped preview's Freight for an update stage. */
export const stopApprovalPrefix = "approval-";
export const stopApprovalName = (freight: string, stage: string) =>
  `${stopApprovalPrefix}${freight}-${stage}`;
/** Its data keys. */
export const stopApprovalKeys = ["by", "at", "stage", "freight"] as const;

/** The messages, by dependency name, and the reasons each matches. */
export const eventKinds = {
  "freight-created": ["FreightCreated"],
  "promotion-failed": ["PromotionFailed", "PromotionErrored"],
  "stop-approved": ["FreightApproved"],
} as const;
export type EventKind = keyof typeof eventKinds;

/** The gates the Warehouse feeds: new Freight waits there first, each with its approver groups. */
export function firstGates(p: Pipeline): { gate: string; approvers: string[] }[] {
  return runStages(p).flatMap((s) =>
    s.kind === "gate" && s.from === "warehouse" ? [{ gate: s.name, approvers: s.approvers }] : [],
  );
}

/**
 * The update stages a stopped preview's Freight is approved for (the `--stage` of the command a stop gives):
 * each protected environment's update after a preview (notify.ts updateAfter, the stage the `preview-stopped`
 * message names).
 */
export function stopApprovalStages(p: Pipeline): ProgramStage[] {
  const stages = programStages(p)
    .filter((s) => s.kind === "preview" && isProtected(p.environments[s.environment]!))
    .flatMap((s) => updateAfter(p, s) ?? []);
  return [...new Map(stages.map((s) => [s.name, s])).values()];
}

/**
 * A stage's program and environment, found in the template from the programs and the declared environment
 * stages: a program stage is named after both (graph.ts programStageName), longest program first. Not a table
 * of every stage: the Sensor reaches its pods as one environment variable (argo-events v1.9.10
 * pkg/reconciler/sensor/resource.go, base64), and Linux takes at most 128 KiB in one.
 */
function stageFacts(p: Pipeline): string {
  const programs = p.programs.map((x) => x.name).sort((a, b) => b.length - a.length);
  const declared = p.stages.flatMap((s) =>
    s.kind === "gate" ? [] : [`${lit(s.name)} ${lit(s.environment)}`],
  );
  return [
    '{{- $program := "" -}}{{- $environment := "" -}}',
    `{{- range $p := list ${programs.map(lit).join(" ")} -}}{{- $suffix := printf "-%s" $p -}}`,
    `{{- if and (not $program) (hasSuffix $suffix $stage) -}}{{- $e := get (dict ${declared.join(" ")}) (trimSuffix $suffix $stage) -}}`,
    "{{- if $e -}}{{- $program = $p -}}{{- $environment = $e -}}{{- end -}}{{- end -}}{{- end -}}",
  ].join("");
}

/** A gjson path to an annotation of the Event (the resource event's `body`); dots in the key escaped. */
const annotationPath = (key: string) => `body.metadata.annotations.${key.replace(/\./g, "\\.")}`;

/**
 * The EventSource: Events added in the project's namespace since it started (none replayed on a restart),
 * and, with drift checks, PKO's in the stacks namespace (drift-record.ts).
 */
export function eventSourceSpec(p: Pipeline, eventBus: string) {
  return {
    eventBusName: eventBus,
    template: {
      serviceAccountName: eventSourceAccount,
      container: { resources: routerPodResources },
    },
    resource: {
      [eventName]: {
        namespace: p.project,
        group: "",
        version: "v1",
        resource: "events",
        eventTypes: ["ADD"],
        filter: { afterStart: true },
      },
      ...(recordsDrift(p) ? { [driftEventName]: driftEventSource(p) } : {}),
    },
  };
}

/**
 * Each dependency's filters: the reason, the object Kargo recorded it for and its namespace (the project's,
 * which holds the pipeline's Stages alone), and for an approval the stage.
 */
function dependency(p: Pipeline, kind: EventKind) {
  const data: { path: string; type: string; value: string[] }[] = [
    { path: "body.reason", type: "string", value: anchored(eventKinds[kind]) },
    {
      path: "body.involvedObject.kind",
      type: "string",
      value: anchored([kind === "promotion-failed" ? "Promotion" : "Freight"]),
    },
    { path: "body.metadata.namespace", type: "string", value: anchored([p.project]) },
  ];
  if (kind === "stop-approved")
    data.push({
      path: annotationPath(kargoEventKeys.stage),
      type: "string",
      value: stageNamesPattern(stopApprovalStages(p)),
    });
  return { name: kind, eventSourceName, eventName, filters: { data } };
}

/** The kinds this pipeline announces or records: new Freight only when a gate waits for it. */
export function activeKinds(p: Pipeline): EventKind[] {
  return (Object.keys(eventKinds) as EventKind[]).filter(
    (k) =>
      (k !== "freight-created" || firstGates(p).length > 0) &&
      (k !== "stop-approved" || stopApprovalStages(p).length > 0),
  );
}

/**
 * The kinds the Sensor acts on with these destinations: the record always (Argo Events is installed without
 * a destination for it), the messages only with somewhere to send them. None: no EventSource or Sensor.
 */
export function routedKinds(p: Pipeline, d: { slack?: unknown; webhook?: boolean }): EventKind[] {
  const sends = d.slack !== undefined || d.webhook === true;
  return activeKinds(p).filter((k) => k === "stop-approved" || sends);
}

/** Whether the Sensor records the drift checks find (drift-record.ts): whenever there are drift checks. */
export const recordsDrift = (p: Pipeline) => driftStages(p).length > 0;

/** What the EventSource's and the Sensor's pods request (the capacity figures read them from the plan). */
export const routerPodResources = { requests: { cpu: "5m", memory: "32Mi" } };

const lit = (s: string) => JSON.stringify(s);
const get = (key: string) => `(index $a ${lit(key)} | default "")`;
/**
 * A template over the dependency's event (argo-events v1.9.10 pkg/sensors/triggers/params.go
 * getValueWithTemplate: a Go template with sprig over `.Input`, the resource event, whose `body` is the Event),
 * after the variables `body` reads and only those, so each parameter's template stays as short as it can
 * (one per field and destination). The stage's program and environment come from the pipeline; the commit is
 * the Freight's first (Kargo's json.Marshal of its commits, in an annotation).
 */
function withPrelude(p: Pipeline, kargoProjectUrl: string, body: string): string {
  const lines: [string[], string][] = [
    [["b"], "{{- $b := .Input.body | default dict -}}"],
    [["a"], "{{- $a := $b.metadata.annotations | default dict -}}"],
    [["freight"], `{{- $freight := ${get(kargoEventKeys.freight)} -}}`],
    [["stage"], `{{- $stage := ${get(kargoEventKeys.stage)} -}}`],
    [["promotion"], `{{- $promotion := ${get(kargoEventKeys.promotion)} -}}`],
    [["actor"], `{{- $actor := ${get(kargoEventKeys.actor)} -}}`],
    [["reason"], '{{- $reason := $b.message | default "" -}}'],
    [["program", "environment"], stageFacts(p)],
    [
      ["what"],
      '{{- $what := printf "gate %s" $stage -}}{{- if $program -}}{{- $what = printf "%s in %s (stage %s)" $program $environment $stage -}}{{- end -}}',
    ],
    [
      ["commit", "subject"],
      `{{- $commit := "" -}}{{- $subject := "" -}}{{- range (${get(kargoEventKeys.commits)} | default "[]" | fromJson) -}}{{- if not $commit -}}{{- $commit = .id | default "" -}}{{- $subject = (.message | default "" | splitList "\\n" | first) -}}{{- end -}}{{- end -}}`,
    ],
    [["kargo"], `{{- $kargo := ${lit(kargoProjectUrl)} -}}`],
    [["freightUrl"], '{{- $freightUrl := printf "%s/freight/%s" $kargo $freight -}}'],
    [["promotionUrl"], '{{- $promotionUrl := printf "%s/promotion/%s" $kargo $promotion -}}'],
  ];
  const uses = (text: string, v: string) => new RegExp(`\\$${v}\\b`).test(text);
  const kept: string[] = [];
  let needed = body;
  for (const [vars, line] of [...lines].reverse()) {
    if (!vars.some((v) => uses(needed, v))) continue;
    kept.unshift(line);
    needed += line;
  }
  return [...kept, body].join("\n");
}

/** Slack's mrkdwn reads `<...>` as a link or mention and `&` as an entity: every value goes through this. */
const s = (name: string) => `{{ ${name} | replace "&" "&amp;" | replace "<" "&lt;" | replace ">" "&gt;" }}`;

function slackText(p: Pipeline, kind: Exclude<EventKind, "stop-approved">): string {
  if (kind === "freight-created") {
    const gates = firstGates(p)
      .map((g) => `${g.gate} (${g.approvers.join(", ")})`)
      .join("; ");
    return `:inbox_tray: New Freight ${s("$freight")} at commit ${s("$commit")} (${s("$subject")}) waits at ${s(lit(gates))}. Approve: ${s("$freightUrl")}`;
  }
  return `:x: The promotion of ${s("$what")} to commit ${s("$commit")} failed: ${s("$reason")}\nPromotion: ${s("$promotionUrl")} Freight: ${s("$freightUrl")}`;
}

/** The webhook's JSON fields per message, each set by Argo Events as a JSON string (sjson). */
function webhookFields(p: Pipeline, kind: Exclude<EventKind, "stop-approved">): Record<string, string> {
  const gates = firstGates(p)
    .map((g) => `${g.gate} (${g.approvers.join(", ")})`)
    .join("; ");
  const common = { commit: "$commit", freight: "$freight", freightUrl: "$freightUrl" };
  return kind === "freight-created"
    ? { ...common, gates: lit(gates) }
    : {
        ...common,
        stage: "$stage",
        program: "$program",
        environment: "$environment",
        reason: "$reason",
        promotion: "$promotion",
        promotionUrl: "$promotionUrl",
      };
}

/** A parameter whose value is a template over the dependency's event; `value` when it renders empty. */
const templated = (dependencyName: string, template: string, dest: string) => ({
  src: { dependencyName, dataTemplate: template, value: "" },
  dest,
});

export interface SensorDestinations {
  slack?: { channel: string; secret: string; key: string };
  /** The webhook's URL: Argo Events' http trigger takes it in the Sensor's spec. */
  webhookUrl?: string;
}

/** The record of a stopped preview's approval: created once, never updated (immutable). */
function stopApprovalTrigger(p: Pipeline) {
  const dep = "stop-approved";
  const t = (body: string) => withPrelude(p, "", body);
  return {
    template: {
      name: "record-stop-approval",
      conditions: dep,
      k8s: {
        operation: "create",
        source: {
          resource: {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "placeholder", namespace: p.project },
            immutable: true,
            data: Object.fromEntries(stopApprovalKeys.map((k) => [k, ""])),
          },
        },
        parameters: [
          templated(dep, t(`{{ printf "${stopApprovalPrefix}%s-%s" $freight $stage }}`), "metadata.name"),
          templated(dep, t("{{ $actor }}"), "data.by"),
          templated(dep, t("{{ $b.firstTimestamp | default $b.metadata.creationTimestamp }}"), "data.at"),
          templated(dep, t("{{ $stage }}"), "data.stage"),
          templated(dep, t("{{ $freight }}"), "data.freight"),
        ],
      },
    },
    // A record that exists is the first approval's: Argo Events' create fails, and is not retried forever.
    retryStrategy: { steps: 3 },
  };
}

/**
 * The Sensor: one dependency per kind, one Slack and one webhook trigger per message (trigger-level
 * parameters: the Slack trigger sends its template's `message`, not one its own parameters set; argo-events
 * v1.9.10 pkg/sensors/triggers/slack/slack.go Execute), the approval record, and the drift record.
 */
export function sensorSpec(p: Pipeline, kargoProjectUrl: string, eventBus: string, d: SensorDestinations) {
  const kinds = routedKinds(p, { slack: d.slack, webhook: d.webhookUrl !== undefined });
  const messages = kinds.filter((k): k is Exclude<EventKind, "stop-approved"> => k !== "stop-approved");
  const triggers = messages.flatMap((kind) => {
    const t = (body: string) => withPrelude(p, kargoProjectUrl, body);
    return [
      ...(d.slack
        ? [
            {
              template: {
                name: `${kind}-slack`,
                conditions: kind,
                slack: {
                  channel: d.slack.channel,
                  slackToken: { name: d.slack.secret, key: d.slack.key },
                  message: kind,
                },
              },
              parameters: [templated(kind, t(slackText(p, kind)), "slack.message")],
            },
          ]
        : []),
      ...(d.webhookUrl
        ? [
            {
              template: {
                name: `${kind}-webhook`,
                conditions: kind,
                http: {
                  url: d.webhookUrl,
                  method: "POST",
                  headers: { "Content-Type": "application/json" },
                  payload: [
                    { src: { dependencyName: kind, value: kind }, dest: "event" },
                    ...Object.entries(webhookFields(p, kind)).map(([field, v]) =>
                      templated(kind, t(`{{ ${v} }}`), field),
                    ),
                  ],
                },
              },
            },
          ]
        : []),
    ];
  });
  return {
    eventBusName: eventBus,
    template: {
      serviceAccountName: sensorAccount,
      container: { resources: routerPodResources },
    },
    dependencies: [
      ...kinds.map((k) => dependency(p, k)),
      ...(recordsDrift(p) ? [driftDependency(p, eventSourceName)] : []),
    ],
    triggers: [
      ...triggers,
      ...(kinds.includes("stop-approved") ? [stopApprovalTrigger(p)] : []),
      ...(recordsDrift(p) ? [driftRecordTrigger(p)] : []),
    ],
  };
}
