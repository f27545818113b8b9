// Who is told what, through the notification engine Argo Rollouts already runs: its analysis controller, which
// runs every Kargo verification, sends a notification for each AnalysisRun it finishes to the destinations
// subscribed to the trigger named after the event (AnalysisRunFailed: on-analysis-run-failed; argo-rollouts
// v1.9.0 utils/record/record.go, sendNotifications), evaluated by argoproj/notifications-engine. Each run carries
// its stage's facts as annotations (lib/pipeline/notify.ts). No destination configured: notifications stay
// off, nothing is sent, and cluster-setup says so (index.ts).
import * as pulumi from "@pulumi/pulumi";
import YAML from "yaml";
import type { Values } from "../../lib/helmAddon";
import { notifyKeys } from "../../lib/pipeline/notify";

/** Where messages go: a Slack channel (with a bot token) and a generic webhook; each optional, secrets secret. */
export interface NotificationDestinations {
  /** `mentions`: each deciding group's Slack mention (cluster-setup:notifySlackMentions), validated. */
  slack?: { channel: string; token: pulumi.Input<string>; mentions?: Record<string, string> };
  webhook?: { url: pulumi.Input<string> };
}

/** The notification secret's keys, which the notifiers name as `$<key>`. */
export const secretKeys = { slackToken: "notify-slack-token", webhookUrl: "notify-webhook-url" } as const;
/**
 * The webhook notifier's name: `service.webhook.<name>` is a service of that name, which a subscription names
 * alone (notifications-engine pkg/api/config.go).
 */
export const webhookName = "pipeline-webhook";

/** What each AnalysisRun event says, by template name: the events of issue #41's list. */
export const notificationTemplates = [
  "preview-stopped",
  "verification-failed",
  "update-succeeded",
  "freight-at-gate",
] as const;
type TemplateName = (typeof notificationTemplates)[number];

/** YAML without folding: each template reads in the ConfigMap as it is written here. */
export const yaml = (value: unknown) => YAML.stringify(value, { lineWidth: 0 });

const annotation = (key: string) => `rollout.metadata.annotations?.[${JSON.stringify(key)}]`;
const kind = annotation(notifyKeys.kind);
const isProtected = `${annotation(notifyKeys.protected)} == "true"`;
/**
 * A stop, told from a failure by what the Job wrote (kargo/verification/run-message.mjs decision): Argo
 * Rollouts ends the run's message with `"Error Message: <the Job's reason>"` (argo-rollouts v1.9.0
 * analysis/analysis.go, assessRunStatus), and only a stop's reason opens with the Freight waiting for a
 * decision; anchored, so no text inside another reason can pass for one. A failed preview of a protected
 * environment is a failure: `verification-failed`.
 */
export const stopOpening =
  '^Metric "[^"]*" assessed Failed due to failed \\(\\d+\\) > failureLimit \\(\\d+\\): "Error Message: Freight [0-9a-z]+ waits for a decision of ';
const stopped = `${kind} == "preview" && ${isProtected} && (rollout.status?.message ?? "") matches ${JSON.stringify(stopOpening)}`;

/**
 * Triggers by the event that fires them. The run object is `rollout` (Argo Rollouts hands any object it
 * records an event for to the engine under that name, utils/record/record.go NewAPIFactorySettings). Only
 * runs with our annotations match: other AnalysisRuns in the cluster are never announced.
 */
export const notificationTriggers: Record<string, { when: string; send: TemplateName[] }[]> = {
  "on-analysis-run-failed": [
    { when: stopped, send: ["preview-stopped"] },
    { when: `${kind} != nil && !(${stopped})`, send: ["verification-failed"] },
  ],
  "on-analysis-run-error": [{ when: `${kind} != nil`, send: ["verification-failed"] }],
  "on-analysis-run-inconclusive": [{ when: `${kind} != nil`, send: ["verification-failed"] }],
  "on-analysis-run-successful": [
    { when: `${kind} == "update" && ${isProtected}`, send: ["update-succeeded"] },
    { when: `${annotation(notifyKeys.nextGates)} != nil`, send: ["freight-at-gate"] },
  ],
};

const get = (key: string) => `(index $a ${JSON.stringify(key)} | default "")`;
/**
 * Every template starts by naming what it reads: the stage's facts, the commit (the run's `commit` argument),
 * the Freight (the run's owner, akuity/kargo v1.11.2 pkg/controller/stages/regular_stages.go WithOwner), and
 * the reason (the run's message and each metric's that did not succeed).
 */
const prelude = [
  "{{- $a := .rollout.metadata.annotations | default dict -}}",
  `{{- $stage := ${get(notifyKeys.stage)} -}}`,
  `{{- $program := ${get(notifyKeys.program)} -}}`,
  `{{- $environment := ${get(notifyKeys.environment)} -}}`,
  `{{- $kargo := ${get(notifyKeys.kargoProjectUrl)} -}}`,
  `{{- $stack := ${get(notifyKeys.stackUrl)} -}}`,
  `{{- $approvers := ${get(notifyKeys.approvers)} -}}`,
  `{{- $approveStage := ${get(notifyKeys.approveStage)} -}}`,
  '{{- $project := .rollout.metadata.namespace | default "" -}}',
  `{{- $gates := ${get(notifyKeys.nextGates)} -}}`,
  '{{- $commit := "" -}}{{- range .rollout.spec.args -}}{{- if eq .name "commit" -}}{{- $commit = .value | default "" -}}{{- end -}}{{- end -}}',
  '{{- $freight := "" -}}{{- range .rollout.metadata.ownerReferences -}}{{- if eq .kind "Freight" -}}{{- $freight = .name -}}{{- end -}}{{- end -}}',
  '{{- $reason := .rollout.status.message | default "" -}}',
  '{{- range .rollout.status.metricResults -}}{{- if ne .phase "Successful" -}}{{- $reason = printf "%s %s: %s" $reason .name (.message | default .phase) | trim -}}{{- end -}}{{- end -}}',
  '{{- $freightUrl := printf "%s/freight/%s" $kargo $freight -}}',
  '{{- $stageUrl := printf "%s/stage/%s" $kargo $stage -}}',
  '{{- $command := printf "kargo approve --project %s --freight %s --stage %s" $project $freight $approveStage -}}',
].join("\n");

/**
 * Slack's mrkdwn reads `<...>` as a link or a mention and `&` as an entity: every value goes through this, so
 * a reason holding `<!channel>` or `<https://x|y>` shows as text (api.slack.com/reference/surfaces/formatting).
 */
export const slackText = (name: string) =>
  `{{ ${name} | replace "&" "&amp;" | replace "<" "&lt;" | replace ">" "&gt;" }}`;
const s = slackText;

/** Per template: its Slack text, and the webhook's JSON fields (each value JSON-encoded by toJson). */
const texts: Record<TemplateName, { slack: string; event: string; fields: string[] }> = {
  "preview-stopped": {
    slack: `:octagonal_sign: Freight ${s("$freight")} waits for a decision of ${s("$approvers")}, not a failure: the preview of ${s("$program")} in ${s("$environment")} (stage ${s("$stage")}, commit ${s("$commit")}) would change what ${s("$environment")} stops on. What it would do: ${s("$stack")}\nTo let it through, a member of ${s("$approvers")} runs: \`${s("$command")}\` (or approves it in Kargo: ${s("$freightUrl")})\nReason: ${s("$reason")}`,
    event: "preview-stopped",
    fields: ["approvers", "approveStage", "project", "command", "reason"],
  },
  "verification-failed": {
    slack: `:x: ${s("$program")} in ${s("$environment")} failed verification at commit ${s("$commit")} (stage ${s("$stage")}): ${s("$reason")}\nFreight ${s("$freight")}: ${s("$freightUrl")} Stage: ${s("$stageUrl")} Pulumi: ${s("$stack")}`,
    event: "verification-failed",
    fields: ["reason"],
  },
  "update-succeeded": {
    slack: `:white_check_mark: ${s("$program")} in ${s("$environment")} updated to commit ${s("$commit")} and verified (stage ${s("$stage")}). Freight: ${s("$freightUrl")}`,
    event: "update-succeeded",
    fields: [],
  },
  "freight-at-gate": {
    slack: `:hourglass: Freight ${s("$freight")} (commit ${s("$commit")}) passed ${s("$program")} in ${s("$environment")} (stage ${s("$stage")}); once every program of ${s("$environment")} has, it waits at ${s("$gates")}. Approve: ${s("$freightUrl")}`,
    event: "freight-at-gate",
    fields: ["gates"],
  },
};

const common = ["stage", "program", "environment", "commit", "freight", "freightUrl", "stageUrl", "stack"];

/**
 * The Slack mentions of a stop's deciders, after its text: `$approvers` ("a, b") looked up in the configured
 * map. Written unescaped, the one value so: config validation lets only a mention's exact form through.
 */
function mentionsOf(mentions: Record<string, string> = {}): string {
  const pairs = Object.entries(mentions)
    .map(([group, mention]) => `${JSON.stringify(group)} ${JSON.stringify(mention)}`)
    .join(" ");
  if (pairs === "") return "";
  return [
    `{{- $m := dict ${pairs} -}}{{- $mentions := list -}}`,
    '{{- range (splitList ", " $approvers) -}}{{- $x := get $m . -}}{{- if $x -}}{{- $mentions = append $mentions $x -}}{{- end -}}{{- end -}}',
    '{{- if $mentions }}\n{{ join " " $mentions }}{{ end -}}',
  ].join("");
}

function template(name: TemplateName, d: NotificationDestinations): string {
  const t = texts[name];
  const fields = [...common, ...t.fields].map((f) => `${JSON.stringify(f)} $${f}`).join(" ");
  const mentions = name === "preview-stopped" ? mentionsOf(d.slack?.mentions) : "";
  return yaml({
    message: `${prelude}\n${t.slack}${mentions}`,
    webhook: {
      [webhookName]: {
        method: "POST",
        body: `${prelude}\n{{ dict "event" ${JSON.stringify(t.event)} ${fields} | toJson }}`,
      },
    },
  });
}

/**
 * The pieces every engine of ours shares for the configured destinations (Argo Rollouts' and Argo CD's
 * notifications, both argoproj/notifications-engine): the Secret's items (Pulumi secrets), the notifiers
 * that read them as `$<key>`, and the subscription recipients (`slack:<channel>`, the webhook's name).
 */
export function destinationServices(d: NotificationDestinations) {
  return {
    secretItems: {
      ...(d.slack ? { [secretKeys.slackToken]: pulumi.secret(d.slack.token) } : {}),
      ...(d.webhook ? { [secretKeys.webhookUrl]: pulumi.secret(d.webhook.url) } : {}),
    },
    notifiers: {
      ...(d.slack ? { "service.slack": yaml({ token: `$${secretKeys.slackToken}` }) } : {}),
      ...(d.webhook
        ? {
            [`service.webhook.${webhookName}`]: yaml({
              url: `$${secretKeys.webhookUrl}`,
              headers: [{ name: "Content-Type", value: "application/json" }],
            }),
          }
        : {}),
    },
    recipients: [...(d.slack ? [`slack:${d.slack.channel}`] : []), ...(d.webhook ? [webhookName] : [])],
  };
}

/** The `notifications` values of the argo-rollouts chart: none when no destination is configured. */
export function rolloutsNotificationValues(d: NotificationDestinations): Values | undefined {
  if (!d.slack && !d.webhook) return undefined;
  const { secretItems, notifiers, recipients } = destinationServices(d);
  return {
    secret: { create: true, items: secretItems },
    notifiers,
    templates: Object.fromEntries(notificationTemplates.map((n) => [`template.${n}`, template(n, d)])),
    triggers: Object.fromEntries(
      Object.entries(notificationTriggers).map(([n, conditions]) => [`trigger.${n}`, yaml(conditions)]),
    ),
    subscriptions: [{ recipients, triggers: Object.keys(notificationTriggers) }],
  };
}

/** What the plan says about notifications: where they go, or that none are sent. */
export function notificationSummary(d: NotificationDestinations): string {
  const where = [
    ...(d.slack ? [`Slack channel ${d.slack.channel}`] : []),
    ...(d.webhook ? ["the webhook"] : []),
  ];
  return where.length > 0
    ? `to ${where.join(" and ")}`
    : "off, nothing is sent (no destination configured: set cluster-setup:notifySlackChannel with notifySlackToken, or notifyWebhookUrl)";
}
