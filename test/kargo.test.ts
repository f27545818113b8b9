// The kargo project's pipeline objects as planned from kargo/pipeline.ts: Project, Warehouse, Stages and their
// wiring, verification, approver roles, Applications, credentials and each environment's identity.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import {
  bucketAccess,
  bucketLifecycleAccess,
  programReadActions,
  programWriteActions,
} from "../kargo/programPolicy";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { policyResourceName, previewPolicy, updatePolicy } from "../lib/pipeline/access";
import { ancestors, programStageName, programStages, runStages, type GraphNode } from "../lib/pipeline/graph";
import {
  githubRepository,
  names,
  stackConfigFile,
  stackManifestFile,
  stackObjectName,
  stageBranch,
} from "../lib/pipeline/names";
import { verificationScriptKey } from "../lib/pipeline/verification";
import { approvalKey, freightPaths, stageSpec } from "../lib/pipeline/promotion";
import { pluginCacheClaim } from "../lib/pipeline/stack-manifest";
import { approverGroups } from "../lib/pipeline/rbac";
import { isProtected, type Pipeline, type Program } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { ofType, one } from "./helpers";
import {
  declaredJoins,
  declaredUpdateOf,
  namedGroups,
  programStageNames,
  programStagesOf,
  withExtraProgram,
  type Obj,
} from "./kargo-support";

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

  it("declares the Project, its ProjectConfig (same name and namespace), one Warehouse and one Stage per stage Kargo runs: gates, every program's stages, joins", () => {
    const project = pipeline.project;
    expect(ofKind("Project").map((p) => p.metadata)).toEqual([{ name: project }]);
    expect(ofKind("ProjectConfig").map((p) => p.metadata)).toEqual([{ name: project, namespace: project }]);
    expect(ofKind("Warehouse")).toHaveLength(1);
    const planned = ofKind("Stage").map((s) => s.metadata.name as string);
    expect(planned.sort()).toEqual(
      runStages(pipeline)
        .map((s) => s.name)
        .sort(),
    );
    for (const s of ofKind("Stage")) expect(s.metadata.namespace, s.metadata.name).toBe(project);
    // Read off the definition alone: its gates, each program in each declared preview and update stage, and a
    // join for each declared stage a gate or another environment takes Freight from.
    const expected = [
      ...pipeline.stages.filter((s) => s.kind === "gate").map((s) => s.name),
      ...pipeline.stages
        .filter((s) => s.kind !== "gate")
        .flatMap((s) => pipeline.programs.map((x) => programStageName(s.name, x.name))),
      ...declaredJoins(pipeline).map((s) => s.name),
    ];
    expect(new Set(expected).size).toBe(expected.length);
    expect(planned.sort()).toEqual(expected.sort());
  });

  it("wires the stages as runStages does: each program stage after its declared upstream and its dependencies' update in the same environment", () => {
    const sources = (name: string) => stage(name).spec.requestedFreight[0].sources;
    for (const s of runStages(pipeline)) {
      if (s.from === "warehouse") expect(sources(s.name), s.name).toEqual({ direct: true });
      else
        expect(sources(s.name), s.name).toEqual({
          stages: s.from,
          ...(s.requireAll ? { availabilityStrategy: "All" } : {}),
        });
    }
    for (const s of ofKind("Stage")) {
      expect(s.spec.requestedFreight, s.metadata.name).toHaveLength(1);
      expect(s.spec.requestedFreight[0].origin).toEqual({ kind: "Warehouse", name: names.warehouse });
    }
    // What that wiring must mean, read off the planned Stages and the definition.
    const graph: GraphNode[] = ofKind("Stage").map((s) => {
      const { direct, stages } = s.spec.requestedFreight[0].sources;
      return { name: s.metadata.name, from: direct ? "warehouse" : stages };
    });
    for (const s of programStages(pipeline)) {
      const declared = pipeline.stages.find((d) => d.name === s.declared)!;
      const upstream = ancestors(graph, s.name);
      // The declared upstream: a stage of the same environment means the same program's stage there.
      for (const u of declared.from === "warehouse" ? [] : declared.from) {
        const d = pipeline.stages.find((x) => x.name === u)!;
        const expected =
          d.kind !== "gate" && d.environment === s.environment ? programStageName(u, s.program) : u;
        expect([...upstream], `${s.name} after ${expected}`).toContain(expected);
      }
      // Each dependency's update in the same environment, so a preview reads the outputs its update will.
      const update = declaredUpdateOf(pipeline, s.environment);
      const program = pipeline.programs.find((x) => x.name === s.program)!;
      for (const d of update ? program.dependsOn : [])
        expect([...upstream], `${s.name} after ${d}`).toContain(programStageName(update!.name, d));
      // Several upstreams with a dependency among them: the Freight must have passed all of them.
      const { stages, availabilityStrategy } = sources(s.name);
      if (program.dependsOn.length > 0 && stages?.length > 1)
        expect(availabilityStrategy, s.name).toBe("All");
    }
  });

  it("makes each join a control-flow Stage of its declared name: no promotion, no verification, Freight verified in every program's stage", () => {
    const joins = declaredJoins(pipeline);
    for (const j of joins) {
      const spec = stage(j.name).spec;
      expect(Object.keys(spec), j.name).toEqual(["requestedFreight"]);
      const { stages, ...rest } = spec.requestedFreight[0].sources;
      expect([...stages].sort(), j.name).toEqual(programStagesOf(pipeline, j.name).sort());
      expect(rest, j.name).toEqual(pipeline.programs.length > 1 ? { availabilityStrategy: "All" } : {});
    }
    // The same with one more program: a join waits for every program's stage.
    const extra = withExtraProgram(pipeline);
    const extraJoins = runStages(extra).filter((s) => s.kind === "join");
    expect(extraJoins.map((s) => s.name).sort()).toEqual(
      declaredJoins(extra)
        .map((j) => j.name)
        .sort(),
    );
    for (const j of extraJoins) {
      const spec = stageSpec(extra, j);
      expect(Object.keys(spec), j.name).toEqual(["requestedFreight"]);
      const [{ origin, sources }] = spec.requestedFreight as [
        { origin: unknown; sources: { stages: string[]; availabilityStrategy?: string } },
      ];
      expect(origin).toEqual({ kind: "Warehouse", name: names.warehouse });
      expect(sources.availabilityStrategy, j.name).toBe("All");
      expect([...sources.stages].sort(), j.name).toEqual(programStagesOf(extra, j.name).sort());
    }
    // Every other Stage promotes.
    const joinNames = joins.map((j) => j.name);
    for (const s of ofKind("Stage").filter((s) => !joinNames.includes(s.metadata.name)))
      expect(s.spec.promotionTemplate, s.metadata.name).toBeDefined();
  });

  it("auto-promotes every program stage, never a gate, and sets no policy for a join", () => {
    const policies = ofKind("ProjectConfig")[0]!.spec.promotionPolicies as {
      stageSelector: { name: string };
      autoPromotionEnabled: boolean;
    }[];
    const byStage = new Map(policies.map((p) => [p.stageSelector.name, p.autoPromotionEnabled]));
    expect(byStage.size).toBe(policies.length);
    for (const s of pipeline.stages.filter((s) => s.kind === "gate"))
      expect(byStage.get(s.name), s.name).toBe(false);
    for (const name of programStageNames(pipeline)) expect(byStage.get(name), name).toBe(true);
    for (const j of declaredJoins(pipeline)) expect(byStage.has(j.name), j.name).toBe(false);
    expect(policies).toHaveLength(runStages(pipeline).filter((s) => s.kind !== "join").length);
    for (const p of policies)
      expect(Object.keys(p).sort()).toEqual(["autoPromotionEnabled", "stageSelector"]);
  });

  it("subscribes the Warehouse to every program's folder and extra paths and to stacks/ together, so each environment's config moves with its program", () => {
    const git = ofKind("Warehouse")[0]!.spec.subscriptions[0].git;
    expect(git).toMatchObject({ repoURL: fork.githubRepo, branch: pipeline.source.branch });
    const expected = [...pipeline.programs.flatMap((x) => [x.dir, ...x.includePaths]), pipeline.stacks.dir];
    expect([...git.includePaths].sort()).toEqual([...new Set(expected)].sort());
    expect(new Set(git.includePaths).size).toBe(git.includePaths.length);
    expect(git.excludePaths).toBeUndefined();
    // A plain entry covers that path and everything under it (Kargo's BaseDirMatcher).
    const covered = (file: string) =>
      (git.includePaths as string[]).some((i) => file === i || file.startsWith(`${i}/`));
    for (const x of pipeline.programs) {
      const project = YAML.parse(fs.readFileSync(path.join(repoRoot, x.dir, "Pulumi.yaml"), "utf8"));
      expect(project.name, x.name).toBe(x.project);
      expect(covered(`${x.dir}/Pulumi.yaml`), x.name).toBe(true);
      // Each environment's config file sits in the program's folder, so it is Freight with the program.
      for (const environment of Object.keys(pipeline.environments)) {
        const file = stackConfigFile(pipeline, x, environment);
        expect(path.posix.dirname(file), file).toBe(x.dir);
        expect(covered(file), file).toBe(true);
        const config = YAML.parse(fs.readFileSync(path.join(repoRoot, file), "utf8"));
        expect(typeof config.config, file).toBe("object");
      }
    }
    for (const file of fs.readdirSync(path.join(repoRoot, pipeline.stacks.dir)))
      expect(covered(`${pipeline.stacks.dir}/${file}`), file).toBe(true);
    // A program's extra paths (a shared library, say) become Freight too, once each.
    const shared = "shared/lib";
    const withShared = {
      ...pipeline,
      programs: pipeline.programs.map((x) => ({ ...x, includePaths: [...x.includePaths, shared] })),
    };
    expect(freightPaths(withShared).filter((f) => f === shared)).toEqual([shared]);
    expect(freightPaths(withShared)).toEqual(expect.arrayContaining(pipeline.programs.map((x) => x.dir)));
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

  it("verifies every program stage with its template, passing only declared args: its program's project, its environment's stack, the commit", () => {
    const templates = Object.fromEntries(ofKind("AnalysisTemplate").map((t) => [t.metadata.name, t]));
    const verified = ofKind("Stage").filter((s) => s.spec.verification);
    expect(verified.map((s) => s.metadata.name).sort()).toEqual([...programStageNames(pipeline)].sort());
    for (const s of verified) {
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
    const commit = `\${{ quote(commitFrom("${pipeline.source.repoURL}").ID) }}`;
    for (const s of programStages(pipeline)) {
      const program = pipeline.programs.find((x) => x.name === s.program)!;
      const args = stage(s.name).spec.verification.args as { name: string; value: string }[];
      expect(Object.fromEntries(args.map((a) => [a.name, a.value])), s.name).toEqual({
        project: program.project,
        stack: pipeline.environments[s.environment]!.pulumiStack,
        commit,
      });
      expect(stage(s.name).spec.verification.analysisTemplates, s.name).toEqual([
        {
          kind: "AnalysisTemplate",
          name:
            s.kind === "update"
              ? "pulumi-update"
              : isProtected(pipeline.environments[s.environment]!)
                ? "pulumi-preview-protected"
                : "pulumi-preview",
        },
      ]);
    }
    // Each program's stages look for its own project's operations.
    const projects = new Set(
      programStages(pipeline).map(
        (s) => stage(s.name).spec.verification.args.find((a: { name: string }) => a.name === "project").value,
      ),
    );
    expect(projects).toEqual(new Set(pipeline.programs.map((x) => x.project)));
    expect(projects.size).toBe(pipeline.programs.length);
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

    it("gives each template the organization, and leaves the project, stack and commit to each stage, which the Job's env reads", () => {
      for (const t of Object.values<Obj["spec"]>(templates())) {
        const arg = (name: string) => t.args.find((a: { name: string }) => a.name === name);
        expect(arg("organization").value).toBe(pipeline.pulumi.organization);
        for (const name of ["project", "stack", "commit"]) expect(arg(name), name).toEqual({ name });
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

  it("gives each program stage an Argo CD Application tracking the stage's own branch, which never syncs or prunes on its own", () => {
    const apps = ofKind("Application");
    expect(apps.map((a) => a.metadata.name).sort()).toEqual(
      programStageNames(pipeline)
        .map((s) => stackObjectName(pipeline, s))
        .sort(),
    );
    for (const s of programStages(pipeline)) {
      const app = apps.find((a) => a.metadata.name === stackObjectName(pipeline, s.name))!;
      expect(app.metadata.namespace).toBe(setup.outputs.argocdNamespace);
      expect(app.metadata.annotations).toEqual({
        "kargo.akuity.io/authorized-stage": `${pipeline.project}:${s.name}`,
      });
      expect(app.spec.project).toBe(setup.outputs.argocdProject);
      expect(app.spec.syncPolicy?.automated).toBeUndefined();
      expect(app.spec.destination).toEqual({
        server: "https://kubernetes.default.svc",
        namespace: pipeline.stacks.namespace,
      });
      expect(app.spec.source, s.name).toEqual({
        repoURL: pipeline.source.repoURL,
        targetRevision: stageBranch(s.name),
        path: ".",
        directory: { include: stackManifestFile(s.name) },
      });
    }
    // One tracked branch and one manifest per Application: no stage of one program deploys another's.
    expect(new Set(apps.map((a) => a.spec.source.targetRevision)).size).toBe(apps.length);
    expect(new Set(apps.map((a) => a.spec.source.directory.include)).size).toBe(apps.length);
  });

  it("gives each program stage its own plugin cache claim of cluster-setup's StorageClass when the pipeline asks for one, and none otherwise", () => {
    const claims = ofKind("PersistentVolumeClaim");
    const cached = pipeline.stacks.pluginCacheGiB > 0 ? programStageNames(pipeline) : [];
    expect(claims.map((c) => c.metadata.name).sort()).toEqual(
      cached.map((s) => `${stackObjectName(pipeline, s)}-plugins`).sort(),
    );
    for (const claim of claims) {
      expect(claim.metadata.namespace).toBe(pipeline.stacks.namespace);
      expect(claim.spec.storageClassName).toBe(setup.outputs.pluginCacheStorageClass);
    }
    // What a pipeline with a cache gets, stage by stage: a claim of its own, of the size asked for.
    const on = validatePipeline({ ...definition, stacks: { ...definition.stacks, pluginCacheGiB: 6 } });
    const onStages = programStages(on);
    expect(onStages).toHaveLength(on.programs.length * on.stages.filter((s) => s.kind !== "gate").length);
    for (const s of onStages) {
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
    const claimNames = onStages.map((s) => pluginCacheClaim(on, s, "x").metadata.name);
    expect(new Set(claimNames).size).toBe(onStages.length);
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
      (s) => s.metadata.namespace === pipeline.project && s.metadata.name === names.gitCredentials,
    )!;
    expect(git.metadata.labels).toEqual({ "kargo.akuity.io/cred-type": "git" });
    for (const s of secrets) expect(s.stringData, s.metadata.name).toBe("[secret]");
    expect(secrets.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort()).toEqual(
      [
        `${setup.outputs.argocdNamespace}/${pipeline.project}-repository`,
        `${pipeline.project}/${names.gitCredentials}`,
        `${pipeline.project}/${names.webhookSecret}`,
        `${pipeline.project}/${names.verificationToken}`,
        `${pipeline.stacks.namespace}/${pipeline.stacks.gitCredentialsSecret}`,
      ].sort(),
    );
  });

  describe("each program's AWS permissions", () => {
    type Statement = { Sid?: string; Action: string[]; Resource: string | string[]; Condition?: unknown };
    const policies = () => ofType(plan, "aws:iam/rolePolicy:RolePolicy");
    const policy = (name: string) => {
      const found = policies().filter((p) => p.name === name);
      expect(found, name).toHaveLength(1);
      return { role: found[0]!.inputs.role, document: JSON.parse(String(found[0]!.inputs.policy)) };
    };
    const resources = (s: Statement) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);
    const bucketsOf = (project: string, stack: string) => `arn:aws:s3:::${project}-${stack}-*`;
    const projectOf = (name: string) => pipeline.programs.find((x) => x.name === name)!.project;
    /** Whether a program's access computes what `access` does, for every environment and for previews. */
    const computesAs = (x: Program, access: Program["aws"]) =>
      Object.keys(pipeline.environments).every(
        (env) =>
          JSON.stringify(updatePolicy(pipeline, x, env)) ===
          JSON.stringify(updatePolicy(pipeline, { ...x, aws: access }, env)),
      ) &&
      JSON.stringify(previewPolicy(pipeline, x)) ===
        JSON.stringify(previewPolicy(pipeline, { ...x, aws: access }));

    it("attaches one policy per program to each environment's role and one per program to the preview role, exactly what access.ts computes", () => {
      const identities = setup.outputs.stackIdentities as Record<string, { roleName: string }>;
      const withAccess = pipeline.programs.filter((x) => x.aws);
      const environments = Object.keys(pipeline.environments);
      expect(
        policies()
          .map((p) => p.name)
          .sort(),
      ).toEqual(
        withAccess
          .flatMap((x) => [
            ...environments.map((e) => policyResourceName(x.name, e)),
            policyResourceName(x.name),
          ])
          .sort(),
      );
      for (const x of withAccess) {
        for (const env of environments) {
          const { role, document } = policy(policyResourceName(x.name, env));
          expect(role, `${x.name} in ${env}`).toBe(identities[env]!.roleName);
          expect(document, `${x.name} in ${env}`).toEqual(updatePolicy(pipeline, x, env));
        }
        const { role, document } = policy(policyResourceName(x.name));
        expect(role, x.name).toBe(setup.outputs.previewRoleName);
        expect(document, x.name).toEqual(previewPolicy(pipeline, x));
      }
    });

    it("lets an environment's role reach only that environment's buckets of the program and of the programs it depends on, creating only its own", () => {
      for (const x of pipeline.programs.filter((x) => x.aws)) {
        const reachable = [x.project, ...x.dependsOn.map(projectOf)];
        for (const [env, { pulumiStack }] of Object.entries(pipeline.environments)) {
          const statements = policy(policyResourceName(x.name, env)).document.Statement as Statement[];
          expect(statements.length, `${x.name} in ${env}`).toBeGreaterThan(0);
          for (const statement of statements) {
            for (const action of statement.Action) expect(action).toMatch(/^s3:[A-Z][A-Za-z]+$/);
            for (const arn of resources(statement))
              expect(
                reachable.map((p) => bucketsOf(p, pulumiStack)),
                `${x.name} in ${env}`,
              ).toContain(arn);
            if (statement.Action.includes("s3:CreateBucket"))
              expect(resources(statement)).toEqual([bucketsOf(x.project, pulumiStack)]);
          }
        }
      }
    });

    it("gives a bucket program its buckets in the environment, and a lifecycle program only their lifecycle configuration", () => {
      for (const x of pipeline.programs.filter((x) => x.aws === bucketAccess)) {
        for (const [env, { pulumiStack }] of Object.entries(pipeline.environments)) {
          const statements = policy(policyResourceName(x.name, env)).document.Statement as Statement[];
          expect(new Set(statements.flatMap((s) => s.Action))).toEqual(
            new Set([...programReadActions, ...programWriteActions]),
          );
          for (const statement of statements)
            expect(resources(statement)).toEqual([bucketsOf(x.project, pulumiStack)]);
        }
      }
      for (const x of pipeline.programs) {
        const bucketProgram = x.dependsOn.find((d) => computesAs(x, bucketLifecycleAccess(d)));
        if (bucketProgram === undefined) continue;
        for (const [env, { pulumiStack }] of Object.entries(pipeline.environments)) {
          const statements = policy(policyResourceName(x.name, env)).document.Statement as Statement[];
          expect(statements.flatMap((s) => s.Action).sort()).toEqual([
            "s3:GetLifecycleConfiguration",
            "s3:PutLifecycleConfiguration",
          ]);
          for (const statement of statements)
            expect(resources(statement)).toEqual([bucketsOf(projectOf(bucketProgram), pulumiStack)]);
        }
      }
    });

    it("lets previews only read, in every environment", () => {
      const stacks = Object.values(pipeline.environments).map((e) => e.pulumiStack);
      for (const x of pipeline.programs.filter((x) => x.aws)) {
        const reachable = [x.project, ...x.dependsOn.map(projectOf)];
        const statements = policy(policyResourceName(x.name)).document.Statement as Statement[];
        expect(statements.length, x.name).toBeGreaterThan(0);
        for (const statement of statements) {
          for (const action of statement.Action) expect(action, x.name).toMatch(/^s3:(Get|List)[A-Za-z]+$/);
          const arns = resources(statement);
          expect(arns.length, x.name).toBe(stacks.length);
          for (const arn of arns)
            expect(
              reachable.flatMap((p) => stacks.map((stack) => bucketsOf(p, stack))),
              x.name,
            ).toContain(arn);
        }
      }
    });
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
    const otherNamespace = `${pipeline.stacks.namespace}-other`;
    const disagreeing = {
      ...agreeing,
      stacksNamespace: otherNamespace,
      cognitoApproverGroups: namedGroups(pipeline).filter((g) => g !== group),
    };
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      `pipeline stacks.namespace is "${pipeline.stacks.namespace}" but cluster-setup's stacksNamespace is "${otherNamespace}"`,
    );
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      `stage "${gate.name}": approver group "${group}" is not a Cognito group`,
    );
  });
});
