// A stage that fails before its verification, told through Argo CD's notifications (the controller the
// argo-cd chart ships, argoproj/notifications-engine): the sync of the stage's Application fails, or the
// Stack it applies goes Degraded (stack-health.lua). Argo Rollouts' notifications (notifications.ts) only
// see verifications, which never start then. Same destinations, same secrets: destinationServices. The
// Applications carry their stage's facts (lib/pipeline/notify.ts applicationNotice) and subscribe by
// annotation to these triggers, only when a destination is configured (argoCdSubscriptions, which the
// kargo project reads from this stack's outputs).
import type { Values } from "../../lib/helmAddon";
import { notifyKeys } from "../../lib/pipeline/notify";
import {
  destinationServices,
  slackText as s,
  webhookName,
  yaml,
  type NotificationDestinations,
} from "./notifications";

/** The messages, by template name. */
export const argoCdTemplates = ["stage-sync-failed", "stage-degraded"] as const;
type TemplateName = (typeof argoCdTemplates)[number];

/** Kargo names the Promotion behind each sync it starts (akuity/kargo v1.11.2 argocd_updater.go, promotionInfoKey). */
export const promotionInfoKey = "kargo.akuity.io/promotion";

const annotation = (key: string) => `app.metadata.annotations?.[${JSON.stringify(key)}]`;
const ours = `${annotation(notifyKeys.stage)} != nil`;

/**
 * Triggers by name. The object is `app` (argo-cd v3.4.4 util/notification/settings/settings.go initGetVars);
 * only Applications with a stage's facts match. Conditions as Argo CD's catalog has them
 * (notifications_catalog/triggers/on-sync-failed.yaml, on-health-degraded.yaml); once per sync operation
 * (each promotion starts one), once per synced revision for health.
 */
export const argoCdTriggers: Record<string, { when: string; oncePer: string; send: TemplateName[] }[]> = {
  "on-stage-sync-failed": [
    {
      when: `${ours} && app.status.operationState != nil && app.status.operationState.phase in ["Error", "Failed"]`,
      oncePer: "app.status.operationState?.startedAt",
      send: ["stage-sync-failed"],
    },
  ],
  "on-stage-degraded": [
    {
      when: `${ours} && app.status.health?.status == "Degraded"`,
      oncePer: "app.status.sync?.revision",
      send: ["stage-degraded"],
    },
  ],
};

const get = (key: string) => `(index $a ${JSON.stringify(key)} | default "")`;
/**
 * What every template reads first: the stage's facts; the commit Argo CD synced (the sync result's, else the
 * operation's, else the Application's: the stage branch commit the promotion pushed, whose record names the
 * Freight's commit); the Promotion that started the sync; the reason (the operation's message and each
 * resource's that failed to sync, or each Degraded resource's health message).
 */
const prelude = [
  "{{- $a := .app.metadata.annotations | default dict -}}",
  `{{- $stage := ${get(notifyKeys.stage)} -}}`,
  `{{- $program := ${get(notifyKeys.program)} -}}`,
  `{{- $environment := ${get(notifyKeys.environment)} -}}`,
  `{{- $kargo := ${get(notifyKeys.kargoProjectUrl)} -}}`,
  `{{- $stack := ${get(notifyKeys.stackUrl)} -}}`,
  '{{- $commit := "" -}}{{- $promotion := "" -}}{{- $reason := "" -}}{{- $by := "" -}}{{- $drift := false -}}',
  '{{- with .app.status -}}{{- with .sync -}}{{- $commit = .revision | default "" -}}{{- end -}}{{- end -}}',
  "{{- with .app.status -}}{{- with .operationState -}}",
  '{{- $reason = .message | default "" -}}',
  "{{- with .operation -}}{{- with .sync -}}{{- with .revision -}}{{- $commit = . -}}{{- end -}}{{- end -}}",
  `{{- range .info -}}{{- if eq .name ${JSON.stringify(promotionInfoKey)} -}}{{- $promotion = .value -}}{{- end -}}{{- end -}}`,
  '{{- with .initiatedBy -}}{{- $by = .username | default "" -}}{{- end -}}{{- end -}}',
  "{{- with .syncResult -}}{{- with .revision -}}{{- $commit = . -}}{{- end -}}",
  '{{- range .resources -}}{{- if or (eq (.status | default "") "SyncFailed") (eq (.hookPhase | default "") "Failed" "Error") -}}{{- $reason = printf "%s %s/%s: %s" $reason .kind .name (.message | default "") | trim -}}{{- end -}}{{- end -}}{{- end -}}',
  "{{- end -}}{{- end -}}",
  '{{- $stageUrl := printf "%s/stage/%s" $kargo $stage -}}',
  '{{- $promotionUrl := "" -}}{{- if $promotion -}}{{- $promotionUrl = printf "%s/promotion/%s" $kargo $promotion -}}{{- end -}}',
].join("\n");

/**
 * A Degraded Stack's reason: each Degraded resource's health message (stack-health.lua's: PKO's condition
 * and last error), which Argo CD keeps in the Application's status only with controller.resource.health.persist.
 */
const degradedReason = [
  '{{- $reason = "" -}}',
  '{{- with .app.status -}}{{- range .resources -}}{{- with .health -}}{{- if eq (.status | default "") "Degraded" -}}',
  '{{- $reason = printf "%s %s" $reason (.message | default "Degraded") | trim -}}',
  // A drift check's (stack-health.lua starts its message so): resources changed outside Pulumi.
  '{{- if hasPrefix "drift: " (.message | default "") -}}{{- $drift = true -}}{{- end -}}',
  "{{- end -}}{{- end -}}{{- end -}}{{- end -}}",
].join("\n");

const texts: Record<TemplateName, { slack: string; extra?: string }> = {
  "stage-sync-failed": {
    slack: `:x: ${s("$program")} in ${s("$environment")}: Argo CD could not sync stage ${s("$stage")} to its branch commit ${s("$commit")}, so nothing ran and no verification will: ${s("$reason")}\nPromotion: ${s("$promotionUrl")} Stage: ${s("$stageUrl")} Pulumi: ${s("$stack")}`,
  },
  "stage-degraded": {
    extra: degradedReason,
    // Drift (lib/pipeline/drift.ts) is said as drift, with the command that brings it back.
    slack:
      `{{- if $drift -}}:warning: ${s("$program")} in ${s("$environment")}: drift. Stage ${s("$stage")}'s drift check found its stack changed outside Pulumi since branch commit ${s("$commit")}: ${s("$reason")}\nBring it back, through the preview stop: npm run rollback -- ${s("$environment")} --reconcile\nStage: ${s("$stageUrl")} Pulumi: ${s("$stack")}` +
      `{{- else -}}:rotating_light: ${s("$program")} in ${s("$environment")}: the Stack of stage ${s("$stage")} at branch commit ${s("$commit")} is Degraded (the Pulumi Kubernetes Operator stopped retrying): ${s("$reason")}\nPromotion: ${s("$promotionUrl")} Stage: ${s("$stageUrl")} Pulumi: ${s("$stack")}{{- end -}}`,
  },
};

/** The webhook's JSON fields, each value JSON-encoded by toJson. */
const fields = [
  "stage",
  "program",
  "environment",
  "commit",
  "reason",
  "promotion",
  "promotionUrl",
  "stageUrl",
  "stack",
  "drift",
];

function template(name: TemplateName): string {
  const t = texts[name];
  const head = [prelude, ...(t.extra ? [t.extra] : [])].join("\n");
  const body = fields.map((f) => `${JSON.stringify(f)} $${f}`).join(" ");
  return yaml({
    message: `${head}\n${t.slack}`,
    webhook: {
      [webhookName]: {
        method: "POST",
        body: `${head}\n{{ dict "event" ${JSON.stringify(name)} ${body} | toJson }}`,
      },
    },
  });
}

/**
 * The argo-cd chart's `notifications` values (argo-helm argo-cd-10.1.1 templates/argocd-configs/
 * argocd-notifications-cm.yaml, -secret.yaml): the controller stays off when no destination is configured.
 */
export function argoCdNotificationValues(d: NotificationDestinations): Values {
  if (!d.slack && !d.webhook) return { enabled: false };
  const { secretItems, notifiers } = destinationServices(d);
  return {
    enabled: true,
    resources: { requests: { cpu: "10m", memory: "48Mi" } },
    secret: { create: true, items: secretItems },
    notifiers,
    templates: Object.fromEntries(argoCdTemplates.map((n) => [`template.${n}`, template(n)])),
    triggers: Object.fromEntries(
      Object.entries(argoCdTriggers).map(([n, conditions]) => [`trigger.${n}`, yaml(conditions)]),
    ),
  };
}

/**
 * The annotations that subscribe an Application to every trigger above, at every configured destination
 * (notifications-engine pkg/subscriptions/annotations.go: `notifications.argoproj.io/subscribe.<trigger>.
 * <service>: <recipients>`, empty for a webhook). None without a destination.
 */
export function argoCdSubscriptions(d: NotificationDestinations): Record<string, string> {
  const services = [
    ...(d.slack ? [["slack", d.slack.channel]] : []),
    ...(d.webhook ? [[webhookName, ""]] : []),
  ];
  return Object.fromEntries(
    Object.keys(argoCdTriggers).flatMap((trigger) =>
      services.map(([service, recipient]) => [
        `notifications.argoproj.io/subscribe.${trigger}.${service}`,
        recipient,
      ]),
    ),
  );
}
