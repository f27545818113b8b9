// Everything Kargo, Argo CD and PKO need, derived from the one pipeline definition. Pure functions over
// plain data: the kargo program turns them into typed resources, `npm run stacks` into stacks/ files, and
// the tests read them directly.
import * as path from "node:path";
import { createHash } from "node:crypto";
import type * as argocd from "../crds/generated/argocd";
import type * as kargo from "../crds/generated/kargo";
import type * as pko from "../crds/generated/pko";
import type * as rollouts from "../crds/generated/rollouts";
import {
  PipelineError,
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
  /** Where a promotion checks out the Freight's commit (read-only) and the stage's branch. */
  checkout: { freight: "./freight", stage: "./stage" },
  /** The Warehouse's GitHub webhook receiver, and the Secret holding its shared secret. */
  webhookReceiver: "github",
  webhookSecret: "github-webhook",
} as const;

/**
 * The branch holding a stage's Stack manifest: written only by that stage's promotions, tracked only by its
 * Application, so "synced to the commit I pushed" cannot be broken by a sibling stage or a commit to main.
 */
export const stageBranchPrefix = "stage/";
export const stageBranch = (stageName: string) => `${stageBranchPrefix}${stageName}`;

/** The Stack manifest's file name, in `stacks/` on main (the template) and on the stage's branch. */
export const stackManifestFile = (stageName: string) => `${stageName}.yaml`;

/** The environment's Pulumi stack config file, beside the promoted program, moved by the same Freight. */
export const stackConfigFile = (p: Pipeline, environment: string) =>
  path.posix.join(p.source.programDir, `Pulumi.${p.environments[environment]!.pulumiStack}.yaml`);

/**
 * Kargo turns an expression result that parses as a number (or bool, or JSON) into one, so an all-digit
 * commit ID would become a float; `quote()` keeps it a string (akuity/kargo v1.11.2
 * pkg/expressions/json_templates.go, EvaluateTemplate).
 */
export const quoted = (expression: string) => `\${{ quote(${expression}) }}`;

const freightCommit = (p: Pipeline) => quoted(`commitFrom("${p.source.repoURL}").ID`);

export const isGate = (s: Stage): s is GateStage => s.kind === "gate";
export const environmentStages = (p: Pipeline) => p.stages.filter((s): s is EnvironmentStage => !isGate(s));

function requestedFreight(s: Stage): kargo.StageSpec["requestedFreight"] {
  const sources: kargo.StageSpec["requestedFreight"][number]["sources"] =
    s.from === "warehouse"
      ? { direct: true }
      : { stages: upstreamOf(s), ...(s.requireAll ? { availabilityStrategy: "All" as const } : {}) };
  return [{ origin: { kind: "Warehouse", name: names.warehouse }, sources }];
}

/**
 * Every path whose change must become Freight: the program's files, each environment's stack config beside
 * it, and the Stack manifest templates. What a stage runs moves as one, through every gate. A plain entry
 * matches that path and everything under it (akuity/kargo v1.11.2 pkg/pattern/matcher.go, BaseDirMatcher).
 */
export function freightPaths(p: Pipeline): string[] {
  const configs = Object.keys(p.environments).map((env) => stackConfigFile(p, env));
  return [...new Set([...p.source.includePaths, ...configs, p.stacks.dir])];
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
          includePaths: freightPaths(p),
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

/**
 * The steps every environment stage shares, parameterised by the stage it runs for. It never writes to the
 * branch the Warehouse watches: it copies the stage's Stack manifest template from the Freight's commit to
 * the stage's own branch, pins it to that commit, pushes, and syncs the stage's Application to that push.
 */
export function promotionTaskSpec(p: Pipeline, argocdNamespace: string): kargo.PromotionTaskSpec {
  const { freight, stage } = names.checkout;
  const branch = stageBranch("${{ ctx.stage }}");
  const manifest = stackManifestFile("${{ ctx.stage }}");
  const commit = quoted("commitFrom(vars.repoURL).ID");
  // Inside longer text the result stays a string; quote() there would add literal quotation marks.
  const commitInText = "${{ commitFrom(vars.repoURL).ID }}";
  return {
    vars: [
      { name: "repoURL", value: p.source.repoURL },
      { name: "stacksDir", value: p.stacks.dir },
      { name: "argocdNamespace", value: argocdNamespace },
    ],
    steps: [
      {
        uses: "git-clone",
        config: {
          repoURL: "${{ vars.repoURL }}",
          checkout: [
            { commit, path: freight },
            // The stage's first promotion creates its branch: an orphan whose one commit is empty, so the
            // branch never holds anything of main, workflows included (akuity/kargo v1.11.2
            // pkg/promotion/runner/builtin/git_cloner.go, ensureRemoteBranch). `pulumi up` creates none.
            { branch, create: true, path: stage },
          ],
        },
      },
      // The branch holds the stage's manifest and its PIPELINE-STAGE.md, nothing else: whatever the last
      // promotion (or anyone committing there by hand) left goes.
      { uses: "git-clear", config: { path: stage } },
      {
        uses: "copy",
        config: { inPath: `${freight}/\${{ vars.stacksDir }}/${manifest}`, outPath: `${stage}/${manifest}` },
      },
      {
        uses: "yaml-update",
        config: { path: `${stage}/${manifest}`, updates: [{ key: "spec.commit", value: commit }] },
      },
      {
        uses: "file-write",
        config: {
          path: `${stage}/${stageBranchFile}`,
          contents: stageBranchReadme("${{ ctx.stage }}", commitInText),
          overwrite: true,
        },
      },
      {
        uses: "git-commit",
        config: { path: stage, message: `Promote \${{ ctx.stage }} to ${commitInText}` },
      },
      // One writer per branch: no sibling stage pushes here.
      { uses: "git-push", as: "push", config: { path: stage, targetBranch: branch } },
      {
        uses: "argocd-update",
        // Sync now instead of waiting for Argo CD's polling, and wait for exactly the pushed revision.
        config: {
          apps: [
            {
              name: "${{ ctx.project }}-${{ ctx.stage }}",
              namespace: "${{ vars.argocdNamespace }}",
              sources: [
                { repoURL: "${{ vars.repoURL }}", desiredRevision: quoted("task.outputs.push.commit") },
              ],
            },
          ],
        },
      },
    ],
  };
}

/** The stage branch's PIPELINE-STAGE.md, rewritten by every promotion beside the stage's manifest. */
export function stageBranchReadme(stageName: string, commit: string): string {
  return [
    `# Pipeline stage ${stageName}`,
    "",
    "Written only by Kargo promotions; its Argo CD Application tracks this branch. Do not commit here.",
    `${stackManifestFile(stageName)} runs the promoted program at commit ${commit}.`,
    "",
  ].join("\n");
}

/** The Freight metadata key holding the approvals of a gate, each the approver's Kargo actor. */
export const approvalKey = (gate: string) => `approved-by-${gate}`;

const approvalsAppended = (key: string) =>
  "${{ concat((let prev = freightMetadata(ctx.targetFreight.name)?.[" +
  JSON.stringify(key) +
  ']; type(prev) == "array" ? prev : prev == nil ? [] : [prev]), [ctx.meta.promotion.actor]) }}';

export function stageSpec(p: Pipeline, s: Stage): kargo.StageSpec {
  if (isGate(s)) {
    return {
      requestedFreight: requestedFreight(s),
      // Records on the Freight who let it through this gate: every approval, in order. set-metadata replaces
      // a key's value (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/metadata_setter.go), so the step
      // appends to what freightMetadata() reads there; a value from before this was a list becomes its first.
      promotionTemplate: {
        spec: {
          steps: [
            {
              uses: "set-metadata",
              config: {
                updates: [
                  {
                    kind: "Freight",
                    // Freight names are hex digests: one of digits only would become a number unquoted.
                    name: quoted("ctx.targetFreight.name"),
                    values: { [approvalKey(s.name)]: approvalsAppended(approvalKey(s.name)) },
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

export interface ApproverRole {
  gate: string;
  serviceAccount: { name: string; annotations: Record<string, string> };
  rules: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
}

/** A project ServiceAccount Kargo maps every member of `groups` (the `cognito:groups` claim) onto. */
const claimMappedAccount = (name: string, groups: string[]) => ({
  name,
  annotations: { "rbac.kargo.akuity.io/claims": JSON.stringify({ "cognito:groups": groups }) },
});

/** Kargo's custom verb for promoting into (and approving Freight for) one Stage. */
const promoteOn = (stage: string) => ({
  apiGroups: ["kargo.akuity.io"],
  resources: ["stages"],
  resourceNames: [stage],
  verbs: ["promote"],
});

/**
 * Per gate: a ServiceAccount Kargo maps the gate's Cognito groups to, with exactly what promoting into the
 * gate through Kargo's API takes. The API checks `promote` on the Stage, then creates the Promotion with a
 * client authorized as the user, which needs `create` on promotions (akuity/kargo v1.11.2
 * pkg/server/promote_to_stage_v1alpha1.go, pkg/server/kubernetes/client.go). `create` cannot be limited
 * to one Stage (RBAC has no resourceNames on create), see the README. No `patch freights/status`: approving
 * Freight (`kargo approve`) lets it skip the upstream stages' verification, so only admins may.
 */
export function approverRoles(p: Pipeline): ApproverRole[] {
  return p.stages.filter(isGate).map((gate) => ({
    gate: gate.name,
    serviceAccount: claimMappedAccount(`approver-${gate.name}`, gate.approvers),
    rules: [
      promoteOn(gate.name),
      { apiGroups: ["kargo.akuity.io"], resources: ["promotions"], verbs: ["create"] },
    ],
  }));
}

/**
 * Every approver group, of gates and of destructive changes: Kargo's `api.oidc.users`, so approvers get the
 * cluster-level read (`kargo-user`: list projects) that opening a project in the UI or CLI takes.
 */
export const approverGroups = (p: Pipeline): string[] =>
  [
    ...new Set([
      ...p.stages.filter(isGate).flatMap((g) => g.approvers),
      ...Object.values(p.environments).flatMap((env) => env.destructiveChangeApprovers),
    ]),
  ].sort();

/** The GitHub repository of an HTTPS URL, for creating the stage branches. */
export function githubRepository(repoURL: string): { owner: string; name: string } {
  const match = /^https:\/\/github\.com\/([\w.-]+)\/([\w.-]+?)(\.git)?\/?$/.exec(repoURL);
  if (!match) {
    throw new PipelineError([
      `source.repoURL: "${repoURL}" is not a GitHub repository (https://github.com/<owner>/<name>.git); the kargo project creates each stage's branch through GitHub's API`,
    ]);
  }
  return { owner: match[1]!, name: match[2]! };
}

/** The file every promotion writes beside the stage's manifest, saying what the branch is. */
export const stageBranchFile = "PIPELINE-STAGE.md";

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
        serviceAccount: claimMappedAccount(
          `destructive-approver-${update.name}`,
          env.destructiveChangeApprovers,
        ),
        rules: [
          promoteOn(update.name),
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
    // The stage's own branch, which its first promotion creates: until then Argo CD reports the Application
    // as a ComparisonError with sync status Unknown (argo-cd v3.4.4 controller/state.go) and deploys nothing.
    source: {
      repoURL: p.source.repoURL,
      targetRevision: stageBranch(s.name),
      path: ".",
      directory: { include: stackManifestFile(s.name) },
    },
    destination: { server: "https://kubernetes.default.svc", namespace: p.stacks.namespace },
    // No automated sync and no pruning: only a promotion (Kargo's argocd-update step) syncs a stage.
  };
}

/**
 * The ServiceAccount a stage's Stack runs under: the environment's own identity for an update, the read-only
 * one for a preview (cluster-setup names them `<stacks.serviceAccountName>-<environment>` and `-preview`).
 * PKO runs the workspace pod as it (pulumi-kubernetes-operator v2.9.0,
 * operator/internal/controller/pulumi/stack_controller.go), so it carries the stage's IRSA role.
 */
export function stackServiceAccount(p: Pipeline, s: EnvironmentStage): string {
  return `${p.stacks.serviceAccountName}-${s.kind === "preview" ? "preview" : s.environment}`;
}

/**
 * The PKO Stack manifest template of an environment stage, committed to `stacks/<stage>.yaml` on main. A
 * promotion copies it from the Freight's commit to the stage's branch and sets `spec.commit` there.
 */
export function stackManifest(p: Pipeline, s: EnvironmentStage) {
  const env = p.environments[s.environment]!;
  const spec: pko.StackSpec = {
    stack: `${p.pulumi.organization}/${p.pulumi.project}/${env.pulumiStack}`,
    projectRepo: p.source.repoURL,
    repoDir: p.source.programDir,
    // The scalar the promotion's yaml-update replaces: Kargo's yaml-update only rewrites a key that exists, a
    // missing one fails the promotion (akuity/kargo v1.11.2 pkg/yaml/yaml.go, findScalarNode). Empty, PKO
    // refuses to run the template as it stands (pulumi-kubernetes-operator v2.9.0
    // operator/internal/controller/pulumi/git.go: `missing "commit" or "branch"`).
    commit: "",
    gitAuth: {
      accessToken: { type: "Secret", secret: { name: p.stacks.gitCredentialsSecret, key: "accessToken" } },
    },
    serviceAccountName: stackServiceAccount(p, s),
    envRefs: {
      PULUMI_ACCESS_TOKEN: {
        type: "Secret",
        secret: { name: p.stacks.accessTokenSecret, key: "accessToken" },
      },
    },
    // Config comes from Pulumi.<stack>.yaml at the promoted commit, never from here.
    // Previews refresh like their update does (PKO passes `refresh` to preview too: v2.9.0
    // agent/pkg/server/server.go), so a preview shows what the update will do. They share the update
    // stage's Pulumi stack and must never destroy it.
    refresh: true,
    ...(s.kind === "preview"
      ? { preview: true, destroyOnFinalize: false }
      : { destroyOnFinalize: env.ephemeral }),
    // After a successful run the workspace pod goes; a failed one stays for its logs (v2.9.0
    // operator/internal/controller/pulumi/stack_controller.go).
    workspaceReclaimPolicy: "Delete",
    workspaceTemplate: {
      spec: {
        image: p.stacks.workspaceImage,
        securityProfile: "restricted",
        // PKO's agent caps its own memory at the request (v2.9.0 workspace_controller.go AGENT_MEMLIMIT).
        resources: p.stacks.workspaceResources,
        // The restricted profile runs as uid 1000 (PKO v2.9.0 workspace_controller.go), which has no home
        // directory in pulumi-base; the shared volume is writable. pulumi-base has no -nonroot variant (only
        // the ~2 GB pulumi/pulumi has, pulumi/pulumi-docker-containers docker/pulumi/Dockerfile), so this is
        // what lets the ~200 MB image run non-root. Plugins land there too and go with the pod.
        env: [{ name: "PULUMI_HOME", value: "/share/.pulumi" }],
      },
    },
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
