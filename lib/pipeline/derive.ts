// Everything Kargo, Argo CD and PKO need, derived from the one pipeline definition. Pure functions over
// plain data: the kargo program turns them into typed resources, `npm run stacks` into stacks/ files, and
// the tests read them directly.
import type * as argocd from "../crds/generated/argocd";
import type * as kargo from "../crds/generated/kargo";
import type * as pko from "../crds/generated/pko";
import type * as rollouts from "../crds/generated/rollouts";
import {
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
  analysis: { preview: "pulumi-preview", update: "pulumi-update" },
  /** In the Kargo project namespace: the git credentials Kargo pushes with, the token verification reads. */
  gitCredentials: "git-credentials",
  verificationToken: "pulumi-api-token",
  /** Workspace where a promotion clones the repository. */
  checkout: "./repo",
} as const;

/** `spec.commit` of a Stack no promotion has reached yet: no such commit exists, so PKO can never run it. */
export const NO_COMMIT = "0000000000000000000000000000000000000000";

const freightCommit = (p: Pipeline) => `\${{ commitFrom("${p.source.repoURL}").ID }}`;

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

/** Every environment stage promotes itself; a gate never does, so only an approver moves Freight into it. */
export function projectConfigSpec(p: Pipeline): kargo.ProjectConfigSpec {
  return {
    promotionPolicies: p.stages.map((s) => ({
      stageSelector: { name: s.name },
      autoPromotionEnabled: !isGate(s),
    })),
  };
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
      analysisTemplates: [{ kind: "AnalysisTemplate", name: names.analysis[s.kind] }],
      args: [
        { name: "stack", value: p.environments[s.environment]!.pulumiStack },
        { name: "commit", value: freightCommit(p) },
      ],
    },
  };
}

const seconds = (d: string) =>
  Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[d.slice(-1) as "s" | "m" | "h"];

/**
 * Verification of a preview or an update: poll Pulumi Cloud for the operation on the stage's stack whose
 * `git.head` is the promoted commit, newest first, and end as soon as it has succeeded or failed.
 */
export function analysisTemplateSpec(p: Pipeline, kind: "preview" | "update"): rollouts.AnalysisTemplateSpec {
  const v = p.verification;
  const count = Math.ceil(
    seconds(kind === "preview" ? v.previewTimeout : v.updateTimeout) / seconds(v.interval),
  );
  // The update list is the CLI format (fields at the top); previews come in the service format (under info).
  const field = (name: string) => (kind === "preview" ? `#.info.${name}` : `#.${name}`);
  const forCommit = `filter(result, {${kind === "update" ? `${field("kind")} == "update" && ` : ""}${field("environment")}["git.head"] == "{{args.commit}}"})`;
  const newestIs = (state: string) =>
    `len(${forCommit}) > 0 && ${forCommit}[0]${kind === "preview" ? ".info" : ""}.result == "${state}"`;
  const path =
    kind === "preview"
      ? `updates/latest/previews?asc=false&pageSize=${v.pageSize}&page=1`
      : `updates?pageSize=${v.pageSize}&page=1`;
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
      {
        name: `pulumi-${kind}`,
        initialDelay: v.initialDelay,
        interval: v.interval,
        count,
        // Not found yet or still running is neither success nor failure: keep polling until `count`.
        inconclusiveLimit: count,
        consecutiveErrorLimit: 6,
        failureLimit: 0,
        consecutiveSuccessLimit: 1,
        successCondition: newestIs("succeeded"),
        failureCondition: newestIs("failed"),
        provider: {
          web: {
            url: `{{args.api-url}}/api/stacks/{{args.organization}}/{{args.project}}/{{args.stack}}/${path}`,
            headers: [
              { key: "Authorization", value: "token {{args.token}}" },
              { key: "Accept", value: "application/vnd.pulumi+8" },
            ],
            jsonPath: "{$.updates}",
            timeoutSeconds: 10,
          },
        },
      },
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
/**
 * The ServiceAccount a stage's Stack runs under: the environment's own identity for an update, the read-only
 * one for a preview (cluster-setup names them `<stacks.serviceAccountName>-<environment>` and `-preview`).
 * PKO runs the workspace pod as it (pulumi-kubernetes-operator v2.9.0,
 * operator/internal/controller/pulumi/stack_controller.go), so it carries the stage's IRSA role.
 */
export function stackServiceAccount(p: Pipeline, s: EnvironmentStage): string {
  return `${p.stacks.serviceAccountName}-${s.kind === "preview" ? "preview" : s.environment}`;
}

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
    serviceAccountName: stackServiceAccount(p, s),
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
