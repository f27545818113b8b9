// The Kargo objects that move Freight: the Warehouse and what becomes Freight, the ProjectConfig (auto-promotion,
// webhook, UI links), each Stage, and the PromotionTask every program stage runs to push its Stack
// manifest to its own branch. Pure functions over the definition; the kargo program registers them.
import { createHash } from "node:crypto";
import type * as kargo from "../crds/generated/kargo";
import { isProgramStage, programStages, runStages, upstreamOf, type RunStage } from "./graph";
import {
  driftManifestFile,
  hasDriftCheck,
  names,
  stackManifestFile,
  stageBranch,
  stageBranchFile,
} from "./names";
import type { Pipeline } from "./schema";
import { verificationNotice } from "./notify";
import { stopApprovalPrefix, stopApprovalStages } from "./events";
import { analysisTemplateName, policyArgValues } from "./verification";
import { programOf } from "./stack-manifest";
import {
  previewedFreightStep,
  previewingStep,
  reconcileRequestKey,
  rollbackRecord,
} from "./promotion-rollback";

/**
 * Kargo turns an expression result that parses as a number (or bool, or JSON) into one, so an all-digit
 * commit ID would become a float; `quote()` keeps it a string (akuity/kargo v1.11.2
 * pkg/expressions/json_templates.go, EvaluateTemplate).
 */
export const quoted = (expression: string) => `\${{ quote(${expression}) }}`;

const freightCommit = (p: Pipeline) => quoted(`commitFrom("${p.source.repoURL}").ID`);

function requestedFreight(s: RunStage): kargo.StageSpec["requestedFreight"] {
  // Sorted: the upstreams are a set to Kargo (Any or All of them), so reordering `from` changes no manifest.
  const sources: kargo.StageSpec["requestedFreight"][number]["sources"] =
    s.from === "warehouse"
      ? { direct: true }
      : {
          stages: [...upstreamOf(s)].sort(),
          ...(s.requireAll ? { availabilityStrategy: "All" as const } : {}),
        };
  return [{ origin: { kind: "Warehouse", name: names.warehouse }, sources }];
}

/**
 * Every path whose change must become Freight: each program's folder (its code, lock file and every
 * environment's stack config) and extra paths, and the Stack manifest templates. What a stage runs moves
 * as one commit, through every gate. A plain entry matches that path and everything under it
 * (akuity/kargo v1.11.2 pkg/pattern/matcher.go, BaseDirMatcher).
 */
export function freightPaths(p: Pipeline): string[] {
  return [...new Set([...p.programs.flatMap((x) => [x.dir, ...x.includePaths]), p.stacks.dir])];
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
 * Every program stage promotes itself; a gate never does, so only an approver moves Freight into it. A join
 * has no promotions at all (Kargo turns its auto-promotion off). A GitHub push webhook makes the Warehouse
 * look for Freight at once (its polling stays as the fallback).
 */
export function projectConfigSpec(p: Pipeline): kargo.ProjectConfigSpec {
  return {
    promotionPolicies: runStages(p)
      .filter((s) => s.kind !== "join")
      .map((s) => ({ stageSelector: { name: s.name }, autoPromotionEnabled: isProgramStage(s) })),
    webhookReceivers: [{ name: names.webhookReceiver, github: { secretRef: { name: names.webhookSecret } } }],
    stageLinks: stageLinks(p),
    freightLinks: freightLinks(p),
  };
}

/**
 * In the Kargo UI, each program's preview and update stages of an environment link to its stack in Pulumi
 * Cloud. Kargo evaluates `if` with expr-lang and `url` as a Go text/template, both over
 * `{stage: <the Stage>}` (akuity/kargo v1.11.2 pkg/deeplinks/deeplinks.go).
 */
export function stageLinks(p: Pipeline): kargo.ProjectConfigSpec["stageLinks"] {
  // Every environment has a stage: validation refuses one that no stage uses.
  return p.programs.flatMap((x) =>
    Object.entries(p.environments).map(([environment, env]) => {
      const stages = programStages(p).filter((s) => s.environment === environment && s.program === x.name);
      const stack = `${p.pulumi.organization}/${x.project}/${env.pulumiStack}`;
      return {
        title: `Pulumi stack ${x.project}/${env.pulumiStack}`,
        description: `Previews and updates of ${stack} in Pulumi Cloud`,
        url: `${p.pulumi.consoleUrl}/${stack}`,
        if: `stage.metadata.name in [${stages.map((s) => JSON.stringify(s.name)).join(", ")}]`,
      };
    }),
  );
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
 * The steps every program stage shares, parameterised by the stage it runs for. It never writes to the
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
      // "true" only from an update stage with a drift check (stageSpec passes it): driftCheckSteps.
      { name: DRIFT_CHECK_VAR, value: "false" },
    ],
    steps: [
      // Rollback: an update stage runs only the Freight its preview stage previews now (promotion-rollback.ts).
      ...previewedFreightStep(p),
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
        config: {
          path: `${stage}/${manifest}`,
          updates: [
            { key: "spec.commit", value: commit },
            // Rollback and reconcile: a new value makes PKO run the Stack again, even at a commit it already
            // ran (promotion-rollback.ts); the template carries the key empty, as yaml-update needs.
            { key: reconcileRequestKey, value: quoted("ctx.promotion") },
          ],
        },
      },
      ...driftCheckSteps(commit),
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
        config: { path: stage, message: promotionMessage(p, commitInText) },
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
      // Rollback: a preview stage records on its Stage which Freight it previews now (promotion-rollback.ts).
      ...previewingStep(p),
    ],
  };
}

/** The PromotionTask variable an update stage with a drift check sets to "true". */
export const DRIFT_CHECK_VAR = "driftCheck";

/**
 * An update stage's drift check (lib/pipeline/drift.ts), written beside its Stack from the same commit, so it
 * previews what the stage last ran; its reconcile request, the promotion's name, runs a check that stopped
 * on drift again after the promotion that brings it home. Other stages skip these steps (akuity/kargo
 * v1.11.2 pkg/promotion/evaluator.go ShouldSkip); a commit from before drift checks fails the copy, before
 * anything is pushed.
 */
function driftCheckSteps(commit: string): kargo.PromotionTaskSpec["steps"] {
  const { freight, stage } = names.checkout;
  const manifest = driftManifestFile("${{ ctx.stage }}");
  // The var's value is evaluated too and may come back a bool: compare its text.
  const onlyWithDriftCheck = `\${{ string(vars.${DRIFT_CHECK_VAR}) == "true" }}`;
  return [
    {
      uses: "copy",
      if: onlyWithDriftCheck,
      config: { inPath: `${freight}/\${{ vars.stacksDir }}/${manifest}`, outPath: `${stage}/${manifest}` },
    },
    {
      uses: "yaml-update",
      if: onlyWithDriftCheck,
      config: {
        path: `${stage}/${manifest}`,
        updates: [
          { key: "spec.commit", value: commit },
          { key: reconcileRequestKey, value: quoted("ctx.promotion") },
        ],
      },
    },
  ];
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
/** The Freight metadata key holding when each approval of a gate was made (UTC, RFC 3339), in the same order. */
export const approvalTimeKey = (gate: string) => `approved-at-${gate}`;

/** The trailer of a stage branch commit that holds its promotion's record (lib/history.ts reads it back). */
export const recordTrailer = "Kargo-Record";

/**
 * The commit message of a promotion: its subject, then the record as one trailer line of compact JSON. Kargo
 * turns a map an expression returns inside longer text into `json.Marshal` output (akuity/kargo v1.11.2
 * pkg/expressions/json_templates.go, evaluateExpression), so every value is escaped and a newline, quote or
 * markup in an approver's name or a commit stays inside its JSON string: no value can start a line of its
 * own. The stage branch, which only Kargo pushes (kargo/repositoryRules.ts), keeps it after the Freight is
 * collected and the cluster is gone. Approvals are every gate's, as the Freight's metadata holds them now;
 * `ctx.uiBaseUrl` is Kargo's own address (its chart's API_SERVER_BASE_URL), so the links need no config.
 * `stopApproval` is who approved a stopped preview's Freight for this update stage, and when.
 */
export function promotionMessage(p: Pipeline, commitInText: string): string {
  const gates = runStages(p).filter((s) => s.kind === "gate");
  const approvals = gates.map(
    (g) =>
      `{"gate": ${JSON.stringify(g.name)}, "by": md?.[${JSON.stringify(approvalKey(g.name))}], "at": md?.[${JSON.stringify(approvalTimeKey(g.name))}]}`,
  );
  const ui = 'ctx.uiBaseUrl + "/project/" + ctx.project';
  // Who let a stopped preview through: the ConfigMap Argo Events' Sensor creates from Kargo's FreightApproved
  // event (lib/pipeline/events.ts), read with configMap(), which yields an empty map for one that does not
  // exist (akuity/kargo v1.11.2 pkg/expressions/function/functions.go getConfigMap); Kargo's controller, which
  // evaluates it, reads ConfigMaps in every namespace (charts/kargo/templates/controller/cluster-roles.yaml),
  // from the API server, not a cache (cmd/controlplane/controller.go DisableFor), so a new record is seen.
  // Only update stages a stop is approved for have one; the others record null.
  const stops = stopApprovalStages(p).map((s) => JSON.stringify(s.name));
  const rollback = rollbackRecord(p);
  const stopApproval =
    stops.length > 0
      ? `ctx.stage in [${stops.join(", ")}] ? configMap(${JSON.stringify(stopApprovalPrefix)} + ctx.targetFreight.name + "-" + ctx.stage) : nil`
      : "nil";
  const record = [
    `"project": ctx.project`,
    `"stage": ctx.stage`,
    `"freight": ctx.targetFreight.name`,
    `"alias": ctx.targetFreight.alias`,
    `"commit": commitFrom(vars.repoURL).ID`,
    `"promotion": ctx.promotion`,
    `"promotedBy": ctx.meta.promotion.actor`,
    `"approvals": [${approvals.join(", ")} ]`,
    `"stopApproval": ${stopApproval}`,
    `"freightUrl": ${ui} + "/freight/" + ctx.targetFreight.name`,
    `"promotionUrl": ${ui} + "/promotion/" + ctx.promotion`,
    // The environment's rollback (or reconcile) request, for a promotion it covers (promotion-rollback.ts).
    `"rollback": ${rollback.value}`,
    // For a reconcile: the drift it brings home, as the drift check's Event recorded it (drift-record.ts).
    `"drift": ${rollback.drift}`,
  ];
  // `let` binds the Freight's metadata once; the spaces keep `}}` (the expression's end) out of the literal.
  const expression = `let md = freightMetadata(ctx.targetFreight.name); ${rollback.bind}{${record.join(", ")} }`;
  return `Promote \${{ ctx.stage }} to ${commitInText}\n\n${recordTrailer}: \${{ ${expression} }}`;
}

const nowUtc = 'now().UTC().Format("2006-01-02T15:04:05Z07:00")';

const approvalsAppended = (key: string, value = "ctx.meta.promotion.actor") =>
  "${{ concat((let prev = freightMetadata(ctx.targetFreight.name)?.[" +
  JSON.stringify(key) +
  `]; type(prev) == "array" ? prev : prev == nil ? [] : [prev]), [${value}]) }}`;

export function stageSpec(p: Pipeline, s: RunStage): kargo.StageSpec {
  // A join runs nothing: Kargo verifies Freight there once it is verified in every program's stage.
  if (s.kind === "join") return { requestedFreight: requestedFreight(s) };
  if (s.kind === "gate") {
    return {
      requestedFreight: requestedFreight(s),
      // Records on the Freight who let it through this gate and when (expr-lang's now(), on Kargo's clock):
      // every approval, in order; promotionMessage copies them to each stage branch. set-metadata replaces
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
                    values: {
                      [approvalKey(s.name)]: approvalsAppended(approvalKey(s.name)),
                      [approvalTimeKey(s.name)]: approvalsAppended(approvalTimeKey(s.name), nowUtc),
                    },
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
    promotionTemplate: {
      spec: {
        steps: [
          {
            task: { kind: "PromotionTask", name: names.promotionTask },
            ...(hasDriftCheck(p, s) ? { vars: [{ name: DRIFT_CHECK_VAR, value: "true" }] } : {}),
          },
        ],
      },
    },
    verification: {
      analysisTemplates: [{ kind: "AnalysisTemplate", name: analysisTemplateName(s) }],
      args: [
        { name: "project", value: programOf(p, s.program).project },
        { name: "stack", value: p.environments[s.environment]!.pulumiStack },
        { name: "commit", value: freightCommit(p) },
        // A preview's: what stops it and who lets it through (verification.ts).
        ...policyArgValues(p, s),
      ],
      // What the notifications say of this stage's verification (notify.ts); Kargo adds them to each run.
      analysisRunMetadata: { annotations: verificationNotice(p, s) },
    },
  };
}
