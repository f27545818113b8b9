import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import { argocd, kargo, rollouts } from "../lib/crds";
import type { StageSpec } from "../lib/crds/generated/kargo";
import type { DeepInput } from "../lib/crds/input";
import { applicationNotice, notifyKeys } from "../lib/pipeline/notify";
import { programStages, runStages } from "../lib/pipeline/graph";
import { names } from "../lib/pipeline/names";
import {
  githubWebhookPath,
  projectConfigSpec,
  promotionTaskSpec,
  stageSpec,
  warehouseSpec,
} from "../lib/pipeline/promotion";
import {
  driftAdmissionName,
  stackAdmission,
  stackAdmissionName,
  stageAdmissionName,
} from "../lib/pipeline/admission";
import { approvalAdmission, approvalAdmissionOf } from "../lib/pipeline/approval-admission";
import { approverRoles, deciderRoles } from "../lib/pipeline/rbac";
import { verificationAccess } from "../lib/pipeline/verification-access";
import { applicationSpec } from "../lib/pipeline/stack-manifest";
import {
  analysisTemplateKinds,
  analysisTemplateSpec,
  verificationScripts,
} from "../lib/pipeline/verification";
import { stackObjectName } from "../lib/pipeline/names";
import type { Pipeline } from "../lib/pipeline/schema";
import { admissionPolicies } from "./admissionPolicies";
import { PluginCache } from "./pluginCache";
import { rollbackRequests } from "./rollbackRequests";

export interface PromotionPipelineArgs {
  provider: k8s.Provider;
  pipeline: Pipeline;
  /** Kargo itself: its CRDs must exist first. */
  kargo: pulumi.Resource;
  argocdNamespace: string;
  /** Kargo's namespace: its API server's ServiceAccount writes rollback requests for the people it authorizes. */
  kargoNamespace: string;
  argocdProject: string;
  /**
   * `token` can push (Kargo commits each promotion); `readToken` only reads, for Argo CD and PKO, which never
   * write. Without a read token, they get the push token.
   */
  git: {
    username: string;
    token: pulumi.Input<string>;
    readToken?: pulumi.Input<string>;
    /** Kargo pushes as this GitHub App instead of with `token`, when set. */
    app?: { id: number; installationId: number; privateKey: pulumi.Input<string> };
  };
  /** The Pulumi Cloud token verification reads updates with (read access is enough). */
  pulumiAccessToken: pulumi.Input<string>;
  /** Kargo's UI for this project (`https://<host>/project/<project>`), linked from each notification. */
  kargoProjectUrl: pulumi.Input<string>;
  /**
   * cluster-setup's annotations subscribing each stage's Application to Argo CD's notifications (a failed
   * sync, a Degraded Stack); empty when no destination is configured.
   */
  argocdSubscriptions?: Record<string, string>;
}

/** A Stage's spec with Kargo's address among the facts its verification's runs carry (lib/pipeline/notify.ts). */
function withKargoUrl(spec: StageSpec, url: pulumi.Input<string>): DeepInput<StageSpec> {
  const metadata = spec.verification?.analysisRunMetadata;
  if (!spec.verification || !metadata) return spec;
  return {
    ...spec,
    verification: {
      ...spec.verification,
      analysisRunMetadata: {
        ...metadata,
        annotations: { ...metadata.annotations, [notifyKeys.kargoProjectUrl]: url },
      },
    },
  };
}

/**
 * The promotion pipeline as Kubernetes objects, every one derived from the pipeline definition: the Kargo
 * Project and its policies, the Warehouse, one shared PromotionTask and thin Stages, verification, approver
 * roles, credentials, and one Argo CD Application per environment stage, tracking the branch its
 * promotions write.
 */
export class PromotionPipeline extends pulumi.ComponentResource {
  readonly namespace: pulumi.Output<string>;
  readonly stageNames: string[];
  /** The shared secret of the Warehouse's GitHub webhook receiver, and the path Kargo serves it at. */
  readonly webhookSecret: pulumi.Output<string>;
  readonly webhookPath: pulumi.Output<string>;

  constructor(name: string, args: PromotionPipelineArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:PromotionPipeline", name, {}, opts);
    const p = args.pipeline;
    const ns = p.project;
    const k8sOpts = { parent: this, provider: args.provider };
    const afterKargo = { ...k8sOpts, dependsOn: [args.kargo] };

    const project = new kargo.Project(p.project, { metadata: { name: p.project } }, afterKargo);
    // Kargo creates the project's namespace; everything in it waits for the Project.
    const inProject = { ...k8sOpts, dependsOn: [project] };
    new kargo.ProjectConfig(
      p.project,
      { metadata: { name: p.project, namespace: ns }, spec: projectConfigSpec(p) },
      inProject,
    );

    new k8s.core.v1.Secret(
      `${name}-git-credentials`,
      {
        metadata: {
          name: names.gitCredentials,
          namespace: ns,
          labels: { "kargo.akuity.io/cred-type": "git" },
        },
        // The keys Kargo v1.11.2 reads a GitHub App from (pkg/credentials/github/app.go), or a token.
        stringData: args.git.app
          ? {
              repoURL: p.source.repoURL,
              githubAppID: String(args.git.app.id),
              githubAppInstallationID: String(args.git.app.installationId),
              githubAppPrivateKey: args.git.app.privateKey,
            }
          : { repoURL: p.source.repoURL, username: args.git.username, password: args.git.token },
      },
      inProject,
    );
    new k8s.core.v1.Secret(
      `${name}-verification-token`,
      {
        metadata: { name: names.verificationToken, namespace: ns },
        stringData: { accessToken: args.pulumiAccessToken },
      },
      inProject,
    );
    // Argo CD reads stacks/ and PKO checks out the program: neither ever pushes.
    const readToken = args.git.readToken ?? args.git.token;
    new k8s.core.v1.Secret(
      `${name}-argocd-repository`,
      {
        metadata: {
          name: `${p.project}-repository`,
          namespace: args.argocdNamespace,
          labels: { "argocd.argoproj.io/secret-type": "repository" },
        },
        stringData: {
          type: "git",
          url: p.source.repoURL,
          username: args.git.username,
          password: readToken,
        },
      },
      k8sOpts,
    );
    new k8s.core.v1.Secret(
      `${name}-stack-git-credentials`,
      {
        metadata: { name: p.stacks.gitCredentialsSecret, namespace: p.stacks.namespace },
        stringData: { accessToken: readToken },
      },
      k8sOpts,
    );

    // The GitHub webhook receiver's shared secret, in the `secret` key Kargo reads
    // (akuity/kargo v1.11.2 pkg/webhook/external/github.go).
    const webhookSecret = new random.RandomPassword(
      `${name}-github-webhook`,
      { length: 40, special: false },
      { parent: this },
    );
    new k8s.core.v1.Secret(
      `${name}-github-webhook`,
      {
        metadata: { name: names.webhookSecret, namespace: ns },
        stringData: { secret: webhookSecret.result },
      },
      inProject,
    );
    this.webhookSecret = webhookSecret.result;
    // The path is a hash of the secret and gives nothing of it away.
    this.webhookPath = pulumi.unsecret(webhookSecret.result.apply((secret) => githubWebhookPath(p, secret)));

    const warehouse = new kargo.Warehouse(
      names.warehouse,
      { metadata: { name: names.warehouse, namespace: ns }, spec: warehouseSpec(p) },
      inProject,
    );
    const task = new kargo.PromotionTask(
      names.promotionTask,
      {
        metadata: { name: names.promotionTask, namespace: ns },
        spec: promotionTaskSpec(p, args.argocdNamespace),
      },
      inProject,
    );
    // The script every verification Job runs, beside the token it reads, where Argo Rollouts creates the
    // Jobs (the AnalysisRun's namespace: argo-rollouts v1.9.0 metricproviders/job/job.go, newMetricJob).
    const script = new k8s.core.v1.ConfigMap(
      `${name}-verification-script`,
      {
        metadata: { name: names.verificationScript, namespace: ns },
        data: Object.fromEntries(
          verificationScripts.map((f) => [
            f,
            fs.readFileSync(path.join(__dirname, "verification", f), "utf8"),
          ]),
        ),
      },
      inProject,
    );
    // Who each verification Job runs as, and the one thing its token may change: the message of its own
    // measurement, where the Kargo UI shows why a stage did not pass (lib/pipeline/verification-access.ts).
    const access = verificationAccess(p).map((o) => {
      const { kind, metadata } = o;
      const id = `${name}-verification-${kind.toLowerCase()}`;
      if (o.kind === "ServiceAccount") return new k8s.core.v1.ServiceAccount(id, { metadata }, inProject);
      if (o.kind === "Role") return new k8s.rbac.v1.Role(id, { metadata, rules: o.rules }, inProject);
      if (o.kind === "RoleBinding")
        return new k8s.rbac.v1.RoleBinding(
          id,
          { metadata, roleRef: o.roleRef, subjects: o.subjects },
          inProject,
        );
      if (o.kind === "ValidatingAdmissionPolicy")
        return new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
          id,
          { metadata, spec: o.spec },
          k8sOpts,
        );
      return new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        id,
        { metadata, spec: o.spec },
        k8sOpts,
      );
    });
    const templates = analysisTemplateKinds(p).map(
      (kind) =>
        new rollouts.AnalysisTemplate(
          names.analysis[kind],
          { metadata: { name: names.analysis[kind], namespace: ns }, spec: analysisTemplateSpec(p, kind) },
          { ...inProject, dependsOn: [...access] },
        ),
    );

    // No stage branch is created here: GitHub can only branch from an existing commit, so a branch made at
    // `pulumi up` would start with main's whole tree, workflows included, and the first promotion's git-clear
    // would delete them in a push GitHub refuses without the Workflows permission. Each stage's first
    // promotion creates its branch instead, as an orphan (lib/pipeline/promotion.ts promotionTaskSpec), so it
    // only ever holds what Kargo writes. Until then its Application reports a ComparisonError and deploys
    // nothing; it never syncs by itself. The promotion's argocd-update asks for a hard refresh before the
    // sync (akuity/kargo v1.11.2 pkg/promotion/runner/builtin/argocd_updater.go), so Argo CD resolves the
    // new branch at once.
    const applications = new Map(
      programStages(p).map((s) => [
        s.name,
        new argocd.Application(
          stackObjectName(p, s.name),
          {
            metadata: {
              name: stackObjectName(p, s.name),
              namespace: args.argocdNamespace,
              annotations: {
                "kargo.akuity.io/authorized-stage": `${p.project}:${s.name}`,
                // What Argo CD's notifications name, and where they go (cluster-setup argoCdNotifications.ts).
                ...applicationNotice(p, s),
                [notifyKeys.kargoProjectUrl]: args.kargoProjectUrl,
                ...args.argocdSubscriptions,
              },
            },
            spec: applicationSpec(p, s, { argocdProject: args.argocdProject }),
          },
          k8sOpts,
        ),
      ]),
    );

    // Before any Stack can be synced: the API server admits a Stack only as the planned Stack of the stage
    // whose Application applies it (lib/pipeline/admission.ts), whatever a stage branch holds. One small
    // policy per program stage and one for every other name, so no expression grows with the pipeline.
    // Each program Stage waits for its own binding and the one for every other name, not for every stage's:
    // a thousand stages each depending on every binding would make the plan quadratic in the stages.
    const bindings = admissionPolicies(stackAdmission(p), k8sOpts);
    const unplanned = bindings.get(stackAdmissionName(p))!;
    // Before any Stage: an approval is admitted only for Freight the path has brought to its stage
    // (lib/pipeline/approval-admission.ts), so none is ever recorded unjudged. Each Stage waits for the one
    // policy that judges its name, not for all of them (their number grows with the pipeline).
    const approvals = admissionPolicies(approvalAdmission(p), k8sOpts);
    const approvalsOf = approvalAdmissionOf(p);

    // The plugin cache is ready before any stage can promote, so no workspace waits for its first snapshot.
    // Here, not on a stage branch: it belongs to the pipeline, not to a Freight.
    const cache =
      p.stacks.pluginCacheGiB > 0
        ? [
            new PluginCache(
              `${p.project}-plugins`,
              { provider: args.provider, pipeline: p },
              { parent: this },
            ),
          ]
        : [];

    const stages = new Map<string, kargo.Stage>();
    for (const s of runStages(p)) {
      const application = applications.get(s.name);
      stages.set(
        s.name,
        new kargo.Stage(
          `${p.project}-${s.name}`,
          {
            metadata: { name: s.name, namespace: ns },
            spec: withKargoUrl(stageSpec(p, s), args.kargoProjectUrl),
          },
          {
            ...k8sOpts,
            // Its own Application (the one its promotion syncs), not every stage's: each of a thousand stages
            // depending on every Application made the plan quadratic in the stages.
            dependsOn: [
              warehouse,
              task,
              script,
              ...templates,
              ...(application ? [application] : []),
              // An update stage's branch also holds its drift check, under a binding of its own.
              ...[
                bindings.get(stageAdmissionName(p, s.name)),
                bindings.get(driftAdmissionName(p, s.name)),
              ].filter((b) => b !== undefined),
              unplanned,
              approvals.get(approvalsOf(s.name))!,
              ...cache,
            ],
          },
        ),
      );
    }

    // Gate approvers may promote into their gate and the previews it feeds; an environment's deciders may
    // approve Freight for its update stage after its preview stopped (the stage's auto-promotion then
    // promotes it), and promote by hand into its previews and updates (a rollback). Both read the project
    // through the viewer role Kargo creates in it. Either may ask for the environment's rollback.
    for (const role of [...approverRoles(p), ...deciderRoles(p)]) {
      mappedRole(role, ns, inProject);
    }
    rollbackRequests(p, ns, args.kargoNamespace, inProject);

    this.namespace = project.metadata.name;
    this.stageNames = [...stages.keys()];
    this.registerOutputs({ namespace: this.namespace });
  }
}

/**
 * A Kargo role for the people a Cognito claim names: a ServiceAccount in the project carrying the claim
 * mapping (Kargo maps signed-in users onto it), a Role with exactly `rules`, and bindings to that Role and to
 * the project's `kargo-viewer` Role.
 */
function mappedRole(
  role: {
    serviceAccount: { name: string; annotations: Record<string, string> };
    rules: k8s.types.input.rbac.v1.PolicyRule[];
  },
  namespace: string,
  opts: pulumi.CustomResourceOptions,
): void {
  const name = role.serviceAccount.name;
  const account = new k8s.core.v1.ServiceAccount(
    name,
    { metadata: { name, namespace, annotations: role.serviceAccount.annotations } },
    opts,
  );
  const granted = new k8s.rbac.v1.Role(name, { metadata: { name, namespace }, rules: role.rules }, opts);
  const subjects = [{ kind: "ServiceAccount", name: account.metadata.name, namespace }];
  const bind = (bindingName: string, roleName: pulumi.Input<string>) =>
    new k8s.rbac.v1.RoleBinding(
      bindingName,
      {
        metadata: { name: bindingName, namespace },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: roleName },
        subjects,
      },
      opts,
    );
  bind(name, granted.metadata.name);
  bind(`${name}-viewer`, "kargo-viewer");
}
