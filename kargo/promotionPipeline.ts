import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { argocd, kargo, rollouts } from "../lib/crds";
import {
  analysisTemplateSpec,
  applicationSpec,
  approverRoles,
  environmentStages,
  names,
  projectConfigSpec,
  promotionTaskSpec,
  stageSpec,
  warehouseSpec,
} from "../lib/pipeline/derive";
import { stackObjectName, topologicalOrder, type Pipeline } from "../lib/pipeline/model";

export interface PromotionPipelineArgs {
  provider: k8s.Provider;
  pipeline: Pipeline;
  /** Kargo itself: its CRDs must exist first. */
  kargo: pulumi.Resource;
  argocdNamespace: string;
  argocdProject: string;
  /**
   * `token` can push (Kargo commits each promotion); `readToken` only reads, for Argo CD and PKO, which never
   * write. Without a read token, they get the push token.
   */
  git: { username: string; token: pulumi.Input<string>; readToken?: pulumi.Input<string> };
  /** The Pulumi Cloud token verification reads updates with (read access is enough). */
  pulumiAccessToken: pulumi.Input<string>;
}

/**
 * The promotion pipeline as Kubernetes objects, every one derived from the pipeline definition: the Kargo
 * Project and its policies, the Warehouse, one shared PromotionTask and thin Stages, verification, approver
 * roles, credentials, and one Argo CD Application per environment stage.
 */
export class PromotionPipeline extends pulumi.ComponentResource {
  readonly namespace: pulumi.Output<string>;
  readonly stageNames: string[];

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
        stringData: { repoURL: p.source.repoURL, username: args.git.username, password: args.git.token },
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
    const templates = (["preview", "update"] as const).map(
      (kind) =>
        new rollouts.AnalysisTemplate(
          names.analysis[kind],
          { metadata: { name: names.analysis[kind], namespace: ns }, spec: analysisTemplateSpec(p, kind) },
          inProject,
        ),
    );

    const applications = environmentStages(p).map(
      (s) =>
        new argocd.Application(
          stackObjectName(p, s.name),
          {
            metadata: {
              name: stackObjectName(p, s.name),
              namespace: args.argocdNamespace,
              annotations: { "kargo.akuity.io/authorized-stage": `${p.project}:${s.name}` },
            },
            spec: applicationSpec(p, s, { argocdProject: args.argocdProject }),
          },
          k8sOpts,
        ),
    );

    const stages = new Map<string, kargo.Stage>();
    for (const s of topologicalOrder(p.stages)) {
      stages.set(
        s.name,
        new kargo.Stage(
          `${p.project}-${s.name}`,
          { metadata: { name: s.name, namespace: ns }, spec: stageSpec(p, s) },
          { ...k8sOpts, dependsOn: [warehouse, task, ...templates, ...applications] },
        ),
      );
    }

    for (const role of approverRoles(p)) {
      const account = new k8s.core.v1.ServiceAccount(
        role.serviceAccount.name,
        {
          metadata: {
            name: role.serviceAccount.name,
            namespace: ns,
            annotations: role.serviceAccount.annotations,
          },
        },
        inProject,
      );
      const promoter = new k8s.rbac.v1.Role(
        role.serviceAccount.name,
        { metadata: { name: role.serviceAccount.name, namespace: ns }, rules: role.rules },
        inProject,
      );
      const subjects = [{ kind: "ServiceAccount", name: account.metadata.name, namespace: ns }];
      new k8s.rbac.v1.RoleBinding(
        role.serviceAccount.name,
        {
          metadata: { name: role.serviceAccount.name, namespace: ns },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: promoter.metadata.name },
          subjects,
        },
        inProject,
      );
      // Read access to the project, through the viewer role Kargo creates in every project.
      new k8s.rbac.v1.RoleBinding(
        `${role.serviceAccount.name}-viewer`,
        {
          metadata: { name: `${role.serviceAccount.name}-viewer`, namespace: ns },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "kargo-viewer" },
          subjects,
        },
        inProject,
      );
    }

    this.namespace = project.metadata.name;
    this.stageNames = [...stages.keys()];
    this.registerOutputs({ namespace: this.namespace });
  }
}
