// The kargo project's pipeline objects as planned from kargo/pipeline.ts: Project, Warehouse, Stages and their
// wiring, verification, approver roles, Applications, credentials and each environment's identity.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import { programPolicy, programReadActions } from "../kargo/programPolicy";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { githubRepository, names } from "../lib/pipeline/names";
import { verificationScriptKey } from "../lib/pipeline/verification";
import { approvalKey, freightPaths } from "../lib/pipeline/promotion";
import { pluginCacheClaim } from "../lib/pipeline/stack-manifest";
import { approverGroups } from "../lib/pipeline/rbac";
import { isProtected, type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { ofType, one } from "./helpers";
import { namedGroups, environmentStageNames, Obj } from "./kargo-support";

describe("kargo project", () => {
  const pipeline: Pipeline = validatePipeline(definition);
  let setup: ProgramPlan;
  let plan: ProgramPlan;
  let objects: Obj[];
  const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const stage = (name: string) => ofKind("Stage").find((s) => s.metadata.name === name)!;

  beforeAll(async () => {
    const plans = await planChain();
    [setup, plan] = [plans[1]!, plans[2]!];
    objects = kubernetesObjects(plan) as Obj[];
  });

  it("declares the Project, its ProjectConfig (same name and namespace), one Warehouse and one Stage per stage of the pipeline", () => {
    const project = pipeline.project;
    expect(ofKind("Project").map((p) => p.metadata)).toEqual([{ name: project }]);
    expect(ofKind("ProjectConfig").map((p) => p.metadata)).toEqual([{ name: project, namespace: project }]);
    expect(ofKind("Warehouse")).toHaveLength(1);
    expect(
      ofKind("Stage")
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(pipeline.stages.map((s) => s.name).sort());
  });

  it("wires the stages as the pipeline does, joining stages that require all upstreams with availabilityStrategy All", () => {
    const sources = (name: string) => stage(name).spec.requestedFreight[0].sources;
    for (const s of pipeline.stages) {
      if (s.from === "warehouse") expect(sources(s.name), s.name).toEqual({ direct: true });
      else
        expect(sources(s.name), s.name).toEqual({
          stages: s.from,
          ...(s.requireAll ? { availabilityStrategy: "All" } : {}),
        });
    }
    for (const s of ofKind("Stage"))
      expect(s.spec.requestedFreight[0].origin).toEqual({ kind: "Warehouse", name: "program" });
  });

  it("auto-promotes every environment stage and never a gate", () => {
    const policies = ofKind("ProjectConfig")[0]!.spec.promotionPolicies as {
      stageSelector: { name: string };
      autoPromotionEnabled: boolean;
    }[];
    const byStage = Object.fromEntries(policies.map((p) => [p.stageSelector.name, p.autoPromotionEnabled]));
    for (const s of pipeline.stages) expect(byStage[s.name], s.name).toBe(s.kind !== "gate");
  });

  it("subscribes the Warehouse to the program, each environment's Pulumi.<stack>.yaml and stacks/ together", () => {
    const git = ofKind("Warehouse")[0]!.spec.subscriptions[0].git;
    expect(git).toMatchObject({ repoURL: fork.githubRepo, branch: pipeline.source.branch });
    expect(git.includePaths).toEqual([
      ...pipeline.source.includePaths,
      ...Object.values(pipeline.environments).map((e) => `Pulumi.${e.pulumiStack}.yaml`),
      pipeline.stacks.dir,
    ]);
    expect(git.excludePaths).toBeUndefined();
    const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
    expect(program).toMatchObject({ name: pipeline.pulumi.project, runtime: "yaml" });
    // Each config file exists beside the program and sets what the program's template asks for.
    for (const env of Object.values(pipeline.environments)) {
      const file = path.join(repoRoot, `Pulumi.${env.pulumiStack}.yaml`);
      const config = YAML.parse(fs.readFileSync(file, "utf8"));
      expect(Object.keys(config.config)).toEqual(Object.keys(program.template.config));
    }
    // A program in a folder keeps its config beside it.
    const nested = { ...pipeline, source: { ...pipeline.source, programDir: "infra" } };
    expect(freightPaths(nested)).toContain(
      `infra/Pulumi.${Object.values(pipeline.environments)[0]!.pulumiStack}.yaml`,
    );
  });

  it("creates no stage branch at pulumi up: each stage's first promotion creates its own, holding nothing of main", () => {
    // A branch GitHub creates starts from an existing commit (main's tree, workflows included); Kargo's
    // git-clone creates a missing one as an orphan (test/promotion runs it).
    const branches = plan.resources.filter((r) =>
      ["github:index/repositoryFile:RepositoryFile", "github:index/branch:Branch"].includes(r.type),
    );
    expect(branches).toEqual([]);
    const clone = (ofKind("PromotionTask")[0]!.spec.steps as { uses: string; config: any }[]).find(
      (s) => s.uses === "git-clone",
    )!;
    expect(clone.config.checkout).toContainEqual({
      branch: "stage/${{ ctx.stage }}",
      create: true,
      path: "./stage",
    });
  });

  it("refuses a repository that is not on GitHub, naming source.repoURL", () => {
    expect(githubRepository("https://github.com/acme/infra.git")).toEqual({ owner: "acme", name: "infra" });
    expect(() => githubRepository("https://gitlab.com/acme/infra.git")).toThrow(
      /source\.repoURL: "https:\/\/gitlab\.com\/acme\/infra\.git" is not a GitHub repository/,
    );
  });

  it("records on the Freight who approved it at each gate, under the gate's own key (test/promotion keeps every approval)", () => {
    for (const s of pipeline.stages.filter((s) => s.kind === "gate")) {
      const steps = stage(s.name).spec.promotionTemplate.spec.steps;
      expect(steps).toHaveLength(1);
      expect(steps[0]).toMatchObject({ uses: "set-metadata" });
      const [update] = steps[0].config.updates;
      expect(update).toMatchObject({ kind: "Freight", name: "${{ quote(ctx.targetFreight.name) }}" });
      expect(Object.keys(update.values)).toEqual([approvalKey(s.name)]);
      expect(update.values[approvalKey(s.name)]).toContain("ctx.meta.promotion.actor");
      expect(stage(s.name).spec.verification).toBeUndefined();
    }
    const keys = pipeline.stages.filter((s) => s.kind === "gate").map((s) => approvalKey(s.name));
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("passes only declared args to verification, and declares every arg a template uses", () => {
    const templates = Object.fromEntries(ofKind("AnalysisTemplate").map((t) => [t.metadata.name, t]));
    for (const s of ofKind("Stage").filter((s) => s.spec.verification)) {
      const [{ name }] = s.spec.verification.analysisTemplates;
      const template = templates[name];
      expect(template, `${s.metadata.name} verifies with ${name}`).toBeDefined();
      const declared = template.spec.args as { name: string; value?: string; valueFrom?: unknown }[];
      const passed = (s.spec.verification.args as { name: string }[]).map((a) => a.name);
      expect(declared.map((a) => a.name)).toEqual(expect.arrayContaining(passed));
      const required = declared
        .filter((a) => a.value === undefined && a.valueFrom === undefined)
        .map((a) => a.name);
      expect(passed.sort()).toEqual(required.sort());
      const used = [...JSON.stringify(template.spec).matchAll(/\{\{\s*args\.([\w-]+)\s*\}\}/g)].map(
        (m) => m[1],
      );
      expect(declared.map((a) => a.name)).toEqual(expect.arrayContaining([...new Set(used)]));
    }
    for (const s of pipeline.stages.filter((s) => s.kind === "update")) {
      expect(stage(s.name).spec.verification.args, s.name).toEqual([
        { name: "stack", value: pipeline.environments[s.environment]!.pulumiStack },
        { name: "commit", value: `\${{ quote(commitFrom("${pipeline.source.repoURL}").ID) }}` },
      ]);
    }
    const previews = pipeline.stages.filter((s) => s.kind === "preview");
    expect(previews.length).toBeGreaterThan(0);
    for (const s of previews) {
      expect(stage(s.name).spec.verification.analysisTemplates, s.name).toEqual([
        {
          kind: "AnalysisTemplate",
          name: isProtected(pipeline.environments[s.environment]!)
            ? "pulumi-preview-protected"
            : "pulumi-preview",
        },
      ]);
    }
  });

  describe("verification", () => {
    const templates = () =>
      Object.fromEntries(ofKind("AnalysisTemplate").map((t) => [t.metadata.name, t.spec]));

    it("ships the committed verification script beside the token, in the namespace the Jobs run in", () => {
      const [script] = ofKind("ConfigMap").filter((c) => c.metadata.name === names.verificationScript);
      expect(script!.metadata.namespace).toBe(pipeline.project);
      expect(script!.data).toEqual({
        [verificationScriptKey]: fs.readFileSync(
          path.join(repoRoot, "kargo/verification/verify.mjs"),
          "utf8",
        ),
      });
      const token = ofKind("Secret").find((s) => s.metadata.name === names.verificationToken)!;
      expect(token.metadata.namespace).toBe(pipeline.project);
      for (const t of Object.values<Obj["spec"]>(templates()))
        for (const m of t.metrics) {
          const pod = m.provider.job.spec.template.spec;
          expect(pod.volumes[0].configMap.name).toBe(script!.metadata.name);
          expect(
            pod.containers[0].env.find((e: { name: string }) => e.name === "PULUMI_ACCESS_TOKEN"),
          ).toEqual({
            name: "PULUMI_ACCESS_TOKEN",
            valueFrom: { secretKeyRef: { name: token.metadata.name, key: "accessToken" } },
          });
        }
    });

    it("passes each template's organization and project, which the Job's env reads", () => {
      for (const t of Object.values<Obj["spec"]>(templates())) {
        const arg = (name: string) => t.args.find((a: { name: string }) => a.name === name).value;
        expect(arg("organization")).toBe(pipeline.pulumi.organization);
        expect(arg("project")).toBe(pipeline.pulumi.project);
      }
    });

    // What the Jobs decide is run by test/analysis.
  });

  it("lets each gate's Cognito groups promote into that gate through Kargo's API: promote on it, create promotions, read", () => {
    for (const gate of pipeline.stages.filter((s) => s.kind === "gate")) {
      const name = `approver-${gate.name}`;
      const account = ofKind("ServiceAccount").find((a) => a.metadata.name === name)!;
      expect(account.metadata.namespace).toBe(pipeline.project);
      expect(JSON.parse(account.metadata.annotations["rbac.kargo.akuity.io/claims"])).toEqual({
        "cognito:groups": gate.approvers,
      });
      expect(ofKind("Role").find((r) => r.metadata.name === name)!.rules).toEqual([
        {
          apiGroups: ["kargo.akuity.io"],
          resources: ["stages"],
          resourceNames: [gate.name],
          verbs: ["promote"],
        },
        { apiGroups: ["kargo.akuity.io"], resources: ["promotions"], verbs: ["create"] },
      ]);
      const bindings = ofKind("RoleBinding").filter((b) => b.subjects?.[0]?.name === name);
      expect(bindings.map((b) => b.roleRef.name).sort()).toEqual([name, "kargo-viewer"].sort());
    }
    // No gate approver may approve Freight past verification (`kargo approve` patches freights/status);
    // only destructive-change approvers may, for their environment's update stage (destructive-changes.test).
    const rules = ofKind("Role")
      .filter((r) => r.metadata.name.startsWith("approver-"))
      .flatMap((r) => r.rules as { resources: string[]; verbs: string[] }[]);
    expect(rules.some((r) => r.resources.includes("freights/status"))).toBe(false);
    expect(rules.every((r) => !r.verbs.includes("*"))).toBe(true);
    // Cluster-level read (kargo-user: list projects) for exactly the approver groups.
    const oidc = (one(plan, "kubernetes:helm.sh/v3:Release").inputs.values as any).api.oidc;
    expect(oidc.users).toEqual({ claims: { "cognito:groups": namedGroups(pipeline) } });
    expect(approverGroups(pipeline)).toEqual(oidc.users.claims["cognito:groups"]);
    expect(setup.outputs.cognitoApproverGroups).toEqual(expect.arrayContaining(approverGroups(pipeline)));
  });

  it("gives Kargo's install the same approver groups whatever order the pipeline names them in, so reordering them upgrades nothing", () => {
    const groups = approverGroups(pipeline);
    const firstGate = definition.stages.find((s) => s.kind === "gate")!;
    // The first gate now names every group, last one first: the same groups, met in another order.
    const reordered = validatePipeline({
      ...definition,
      stages: definition.stages.map((s) =>
        s.name === firstGate.name ? { ...s, approvers: [...groups].reverse() } : s,
      ),
    });
    expect(approverGroups(reordered)).toEqual(groups);
  });

  it("gives each environment stage an Argo CD Application that never syncs or prunes on its own", () => {
    const apps = ofKind("Application");
    expect(apps.map((a) => a.metadata.name).sort()).toEqual(
      environmentStageNames(pipeline)
        .map((s) => `${pipeline.project}-${s}`)
        .sort(),
    );
    for (const app of apps) {
      expect(app.metadata.namespace).toBe("argocd");
      expect(app.spec.project).toBe(setup.outputs.argocdProject);
      expect(app.spec.syncPolicy?.automated).toBeUndefined();
      expect(app.spec.destination).toEqual({
        server: "https://kubernetes.default.svc",
        namespace: pipeline.stacks.namespace,
      });
      expect(app.spec.source.repoURL).toBe(pipeline.source.repoURL);
      expect(app.spec.source.targetRevision).toMatch(/^stage\//);
    }
    // One tracked branch per Application.
    expect(new Set(apps.map((a) => a.spec.source.targetRevision)).size).toBe(apps.length);
  });

  it("gives each environment stage its own plugin cache claim of cluster-setup's StorageClass when the pipeline asks for one, and none otherwise", () => {
    const claims = ofKind("PersistentVolumeClaim");
    const cached = pipeline.stacks.pluginCacheGiB > 0 ? environmentStageNames(pipeline) : [];
    expect(claims.map((c) => c.metadata.name).sort()).toEqual(
      cached.map((s) => `${pipeline.project}-${s}-plugins`).sort(),
    );
    for (const claim of claims) {
      expect(claim.metadata.namespace).toBe(pipeline.stacks.namespace);
      expect(claim.spec.storageClassName).toBe(setup.outputs.pluginCacheStorageClass);
    }
    // What a pipeline with a cache gets, stage by stage: a claim of its own, of the size asked for.
    const on = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 6 } });
    for (const s of on.stages.filter((s) => s.kind !== "gate")) {
      expect(pluginCacheClaim(on, s, "pulumi-plugin-cache")).toEqual({
        metadata: {
          name: `${on.project}-${s.name}-plugins`,
          namespace: on.stacks.namespace,
          labels: { "app.kubernetes.io/part-of": on.project, "app.kubernetes.io/instance": s.name },
        },
        spec: {
          accessModes: ["ReadWriteOnce"],
          storageClassName: "pulumi-plugin-cache",
          resources: { requests: { storage: "6Gi" } },
        },
      });
    }
  });

  it("refuses a plugin cache on a cluster without the EBS CSI driver, naming both settings", () => {
    const on = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 4 } });
    const outputs = setup.upstream.outputs as Record<string, any>;
    const upstream = (ebsCsiDriver: boolean) =>
      ({
        ...outputs,
        network: {},
        previewIdentity: { serviceAccountName: outputs.previewServiceAccountName },
        ebsCsiDriver,
      }) as unknown as ClusterSetup;
    expect(() => checkAgainstClusterSetup(on, upstream(false))).toThrow(
      "pipeline stacks.pluginCacheGiB is 4, but the cluster runs no EBS CSI driver to provision the plugin caches; set cluster:ebsCsiDriver true and pulumi up cluster and cluster-setup first, or set stacks.pluginCacheGiB to 0",
    );
    expect(() => checkAgainstClusterSetup(on, upstream(true))).not.toThrow();
    expect(() => checkAgainstClusterSetup(pipeline, upstream(false))).not.toThrow();
  });

  it("labels the git credentials for Kargo and keeps every credential secret", () => {
    const secrets = ofKind("Secret");
    const git = secrets.find(
      (s) => s.metadata.namespace === pipeline.project && s.metadata.name === "git-credentials",
    )!;
    expect(git.metadata.labels).toEqual({ "kargo.akuity.io/cred-type": "git" });
    for (const s of secrets) expect(s.stringData, s.metadata.name).toBe("[secret]");
    expect(secrets.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort()).toEqual([
      "argocd/infra-repository",
      "infra/git-credentials",
      "infra/github-webhook",
      "infra/pulumi-api-token",
      "pulumi-stacks/git-credentials",
    ]);
  });

  it("gives each environment's role the program policy on that environment's buckets only, and previews a read-only one", () => {
    const identities = setup.outputs.stackIdentities as Record<string, { roleName: string }>;
    const policies = ofType(plan, "aws:iam/rolePolicy:RolePolicy");
    const environments = Object.keys(pipeline.environments);
    expect(policies.map((p) => p.name)).toEqual(
      [...environments, "preview"].map((e) => `promoted-program-${e}`),
    );
    for (const env of environments) {
      const policy = policies.find((p) => p.name === `promoted-program-${env}`)!;
      expect(policy.inputs.role).toBe(identities[env]!.roleName);
      const document = JSON.parse(String(policy.inputs.policy));
      expect(document).toEqual(programPolicy(pipeline, env));
      for (const statement of document.Statement) {
        expect(statement.Resource).toBe(
          `arn:aws:s3:::${pipeline.pulumi.project}-${pipeline.environments[env]!.pulumiStack}-*`,
        );
        for (const action of statement.Action) expect(action).toMatch(/^s3:[A-Z]/);
      }
    }
    const preview = policies.find((p) => p.name === "promoted-program-preview")!;
    expect(preview.inputs.role).toBe(setup.outputs.previewRoleName);
    const readOnly = JSON.parse(String(preview.inputs.policy));
    expect(readOnly.Statement).toHaveLength(1);
    expect(readOnly.Statement[0].Action).toEqual(programReadActions);
    for (const action of readOnly.Statement[0].Action) expect(action).toMatch(/^s3:(Get|List)/);
    const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
    expect(program.resources.bucket.properties.bucketPrefix).toBe("${pulumi.project}-${pulumi.stack}-");
  });

  it("rejects a pipeline that disagrees with cluster-setup, naming both sides", () => {
    const outputs = setup.upstream.outputs as Record<string, any>;
    const agreeing = {
      ...outputs,
      network: {},
      previewIdentity: { serviceAccountName: outputs.previewServiceAccountName },
    } as unknown as ClusterSetup;
    expect(() => checkAgainstClusterSetup(pipeline, agreeing)).not.toThrow();
    const gate = pipeline.stages.find((s) => s.kind === "gate")!;
    const group = gate.approvers[0]!;
    const disagreeing = {
      ...agreeing,
      stacksNamespace: "stacks",
      cognitoApproverGroups: namedGroups(pipeline).filter((g) => g !== group),
    };
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      `pipeline stacks.namespace is "${pipeline.stacks.namespace}" but cluster-setup's stacksNamespace is "stacks"`,
    );
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      `stage "${gate.name}": approver group "${group}" is not a Cognito group`,
    );
  });
});
