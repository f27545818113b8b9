// How a stage knows its preview or update finished: the Argo Rollouts AnalysisTemplates whose Jobs poll
// Pulumi Cloud for the operation on the promoted commit (kargo/verification/verify.mjs), what each program
// stage passes them (its environment's risk policy, for a preview), and where a stop is let through.
import type * as rollouts from "../crds/generated/rollouts";
import { environmentStages, programStageName, programStages, type ProgramStage } from "./graph";
import { names } from "./names";
import { burstToleration, DO_NOT_DISRUPT } from "./stack-manifest";
import { riskPolicy, stopOnText, type Pipeline, type RiskPolicy } from "./schema";
import { jobNameEnv, verificationServiceAccount } from "./verification-access";

const seconds = (d: string) =>
  Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[d.slice(-1) as "s" | "m" | "h"];

export type AnalysisTemplateKind = keyof typeof names.analysis;

/**
 * The template verifying a stage: one for every preview and one for every update. What stops a preview
 * differs per environment, so each preview stage passes its policy as args (verificationArgs) rather than
 * naming a template of its own: one template, however many policies.
 */
export const analysisTemplateName = (s: Pick<ProgramStage, "kind">): string => names.analysis[s.kind];

/** The AnalysisTemplates the pipeline's stages use, each once. */
export function analysisTemplateKinds(p: Pipeline): AnalysisTemplateKind[] {
  const used = new Set(programStages(p).map((s) => analysisTemplateName(s)));
  return (Object.keys(names.analysis) as AnalysisTemplateKind[]).filter((k) => used.has(names.analysis[k]));
}

/** Where verification asks: a self-hosted Pulumi Cloud's API when one is named, otherwise Pulumi Cloud's. */
export const pulumiApiUrl = (p: Pipeline) => p.pulumi.selfHostedApiUrl ?? p.pulumi.apiUrl;

/** STOP_ON as the verification Job reads it: classes, comma-separated, "all", or "" (stops for nothing). */
export const stopOnValue = ({ stopOn }: RiskPolicy): string => (stopOn === "all" ? "all" : stopOn.join(","));

/**
 * The Kargo stage whose Freight approval lets a stop of this program's preview through: the program's stage
 * of its environment's update stage (check-stages.ts keeps one update stage per environment).
 */
export function approveStage(p: Pipeline, s: Pick<ProgramStage, "environment" | "program">): string {
  const update = environmentStages(p).find((u) => u.kind === "update" && u.environment === s.environment)!;
  return programStageName(update.name, s.program);
}

/**
 * Where an environment's previews stop its Freight and who decides, in a few words: "stops on loss,
 * privilege → qa-approvers", "stops on every change → prod-approvers" or "stops for nothing". The README's
 * diagram and the kargo project's outputs show it.
 */
export function stopLine(p: Pick<Pipeline, "environments">, environment: string): string {
  const policy = riskPolicy(p.environments[environment]!);
  const what = stopOnText(policy);
  return what === "nothing" ? "stops for nothing" : `stops on ${what} → ${policy.deciders.join(", ")}`;
}

/** A preview template's args that carry the environment's policy, each "" (stops for nothing) by default. */
const policyArgs = { "stop-on": "STOP_ON", deciders: "DECIDERS", "approve-stage": "APPROVE_STAGE" } as const;

/**
 * What a program stage passes its template besides the stack and commit: a preview, its environment's
 * policy. An arg whose value is "" is left out: Kargo turns an empty value into no value, and the template's
 * default ("") stands (akuity/kargo v1.11.2 pkg/rollouts/analysis_run_builder.go buildArgs, and
 * pkg/rollouts/analysis_template.go mergeArgs). None of these values holds `${{`, so Kargo passes them as
 * they are (pkg/expressions/json_templates.go EvaluateTemplate).
 */
export function policyArgValues(p: Pipeline, s: ProgramStage): { name: string; value: string }[] {
  if (s.kind !== "preview") return [];
  const policy = riskPolicy(p.environments[s.environment]!);
  const values: Record<keyof typeof policyArgs, string> = {
    "stop-on": stopOnValue(policy),
    deciders: policy.deciders.join(","),
    "approve-stage": policy.deciders.length > 0 ? approveStage(p, s) : "",
  };
  return Object.entries(values)
    .filter(([, value]) => value !== "")
    .map(([name, value]) => ({ name, value }));
}

/**
 * The modules of kargo/verification each verification Job runs, the ConfigMap's keys (where the Job mounts
 * it, each imports the others): the Job runs the first.
 */
export const verificationScripts = [
  "verify.mjs",
  "run-message.mjs",
  "cloud.mjs",
  "compare.mjs",
  "classify.mjs",
  "rules.mjs",
  "cost-rules.mjs",
  "values.mjs",
] as const;
export const verificationScriptKey = verificationScripts[0];
const scriptDir = "/verification";

/** How long a Job may take to start (image pull, scheduling) beyond the script's own timeout. */
const startSlack = 300;

/**
 * The consecutive errors (no answer, a non-2xx, a body that is not JSON or not the documented shape) after
 * which the script gives up, and the consecutive Job creation errors after which the AnalysisRun does.
 */
const errorLimit = 6;

/** The verification Job's one container, which the pod failure policy's exit-code rule names. */
export const verificationContainerName = "verify";

/**
 * The exit codes with which kargo/verification/verify.mjs gives a verdict that is not a pass (`fail`: the
 * operation failed, a protected preview would delete or replace, Pulumi Cloud gave no usable answer too many
 * times, the timeout, or its env is wrong); 0 is a pass. Node also exits 1 on an uncaught exception or a
 * missing script file, which a retry would not mend either.
 */
export const verificationVerdictExitCodes = [1];

/**
 * How many failed pods of a verification Job are retried when their failure is neither a verdict nor a
 * disruption (the OOM killer's 137, a crash): a pod that exits with a verdict fails the Job at once, and a
 * disrupted one is retried without counting.
 */
export const verificationBackoffLimit = 2;

/**
 * The Job's pod failure policy (batch/v1, GA in Kubernetes 1.31; it requires restartPolicy Never). Argo
 * Rollouts v1.9.0 reads only the Job's Complete and Failed conditions (metricproviders/job/job.go), so with
 * backoffLimit 0 an evicted, drained, preempted or OOM-killed pod failed the Job and, with count 1 and
 * failureLimit 0, the stage. The kube Job controller (kubernetes pkg/controller/job, pod_failure_policy.go
 * matchPodFailurePolicy) takes the first matching rule in order: a pod with the DisruptionTarget condition
 * (eviction, drain, preemption, node-pressure eviction) is Ignored, replaced without counting toward
 * backoffLimit, so a rerun reaches the verdict again whatever a disrupted pod exited with; a pod whose
 * `verify` container exits with a verdict code fails the Job at once (FailJob, reason PodFailurePolicy), not
 * re-asked; anything else (no rule matches) counts toward backoffLimit. activeDeadlineSeconds still bounds
 * the whole Job, retries included.
 */
const podFailurePolicy = {
  rules: [
    { action: "Ignore", onPodConditions: [{ type: "DisruptionTarget", status: "True" }] },
    {
      action: "FailJob",
      onExitCodes: {
        containerName: verificationContainerName,
        operator: "In",
        values: verificationVerdictExitCodes,
      },
    },
  ],
};

/**
 * Verification of a preview or an update: one Job per metric runs kargo/verification/verify.mjs, which
 * polls Pulumi Cloud for the operation on the stage's stack whose `git.head` is the promoted commit and ends
 * as soon as it has succeeded or failed (argo-rollouts v1.9.0 metricproviders/job/job.go: the Job's Complete
 * condition is Successful, Failed is Failed). Not a web metric: Rollouts v1.9.0 counts any 2xx body that is
 * not JSON as Successful before a condition runs (metricproviders/webmetric/webmetric.go, parseResponse). A
 * preview also fails when it would do what its environment stops on (STOP_ON), naming DECIDERS and the
 * APPROVE_STAGE that lets it through, with a link into PULUMI_CONSOLE_URL; an update fails when it did what
 * its preview of the same commit did not show.
 */
export function analysisTemplateSpec(p: Pipeline, kind: AnalysisTemplateKind): rollouts.AnalysisTemplateSpec {
  const v = p.verification;
  const operation = kind;
  const timeout = operation === "preview" ? v.previewTimeout : v.updateTimeout;
  const policyEnv = Object.entries(policyArgs).map(([arg, env]) => ({ name: env, value: `{{args.${arg}}}` }));
  const metric = (name: string) => ({
    name,
    initialDelay: v.initialDelay,
    // One Job per metric, which polls until it decides: one measurement, so Rollouts' measurement garbage
    // collection (which deletes every Job of the run beyond the limit, whatever its metric: job.go,
    // GarbageCollect) never runs.
    count: 1,
    failureLimit: 0,
    // Only the Job's creation can error (RBAC, quota); retried every 10 s (analysis.go, DefaultErrorRetryInterval).
    consecutiveErrorLimit: errorLimit,
    provider: {
      job: {
        metadata: { labels: { "app.kubernetes.io/name": "pulumi-verification" } },
        spec: {
          backoffLimit: verificationBackoffLimit,
          podFailurePolicy,
          // The bound on the whole Job, its retries included: the kube Job controller fails it past the deadline.
          activeDeadlineSeconds: seconds(timeout) + startSlack,
          ttlSecondsAfterFinished: 24 * 3600,
          template: {
            metadata: { annotations: { ...DO_NOT_DISRUPT } },
            spec: {
              restartPolicy: "Never",
              // On the base when it has room, else on a burst node (stack-manifest.ts BURST_TAINT).
              tolerations: [burstToleration],
              // Its token writes why it did not pass into its own AnalysisRun, and only that
              // (verification-access.ts); a bound token, so the API server knows which pod holds it.
              serviceAccountName: verificationServiceAccount,
              automountServiceAccountToken: true,
              enableServiceLinks: false,
              securityContext: {
                // The image's `node` user (uid 1000): runAsNonRoot cannot check a user given by name.
                runAsNonRoot: true,
                runAsUser: 1000,
                runAsGroup: 1000,
                seccompProfile: { type: "RuntimeDefault" },
              },
              containers: [
                {
                  name: verificationContainerName,
                  image: v.image,
                  command: ["node", `${scriptDir}/${verificationScriptKey}`],
                  env: [
                    { name: "PULUMI_API_URL", value: "{{args.api-url}}" },
                    { name: "PULUMI_ORGANIZATION", value: "{{args.organization}}" },
                    { name: "PULUMI_PROJECT", value: "{{args.project}}" },
                    { name: "PULUMI_STACK", value: "{{args.stack}}" },
                    { name: "COMMIT", value: "{{args.commit}}" },
                    { name: "OPERATION", value: operation },
                    { name: "PULUMI_CONSOLE_URL", value: "{{args.console-url}}" },
                    ...(operation === "preview" ? policyEnv : []),
                    { name: "INTERVAL", value: v.interval },
                    { name: "TIMEOUT", value: timeout },
                    { name: "PAGE_SIZE", value: String(v.pageSize) },
                    { name: "ERROR_LIMIT", value: String(errorLimit) },
                    jobNameEnv,
                    {
                      name: "PULUMI_ACCESS_TOKEN",
                      valueFrom: { secretKeyRef: { name: names.verificationToken, key: "accessToken" } },
                    },
                  ],
                  resources: {
                    requests: { cpu: "10m", memory: "64Mi" },
                    limits: { memory: "128Mi" },
                  },
                  securityContext: {
                    allowPrivilegeEscalation: false,
                    readOnlyRootFilesystem: true,
                    capabilities: { drop: ["ALL"] },
                  },
                  terminationMessagePolicy: "FallbackToLogsOnError",
                  volumeMounts: [{ name: "script", mountPath: scriptDir, readOnly: true }],
                },
              ],
              volumes: [{ name: "script", configMap: { name: names.verificationScript } }],
            },
          },
        },
      },
    },
  });
  return {
    args: [
      { name: "project" },
      { name: "stack" },
      { name: "commit" },
      { name: "api-url", value: pulumiApiUrl(p) },
      { name: "organization", value: p.pulumi.organization },
      { name: "console-url", value: p.pulumi.consoleUrl },
      ...(operation === "preview" ? Object.keys(policyArgs).map((name) => ({ name, value: "" })) : []),
    ],
    metrics: [metric(`pulumi-${operation}`)],
  };
}
