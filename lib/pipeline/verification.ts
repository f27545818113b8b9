// How a stage knows its preview or update finished: the Argo Rollouts AnalysisTemplates that poll Pulumi
// Cloud for the operation on the promoted commit, their expr conditions, and which template a stage uses
// (protected environments' previews also fail on deletes and replaces).
import type * as rollouts from "../crds/generated/rollouts";
import { environmentStages } from "./graph";
import { names } from "./names";
import { isProtected, type EnvironmentStage, type Pipeline } from "./schema";

const seconds = (d: string) =>
  Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[d.slice(-1) as "s" | "m" | "h"];

export type AnalysisTemplateKind = keyof typeof names.analysis;

/** The template verifying a stage: previews of protected environments also stop on deletes and replaces. */
export function analysisTemplateName(p: Pipeline, s: EnvironmentStage): string {
  if (s.kind === "update") return names.analysis.update;
  return isProtected(p.environments[s.environment]!)
    ? names.analysis.protectedPreview
    : names.analysis.preview;
}

/** The AnalysisTemplates the pipeline's stages use, each once. */
export function analysisTemplateKinds(p: Pipeline): AnalysisTemplateKind[] {
  const used = new Set(environmentStages(p).map((s) => analysisTemplateName(p, s)));
  return (Object.keys(names.analysis) as AnalysisTemplateKind[]).filter((k) => used.has(names.analysis[k]));
}

/** Where verification asks: a self-hosted Pulumi Cloud's API when one is named, otherwise Pulumi Cloud's. */
export const pulumiApiUrl = (p: Pipeline) => p.pulumi.selfHostedApiUrl ?? p.pulumi.apiUrl;

/** Operations on the stack whose result a stage waits for: what Pulumi Cloud records for each. */
export type DestructiveOperation = "delete" | "replace";
export const destructiveOperations: DestructiveOperation[] = ["delete", "replace"];

/**
 * successCondition/failureCondition of each verification metric, in the expr-lang Argo Rollouts v1.9.0 runs
 * (github.com/antonmedv/expr v1.15.5) over `result`, the whole decoded answer of Pulumi Cloud (a web metric
 * without jsonPath gets the body, argo-rollouts v1.9.0 metricproviders/webmetric/webmetric.go). The rule:
 * the newest operation (by startTime, however the list is sorted) whose `git.head` is the promoted commit
 * decides; anything else (not there yet, running, null fields, another commit) is neither, so the metric
 * keeps polling instead of erroring. `?.`, `??` and `get` make every missing or null field a miss.
 */
export function verificationConditions(
  kind: "preview" | "update",
  commit = "{{args.commit}}",
): {
  operation: { success: string; failure: string };
  destructive: Record<DestructiveOperation, { success: string; failure: string }>;
} {
  // The history lists UpdateInfo at the top level (CLI format), the previews list under `info` (service
  // format): pulumi/pulumi sdk/go/common/apitype/history.go. A preview's own kind is not "preview".
  const ours = `get(#?.environment, "git.head") == "${commit}" && #?.startTime != nil`;
  const operations =
    kind === "preview"
      ? `filter(map(result?.updates ?? [], #?.info), ${ours})`
      : `filter(result?.updates ?? [], #?.kind == "update" && ${ours})`;
  const newest = `let op = last(sortBy(${operations}, "startTime")); `;
  const succeeded = `op?.result == "succeeded"`;
  const count = (op: DestructiveOperation) => `(get(op?.resourceChanges, "${op}") ?? 0)`;
  return {
    operation: { success: newest + succeeded, failure: newest + `op?.result == "failed"` },
    destructive: Object.fromEntries(
      destructiveOperations.map((op) => [
        op,
        {
          success: `${newest}${succeeded} && ${count(op)} == 0`,
          failure: `${newest}${succeeded} && ${count(op)} > 0`,
        },
      ]),
    ) as Record<DestructiveOperation, { success: string; failure: string }>,
  };
}

/**
 * Verification of a preview or an update: poll Pulumi Cloud for the operation on the stage's stack whose
 * `git.head` is the promoted commit, and end as soon as it has succeeded or failed. A protected
 * environment's preview also fails when it would delete or replace anything: one metric per operation, so
 * the AnalysisRun's message (`Metric "no-deletes" assessed Failed ...`) says which.
 */
export function analysisTemplateSpec(p: Pipeline, kind: AnalysisTemplateKind): rollouts.AnalysisTemplateSpec {
  const v = p.verification;
  const operation = kind === "update" ? "update" : "preview";
  const count = Math.ceil(
    seconds(operation === "preview" ? v.previewTimeout : v.updateTimeout) / seconds(v.interval),
  );
  const path =
    operation === "preview"
      ? // Newest first, as the CLI asks (pulumi/pulumi pkg/backend/httpstate/client/client.go,
        // GetLatestStackPreviews); the history comes newest first ("?pageSize=1&page=1 ... the most recent
        // update", REST API docs). One page of the newest holds the commit's newest operation.
        `updates/latest/previews?asc=false&pageSize=${v.pageSize}&page=1`
      : `updates?pageSize=${v.pageSize}&page=1`;
  const conditions = verificationConditions(operation);
  const metric = (name: string, condition: { success: string; failure: string }) => ({
    name,
    initialDelay: v.initialDelay,
    interval: v.interval,
    count,
    // Not found yet or still running is neither success nor failure: keep polling until `count`.
    inconclusiveLimit: count,
    // Errors are only Pulumi Cloud being unreachable or answering non-2xx: the run ends in Error after 7 in a
    // row (it errors when the count exceeds the limit, argo-rollouts v1.9.0 analysis/analysis.go).
    consecutiveErrorLimit: 6,
    failureLimit: 0,
    consecutiveSuccessLimit: 1,
    successCondition: condition.success,
    failureCondition: condition.failure,
    provider: {
      web: {
        url: `{{args.api-url}}/api/stacks/{{args.organization}}/{{args.project}}/{{args.stack}}/${path}`,
        headers: [
          { key: "Authorization", value: "token {{args.token}}" },
          { key: "Accept", value: "application/vnd.pulumi+8" },
        ],
        timeoutSeconds: 10,
      },
    },
  });
  return {
    args: [
      { name: "stack" },
      { name: "commit" },
      { name: "api-url", value: pulumiApiUrl(p) },
      { name: "organization", value: p.pulumi.organization },
      { name: "project", value: p.pulumi.project },
      { name: "token", valueFrom: { secretKeyRef: { name: names.verificationToken, key: "accessToken" } } },
    ],
    // Each measurement stores the whole answer (no jsonPath): keep only the latest per metric, so an
    // AnalysisRun stays far below etcd's object size (argo-rollouts v1.9.0 analysis.go, garbageCollectMeasurements).
    measurementRetention: [{ metricName: ".*", limit: 1 }],
    metrics: [
      metric(`pulumi-${operation}`, conditions.operation),
      ...(kind === "protectedPreview"
        ? destructiveOperations.map((op) => metric(`no-${op}s`, conditions.destructive[op]))
        : []),
    ],
  };
}
