// Everything Kargo, Argo CD and PKO need, derived from the one pipeline definition. Pure functions over
// plain data: the kargo program turns them into typed resources, `npm run stacks` into stacks/ files, and
// the tests read them directly.
import { createHash } from "node:crypto";
import type * as argocd from "../crds/generated/argocd";
import type * as kargo from "../crds/generated/kargo";
import type * as pko from "../crds/generated/pko";
import type * as rollouts from "../crds/generated/rollouts";
import {
  isProtected,
  stackObjectName,
  upstreamOf,
  type EnvironmentStage,
  type GateStage,
  type Pipeline,
  type Stage,
} from "./model";

/** Names of the objects every pipeline has exactly one of. */
export const names = {
  warehouse: "program",
  promotionTask: "promote-stack",
  analysis: {
    preview: "pulumi-preview",
    protectedPreview: "pulumi-preview-protected",
    update: "pulumi-update",
  },
  /** In the Kargo project namespace: the git credentials Kargo pushes with, the token verification reads. */
  gitCredentials: "git-credentials",
  verificationToken: "pulumi-api-token",
  /** The Warehouse's GitHub webhook receiver, and the Secret holding its shared secret. */
  webhookReceiver: "github",
  webhookSecret: "github-webhook",
  /** Workspace where a promotion clones the repository. */
  checkout: "./repo",
} as const;

/** `spec.commit` of a Stack no promotion has reached yet: no such commit exists, so PKO can never run it. */
export const NO_COMMIT = "0000000000000000000000000000000000000000";

// Kargo turns an expression result that parses as a number into a number, and an AnalysisRun arg must be a
// string: quote() keeps an all-digit commit ID a string (akuity/kargo v1.11.2 pkg/expressions/json_templates.go).
const freightCommit = (p: Pipeline) => `\${{ quote(commitFrom("${p.source.repoURL}").ID) }}`;

export const isGate = (s: Stage): s is GateStage => s.kind === "gate";
export const environmentStages = (p: Pipeline) => p.stages.filter((s): s is EnvironmentStage => !isGate(s));

function requestedFreight(s: Stage): kargo.StageSpec["requestedFreight"] {
  const sources: kargo.StageSpec["requestedFreight"][number]["sources"] =
    s.from === "warehouse"
      ? { direct: true }
      : { stages: upstreamOf(s), ...(s.requireAll ? { availabilityStrategy: "All" as const } : {}) };
  return [{ origin: { kind: "Warehouse", name: names.warehouse }, sources }];
}

export function warehouseSpec(p: Pipeline): kargo.WarehouseSpec {
  return {
    interval: "5m0s",
    freightCreationPolicy: "Automatic",
    subscriptions: [
      {
        git: {
          repoURL: p.source.repoURL,
          branch: p.source.branch,
          commitSelectionStrategy: "NewestFromBranch",
          includePaths: p.source.includePaths,
          ...(p.source.excludePaths.length ? { excludePaths: p.source.excludePaths } : {}),
        },
      },
    ],
  };
}

/**
 * Every environment stage promotes itself; a gate never does, so only an approver moves Freight into it. A
 * GitHub push webhook makes the Warehouse look for Freight at once (its polling stays as the fallback).
 */
export function projectConfigSpec(p: Pipeline): kargo.ProjectConfigSpec {
  return {
    promotionPolicies: p.stages.map((s) => ({
      stageSelector: { name: s.name },
      autoPromotionEnabled: !isGate(s),
    })),
    webhookReceivers: [{ name: names.webhookReceiver, github: { secretRef: { name: names.webhookSecret } } }],
    stageLinks: stageLinks(p),
    freightLinks: freightLinks(p),
  };
}

/**
 * In the Kargo UI, each environment's preview and update stages link to its stack in Pulumi Cloud. Kargo
 * evaluates `if` with expr-lang and `url` as a Go text/template, both over `{stage: <the Stage>}`
 * (akuity/kargo v1.11.2 pkg/deeplinks/deeplinks.go).
 */
export function stageLinks(p: Pipeline): kargo.ProjectConfigSpec["stageLinks"] {
  return Object.entries(p.environments).flatMap(([environment, env]) => {
    const stages = environmentStages(p).filter((s) => s.environment === environment);
    if (stages.length === 0) return [];
    return [
      {
        title: `Pulumi stack ${env.pulumiStack}`,
        description: `Previews and updates of ${p.pulumi.organization}/${p.pulumi.project}/${env.pulumiStack} in Pulumi Cloud`,
        url: `${p.pulumi.consoleUrl}/${p.pulumi.organization}/${p.pulumi.project}/${env.pulumiStack}`,
        if: `stage.metadata.name in [${stages.map((s) => JSON.stringify(s.name)).join(", ")}]`,
      },
    ];
  });
}

/** Freight links to its commit, on the repository's web page (`/commit/<id>`, as GitHub serves it). */
export function freightLinks(p: Pipeline): kargo.ProjectConfigSpec["freightLinks"] {
  const web = p.source.repoURL.replace(/\.git$/, "");
  return [
    {
      title: "Commit",
      description: "The promoted program at this Freight's commit",
      url: `${web}/commit/{{ (index .freight.commits 0).id }}`,
      if: "freight.commits != nil && len(freight.commits) > 0",
    },
  ];
}

/**
 * The path Kargo's external webhooks server serves a project's GitHub receiver at: `/github/` and the
 * SHA-256 of project, receiver name and secret (akuity/kargo v1.11.2 pkg/webhook/external/receiver.go).
 */
export function githubWebhookPath(p: Pipeline, secret: string): string {
  const hash = createHash("sha256")
    .update(p.project + names.webhookReceiver + secret)
    .digest("hex");
  return `/github/${hash}`;
}

/** Owner and name of the pipeline's repository when it is on github.com (where a webhook can be registered). */
export function githubRepository(p: Pipeline): { owner: string; name: string } | undefined {
  const match = /^https:\/\/github\.com\/([^/]+)\/([^/]+?)(\.git)?\/?$/.exec(p.source.repoURL);
  return match ? { owner: match[1]!, name: match[2]! } : undefined;
}

/** The steps every environment stage shares, parameterised by the stage it runs for. */
export function promotionTaskSpec(p: Pipeline, argocdNamespace: string): kargo.PromotionTaskSpec {
  return {
    vars: [
      { name: "repoURL", value: p.source.repoURL },
      { name: "branch", value: p.source.branch },
      { name: "stacksDir", value: p.stacks.dir },
      { name: "argocdNamespace", value: argocdNamespace },
    ],
    steps: [
      {
        uses: "git-clone",
        config: {
          repoURL: "${{ vars.repoURL }}",
          checkout: [{ branch: "${{ vars.branch }}", path: names.checkout }],
        },
      },
      {
        uses: "yaml-update",
        config: {
          path: `${names.checkout}/\${{ vars.stacksDir }}/\${{ ctx.stage }}.yaml`,
          updates: [{ key: "spec.commit", value: "${{ commitFrom(vars.repoURL).ID }}" }],
        },
      },
      {
        uses: "git-commit",
        config: {
          path: names.checkout,
          message: "Promote ${{ ctx.stage }} to ${{ commitFrom(vars.repoURL).ID }}",
        },
      },
      {
        uses: "git-push",
        as: "push",
        // Sibling stages push to the same branch at the same time; retry on a moved branch.
        config: { path: names.checkout, targetBranch: "${{ vars.branch }}", maxAttempts: 10 },
      },
      {
        uses: "argocd-update",
        // Sync now instead of waiting for Argo CD's polling, and wait for exactly the pushed revision.
        config: {
          apps: [
            {
              name: "${{ ctx.project }}-${{ ctx.stage }}",
              namespace: "${{ vars.argocdNamespace }}",
              sources: [
                { repoURL: "${{ vars.repoURL }}", desiredRevision: "${{ task.outputs.push.commit }}" },
              ],
            },
          ],
        },
      },
    ],
  };
}

export function stageSpec(p: Pipeline, s: Stage): kargo.StageSpec {
  if (isGate(s)) {
    return {
      requestedFreight: requestedFreight(s),
      // Records on the Freight who let it through this gate.
      promotionTemplate: {
        spec: {
          steps: [
            {
              uses: "set-metadata",
              config: {
                updates: [
                  {
                    kind: "Freight",
                    name: "${{ ctx.targetFreight.name }}",
                    values: { [`approved-by-${s.name}`]: "${{ ctx.meta.promotion.actor }}" },
                  },
                ],
              },
            },
          ],
        },
      },
    };
  }
  return {
    requestedFreight: requestedFreight(s),
    promotionTemplate: { spec: { steps: [{ task: { kind: "PromotionTask", name: names.promotionTask } }] } },
    verification: {
      analysisTemplates: [{ kind: "AnalysisTemplate", name: analysisTemplateName(p, s) }],
      args: [
        { name: "stack", value: p.environments[s.environment]!.pulumiStack },
        { name: "commit", value: freightCommit(p) },
      ],
    },
  };
}

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

/** Operations on the stack whose result a stage waits for: what Pulumi Cloud records for each. */
export type DestructiveOperation = "delete" | "replace";
export const destructiveOperations: DestructiveOperation[] = ["delete", "replace"];

/**
 * successCondition/failureCondition of each verification metric, in expr-lang over `result`, the whole
 * decoded answer of Pulumi Cloud (a web metric without jsonPath gets the body, argo-rollouts v1.9.0
 * metricproviders/webmetric/webmetric.go). The rule: the newest operation of the template's kind whose
 * `git.head` is the promoted commit decides; anything else (not there yet, running, null fields, another
 * commit) is neither, so the metric keeps polling instead of erroring. Only the subset expr 1.8.9 and 1.15.5
 * share: no `?.`, `??`, `find` or `get`, and every field is checked for nil before it is read.
 */
export function verificationConditions(
  kind: "preview" | "update",
  commit = "{{args.commit}}",
): {
  operation: { success: string; failure: string };
  destructive: Record<DestructiveOperation, { success: string; failure: string }>;
} {
  // The updates list comes in the CLI format (UpdateInfo fields at the top); previews in the service format
  // (under `info`), pulumi/pulumi sdk/go/common/apitype/history.go.
  const info = kind === "preview" ? "#.info" : "#";
  const matches = [
    "# != nil",
    ...(kind === "preview" ? ["#.info != nil"] : [`#.kind == "update"`]),
    `${info}.environment != nil`,
    `${info}.environment["git.head"] == "${commit}"`,
  ].join(" && ");
  const forCommit = `filter(result.updates, {${matches}})`;
  const newest = `${forCommit}[0]${kind === "preview" ? ".info" : ""}`;
  const found = `result != nil && result.updates != nil && len(${forCommit}) > 0`;
  const succeeded = `${found} && ${newest}.result == "succeeded"`;
  const changes = `${newest}.resourceChanges`;
  const wouldDo = (op: DestructiveOperation) =>
    `${changes} != nil && ${changes}["${op}"] != nil && ${changes}["${op}"] > 0`;
  return {
    operation: { success: succeeded, failure: `${found} && ${newest}.result == "failed"` },
    destructive: Object.fromEntries(
      destructiveOperations.map((op) => [
        op,
        { success: `${succeeded} && !(${wouldDo(op)})`, failure: `${succeeded} && ${wouldDo(op)}` },
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
      ? `updates/latest/previews?asc=false&pageSize=${v.pageSize}&page=1`
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
      { name: "api-url", value: p.pulumi.apiUrl },
      { name: "organization", value: p.pulumi.organization },
      { name: "project", value: p.pulumi.project },
      { name: "token", valueFrom: { secretKeyRef: { name: names.verificationToken, key: "accessToken" } } },
    ],
    metrics: [
      metric(`pulumi-${operation}`, conditions.operation),
      ...(kind === "protectedPreview"
        ? destructiveOperations.map((op) => metric(`no-${op}s`, conditions.destructive[op]))
        : []),
    ],
  };
}

export interface ApproverRole {
  gate: string;
  serviceAccount: { name: string; annotations: Record<string, string> };
  /** Promote into exactly this gate. */
  rules: { apiGroups: string[]; resources: string[]; resourceNames: string[]; verbs: string[] }[];
}

/** Per gate: a ServiceAccount Kargo maps the gate's Cognito groups to, allowed to promote into that gate only. */
export function approverRoles(p: Pipeline): ApproverRole[] {
  return p.stages.filter(isGate).map((gate) => ({
    gate: gate.name,
    serviceAccount: {
      name: `approver-${gate.name}`,
      annotations: { "rbac.kargo.akuity.io/claims": JSON.stringify({ "cognito:groups": gate.approvers }) },
    },
    rules: [
      {
        apiGroups: ["kargo.akuity.io"],
        resources: ["stages"],
        resourceNames: [gate.name],
        verbs: ["promote"],
      },
    ],
  }));
}

export interface DestructiveChangeApproverRole {
  environment: string;
  /** The update stage whose Freight they may approve. */
  stage: string;
  serviceAccount: { name: string; annotations: Record<string, string> };
  rules: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
}

/**
 * Per protected environment: a ServiceAccount Kargo maps the destructive-change approver groups to, with
 * exactly what Kargo's manual approval of Freight for the environment's update stage checks
 * (akuity/kargo v1.11.2 pkg/server/approve_freight_v1alpha1.go): `promote` on that Stage, and `patch` on
 * `freights/status`, which the API server writes as the user (pkg/server/kubernetes/client.go). Freight names
 * are generated, so the second cannot name them; Kargo's API reaches it only through an approval, which
 * checks the first. No `create` on `promotions`: they approve, the update stage's auto-promotion promotes.
 */
export function destructiveChangeApproverRoles(p: Pipeline): DestructiveChangeApproverRole[] {
  return Object.entries(p.environments).flatMap(([environment, env]) => {
    const update = environmentStages(p).find((s) => s.kind === "update" && s.environment === environment);
    if (!update || !isProtected(env) || env.destructiveChangeApprovers.length === 0) return [];
    return [
      {
        environment,
        stage: update.name,
        serviceAccount: {
          name: `destructive-approver-${update.name}`,
          annotations: {
            "rbac.kargo.akuity.io/claims": JSON.stringify({
              "cognito:groups": env.destructiveChangeApprovers,
            }),
          },
        },
        rules: [
          {
            apiGroups: ["kargo.akuity.io"],
            resources: ["stages"],
            resourceNames: [update.name],
            verbs: ["promote"],
          },
          { apiGroups: ["kargo.akuity.io"], resources: ["freights/status"], verbs: ["patch"] },
        ],
      },
    ];
  });
}

export function applicationSpec(
  p: Pipeline,
  s: EnvironmentStage,
  deploy: { argocdProject: string },
): argocd.ApplicationSpec {
  return {
    project: deploy.argocdProject,
    source: {
      repoURL: p.source.repoURL,
      targetRevision: p.source.branch,
      path: p.stacks.dir,
      directory: { include: `${s.name}.yaml` },
    },
    destination: { server: "https://kubernetes.default.svc", namespace: p.stacks.namespace },
    // No automated sync and no pruning: only a promotion (Kargo's argocd-update step) syncs a stage.
  };
}

/** The PKO Stack manifest of an environment stage, as committed to `stacks/<stage>.yaml`. */
export function stackManifest(p: Pipeline, s: EnvironmentStage, commit: string) {
  const env = p.environments[s.environment]!;
  const spec: pko.StackSpec = {
    stack: `${p.pulumi.organization}/${p.pulumi.project}/${env.pulumiStack}`,
    projectRepo: p.source.repoURL,
    repoDir: p.source.programDir,
    commit,
    gitAuth: {
      accessToken: { type: "Secret", secret: { name: p.stacks.gitCredentialsSecret, key: "accessToken" } },
    },
    serviceAccountName: p.stacks.serviceAccountName,
    envRefs: {
      PULUMI_ACCESS_TOKEN: {
        type: "Secret",
        secret: { name: p.stacks.accessTokenSecret, key: "accessToken" },
      },
    },
    config: env.config,
    // Previews share the update stage's Pulumi stack and must never destroy it.
    ...(s.kind === "preview"
      ? { preview: true, destroyOnFinalize: false }
      : { refresh: true, destroyOnFinalize: env.ephemeral }),
    workspaceTemplate: { spec: { image: p.stacks.workspaceImage, securityProfile: "restricted" } },
  };
  return {
    apiVersion: "pulumi.com/v1",
    kind: "Stack",
    metadata: {
      name: stackObjectName(p, s.name),
      namespace: p.stacks.namespace,
      labels: { "app.kubernetes.io/part-of": p.project, "app.kubernetes.io/instance": s.name },
      // Argo CD never deletes a Stack (which could run a destroy): not when pruning, not with its Application.
      annotations: { "argocd.argoproj.io/sync-options": "Prune=false,Delete=false" },
    },
    spec,
  };
}
