import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  previewPolicy,
  programActions,
  programPolicy,
  programReadActions,
  programWriteActions,
} from "../kargo/programPolicy";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { analysisTemplateSpec, NO_COMMIT, stackManifest } from "../lib/pipeline/derive";
import { validatePipeline, type Pipeline } from "../lib/pipeline/model";
import { renderStacks } from "../lib/pipeline/stacks";
import type { ProgramPlan } from "../lib/plan/harness";
import { kubernetesObjects } from "../lib/plan/output";
import { planChain, repoRoot } from "../lib/plan/projects";
import { ofType, one, planProject } from "./helpers";

type Obj = { apiVersion: string; kind: string; metadata: Record<string, any>; spec: any; [k: string]: any };

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

  it("declares the Project, its ProjectConfig (same name and namespace), one Warehouse and the default 9 stages", () => {
    expect(ofKind("Project").map((p) => p.metadata)).toEqual([{ name: "infra" }]);
    expect(ofKind("ProjectConfig").map((p) => p.metadata)).toEqual([{ name: "infra", namespace: "infra" }]);
    expect(ofKind("Warehouse")).toHaveLength(1);
    expect(
      ofKind("Stage")
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual([
      "approvalgatedev",
      "approvalgateqa",
      "approvalgateqasec",
      "dev",
      "dev2",
      "dev2preview",
      "devpreview",
      "qa",
      "qapreview",
    ]);
  });

  it("wires the stages into the default topology, joining the QA gates with availabilityStrategy All", () => {
    const sources = (name: string) => stage(name).spec.requestedFreight[0].sources;
    expect(sources("approvalgatedev")).toEqual({ direct: true });
    expect(sources("devpreview")).toEqual({ stages: ["approvalgatedev"] });
    expect(sources("dev")).toEqual({ stages: ["devpreview"] });
    expect(sources("approvalgateqa")).toEqual({ stages: ["dev", "dev2"], availabilityStrategy: "All" });
    expect(sources("qapreview")).toEqual({
      stages: ["approvalgateqa", "approvalgateqasec"],
      availabilityStrategy: "All",
    });
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

  it("subscribes the Warehouse to exactly the promoted program, never to stacks/", () => {
    const git = ofKind("Warehouse")[0]!.spec.subscriptions[0].git;
    expect(git).toMatchObject({
      repoURL: pipeline.source.repoURL,
      branch: "main",
      includePaths: ["Pulumi.yaml"],
      excludePaths: ["glob:stacks/**"],
    });
    const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
    expect(program).toMatchObject({ name: pipeline.pulumi.project, runtime: "yaml" });
  });

  it("shares one PromotionTask that bumps spec.commit in the stage's manifest, pushes, and syncs its Application", () => {
    const task = ofKind("PromotionTask")[0]!;
    const steps = task.spec.steps as { uses: string; as?: string; config: any }[];
    expect(steps.map((s) => s.uses)).toEqual([
      "git-clone",
      "yaml-update",
      "git-commit",
      "git-push",
      "argocd-update",
    ]);
    const vars = Object.fromEntries(
      (task.spec.vars as { name: string; value: string }[]).map((v) => [v.name, v.value]),
    );
    expect(vars.repoURL).toBe(ofKind("Warehouse")[0]!.spec.subscriptions[0].git.repoURL);
    expect(steps[1]!.config).toEqual({
      path: "./repo/${{ vars.stacksDir }}/${{ ctx.stage }}.yaml",
      updates: [{ key: "spec.commit", value: "${{ commitFrom(vars.repoURL).ID }}" }],
    });
    const app = steps[4]!.config.apps[0];
    expect(app.sources[0].desiredRevision).toBe("${{ task.outputs.push.commit }}");
    expect(steps[3]!.as).toBe("push");
    // Every environment stage is thin: it calls the task and nothing else.
    for (const s of pipeline.stages.filter((s) => s.kind !== "gate")) {
      expect(stage(s.name).spec.promotionTemplate.spec.steps).toEqual([
        { task: { kind: "PromotionTask", name: task.metadata.name } },
      ]);
    }
    // The Application the task syncs for a stage is that stage's, and it authorizes exactly that stage.
    for (const s of pipeline.stages.filter((s) => s.kind !== "gate")) {
      const appName = app.name
        .replace("${{ ctx.project }}", pipeline.project)
        .replace("${{ ctx.stage }}", s.name);
      const application = ofKind("Application").find((a) => a.metadata.name === appName);
      expect(application, appName).toBeDefined();
      expect(application!.metadata.annotations["kargo.akuity.io/authorized-stage"]).toBe(`infra:${s.name}`);
      expect(application!.spec.source.directory).toEqual({ include: `${s.name}.yaml` });
      expect(`${vars.stacksDir}/${s.name}.yaml`).toBe(`stacks/${s.name}.yaml`);
      expect(fs.existsSync(path.join(repoRoot, "stacks", `${s.name}.yaml`))).toBe(true);
    }
  });

  it("records on the Freight who approved it at each gate", () => {
    for (const s of pipeline.stages.filter((s) => s.kind === "gate")) {
      expect(stage(s.name).spec.promotionTemplate.spec.steps).toEqual([
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
      ]);
      expect(stage(s.name).spec.verification).toBeUndefined();
    }
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
    expect(stage("dev").spec.verification.args).toEqual([
      { name: "stack", value: "dev" },
      { name: "commit", value: `\${{ commitFrom("${pipeline.source.repoURL}").ID }}` },
    ]);
    expect(stage("devpreview").spec.verification.analysisTemplates).toEqual([
      { kind: "AnalysisTemplate", name: "pulumi-preview" },
    ]);
  });

  describe("verification", () => {
    const templates = () =>
      Object.fromEntries(ofKind("AnalysisTemplate").map((t) => [t.metadata.name, t.spec]));

    it("polls Pulumi Cloud for the stage's stack with the documented endpoints and Accept header", () => {
      const { "pulumi-update": update, "pulumi-preview": preview } = templates();
      expect(update.metrics[0].provider.web.url).toBe(
        "{{args.api-url}}/api/stacks/{{args.organization}}/{{args.project}}/{{args.stack}}/updates?pageSize=10&page=1",
      );
      expect(preview.metrics[0].provider.web.url).toBe(
        "{{args.api-url}}/api/stacks/{{args.organization}}/{{args.project}}/{{args.stack}}/updates/latest/previews?asc=false&pageSize=10&page=1",
      );
      for (const t of [update, preview]) {
        expect(t.metrics[0].provider.web.headers).toEqual([
          { key: "Authorization", value: "token {{args.token}}" },
          { key: "Accept", value: "application/vnd.pulumi+8" },
        ]);
        expect(t.args.find((a: { name: string }) => a.name === "token").valueFrom).toEqual({
          secretKeyRef: { name: "pulumi-api-token", key: "accessToken" },
        });
        expect(t.args.find((a: { name: string }) => a.name === "organization").value).toBe(
          pipeline.pulumi.organization,
        );
      }
    });

    it("ends as soon as the operation succeeds or fails, and waits at most 10 seconds beyond it", () => {
      for (const t of Object.values<Obj["spec"]>(templates())) {
        const [metric] = t.metrics;
        expect(metric).toMatchObject({
          initialDelay: "10s",
          interval: "10s",
          consecutiveSuccessLimit: 1,
          failureLimit: 0,
        });
        expect(metric.count).toBeGreaterThan(10);
        expect(metric.count).toBeLessThanOrEqual(270);
        expect(metric.inconclusiveLimit).toBe(metric.count);
        expect(metric.failureCondition).toBeTruthy();
      }
    });

    // The conditions are expr-lang; this evaluates the subset they use (filter, len, index) in JavaScript.
    const evaluate = (condition: string, result: unknown[], commit: string): boolean => {
      const js = condition
        .replaceAll("{{args.commit}}", commit)
        .replace(
          /filter\(result, \{(.*?)\}\)/g,
          (_, body: string) => `result.filter((e) => ${body.replaceAll("#.", "e.")})`,
        )
        .replace(/len\((result\.filter\(\(e\) => .*?\))\)/g, "$1.length");
      return new Function("result", `return ${js};`)(result) as boolean;
    };
    const update = (commit: string, result: string, kind = "update") => ({
      kind,
      result,
      environment: { "git.head": commit },
    });
    const previewOp = (commit: string, result: string) => ({
      info: { kind: "preview", result, environment: { "git.head": commit } },
    });

    it("matches exactly the promoted commit's update, newest first, and never indexes an empty list", () => {
      const { successCondition, failureCondition } = analysisTemplateSpec(pipeline, "update").metrics![0]!;
      const check = (ops: unknown[]) => [
        evaluate(successCondition!, ops, "abc"),
        evaluate(failureCondition!, ops, "abc"),
      ];
      expect(check([])).toEqual([false, false]);
      expect(check([update("def", "succeeded")])).toEqual([false, false]);
      expect(check([update("abc", "in-progress")])).toEqual([false, false]);
      expect(check([update("abc", "succeeded")])).toEqual([true, false]);
      expect(check([update("abc", "failed"), update("abc", "succeeded")])).toEqual([false, true]);
      expect(check([update("abc", "succeeded", "refresh")])).toEqual([false, false]);
    });

    it("matches exactly the promoted commit's preview", () => {
      const { successCondition, failureCondition } = analysisTemplateSpec(pipeline, "preview").metrics![0]!;
      const check = (ops: unknown[]) => [
        evaluate(successCondition!, ops, "abc"),
        evaluate(failureCondition!, ops, "abc"),
      ];
      expect(check([])).toEqual([false, false]);
      expect(check([previewOp("def", "failed"), previewOp("abc", "succeeded")])).toEqual([true, false]);
      expect(check([previewOp("abc", "failed")])).toEqual([false, true]);
    });
  });

  it("maps each gate's Cognito group to a role that may promote into that gate only, plus read access", () => {
    for (const gate of pipeline.stages.filter((s) => s.kind === "gate")) {
      const name = `approver-${gate.name}`;
      const account = ofKind("ServiceAccount").find((a) => a.metadata.name === name)!;
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
      ]);
      const bindings = ofKind("RoleBinding").filter((b) => b.subjects?.[0]?.name === name);
      expect(bindings.map((b) => b.roleRef.name).sort()).toEqual([name, "kargo-viewer"].sort());
    }
    expect(setup.outputs.cognitoApproverGroups).toEqual(
      expect.arrayContaining(pipeline.stages.flatMap((s) => (s.kind === "gate" ? s.approvers : []))),
    );
  });

  it("gives each environment stage an Argo CD Application that never syncs or prunes on its own", () => {
    const apps = ofKind("Application");
    expect(apps).toHaveLength(6);
    for (const app of apps) {
      expect(app.metadata.namespace).toBe("argocd");
      expect(app.spec.project).toBe(setup.outputs.argocdProject);
      expect(app.spec.syncPolicy?.automated).toBeUndefined();
      expect(app.spec.destination).toEqual({
        server: "https://kubernetes.default.svc",
        namespace: "pulumi-stacks",
      });
      expect(app.spec.source).toMatchObject({
        repoURL: pipeline.source.repoURL,
        targetRevision: "main",
        path: "stacks",
      });
    }
  });

  it("labels the git credentials for Kargo and keeps every credential secret", () => {
    const secrets = ofKind("Secret");
    const git = secrets.find(
      (s) => s.metadata.namespace === "infra" && s.metadata.name === "git-credentials",
    )!;
    expect(git.metadata.labels).toEqual({ "kargo.akuity.io/cred-type": "git" });
    for (const s of secrets) expect(s.stringData, s.metadata.name).toBe("[secret]");
    expect(secrets.map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort()).toEqual([
      "argocd/infra-repository",
      "infra/git-credentials",
      "infra/pulumi-api-token",
      "pulumi-stacks/git-credentials",
    ]);
  });

  describe("Kargo itself", () => {
    const values = () => one(plan, "kubernetes:helm.sh/v3:Release").inputs.values as any;

    it("installs the pinned chart with the break-glass admin login off by default", async () => {
      const release = one(plan, "kubernetes:helm.sh/v3:Release").inputs;
      expect(release).toMatchObject({
        chart: "oci://ghcr.io/akuity/kargo-charts/kargo",
        version: "1.11.2",
        namespace: "kargo",
      });
      expect(values().api.adminAccount).toEqual({ enabled: false });
      expect(ofType(plan, "random:index/randomPassword:RandomPassword")).toEqual([]);
      expect(plan.outputs).not.toHaveProperty("kargoAdminPassword");
      expect(plan.upstream.secretOutputNames).toEqual([]);

      // Asked for, it has a generated password, short-lived tokens, and the password is a secret output.
      const withAdmin = await planProject("kargo", { "kargo:kargoAdminAccount": true });
      const adminValues = (one(withAdmin, "kubernetes:helm.sh/v3:Release").inputs.values as any).api;
      expect(adminValues.adminAccount).toEqual({
        enabled: true,
        passwordHash: "[secret]",
        tokenSigningKey: "[secret]",
        tokenTTL: "1h",
      });
      expect(withAdmin.upstream.secretOutputNames).toEqual(["kargoAdminPassword"]);
    });

    it("signs in with a public Cognito client, the same for UI and CLI, admins by group claim", () => {
      const client = one(plan, "aws:cognito/userPoolClient:UserPoolClient").inputs;
      const host = plan.outputs.kargoLoadBalancerHostname;
      expect(client).toMatchObject({
        userPoolId: setup.outputs.cognitoUserPoolId,
        generateSecret: false,
        allowedOauthFlows: ["code"],
        allowedOauthScopes: ["openid", "email", "profile"],
        callbackUrls: [`https://${host}/login`, "http://localhost/auth/callback"],
      });
      expect(values().api.host).toBe(host);
      expect(values().api.oidc).toEqual({
        enabled: true,
        issuerURL: setup.outputs.cognitoIssuerUrl,
        clientID: plan.outputs.kargoOidcClientId,
        cliClientID: plan.outputs.kargoOidcClientId,
        additionalScopes: [],
        usernameClaim: "email",
        admins: { claims: { "cognito:groups": ["platform-admins"] } },
      });
    });

    it("is reached through a network load balancer on the API's node port", () => {
      expect(one(plan, "aws:lb/loadBalancer:LoadBalancer").inputs).toMatchObject({
        loadBalancerType: "network",
        internal: false,
        subnets: setup.outputs.publicSubnetIds,
      });
      expect(values().api.service).toEqual({ type: "NodePort", nodePort: 30443 });
      expect(one(plan, "aws:lb/targetGroup:TargetGroup").inputs).toMatchObject({
        port: 30443,
        targetType: "instance",
      });
      expect(one(plan, "aws:autoscaling/attachment:Attachment").inputs.autoscalingGroupName).toBe(
        (setup.outputs.nodeAutoScalingGroupNames as string[])[0],
      );
      expect(plan.outputs.kargoUrl).toBe(`https://${plan.outputs.kargoLoadBalancerHostname}`);
    });

    it("uses a configured hostname for the host and the callback instead", async () => {
      const named = await planProject("kargo", { "kargo:kargoHostname": "kargo.example.com" });
      expect((one(named, "kubernetes:helm.sh/v3:Release").inputs.values as any).api.host).toBe(
        "kargo.example.com",
      );
      expect(one(named, "aws:cognito/userPoolClient:UserPoolClient").inputs.callbackUrls).toEqual([
        "https://kargo.example.com/login",
        "http://localhost/auth/callback",
      ]);
    });
  });

  it("gives each environment's role the program policy on that environment's buckets only, and previews a read-only one", () => {
    const identities = setup.outputs.stackIdentities as Record<string, { roleName: string }>;
    const policies = ofType(plan, "aws:iam/rolePolicy:RolePolicy");
    expect(policies.map((p) => p.name)).toEqual([
      "promoted-program-dev",
      "promoted-program-dev2",
      "promoted-program-qa",
      "promoted-program-preview",
    ]);
    for (const env of ["dev", "dev2", "qa"]) {
      const policy = policies.find((p) => p.name === `promoted-program-${env}`)!;
      expect(policy.inputs.role).toBe(identities[env]!.roleName);
      const document = JSON.parse(String(policy.inputs.policy));
      expect(document).toEqual(programPolicy(pipeline, env));
      for (const statement of document.Statement) {
        expect(statement.Resource).toBe(`arn:aws:s3:::infra-program-${env}-*`);
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
    const disagreeing = {
      ...agreeing,
      stacksNamespace: "stacks",
      cognitoApproverGroups: ["qa-approvers", "security-approvers"],
    };
    expect(() => checkAgainstClusterSetup(pipeline, disagreeing)).toThrow(
      /pipeline stacks\.namespace is "pulumi-stacks" but cluster-setup's stacksNamespace is "stacks"[\s\S]*stage "approvalgatedev": approver group "dev-approvers" is not a Cognito group/,
    );
  });
});

describe("the promoted program", () => {
  const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
  it("is a Pulumi YAML program making one private, encrypted, versioned bucket, protected, with the provider pinned", () => {
    const { bucket, publicAccessBlock, versioning, encryption, ownership } = program.resources;
    expect(bucket).toMatchObject({ type: "aws:s3:Bucket", options: { protect: true } });
    expect(publicAccessBlock.properties).toMatchObject({
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    });
    expect(versioning.properties.versioningConfiguration).toEqual({ status: "Enabled" });
    expect(encryption.properties.rules[0].applyServerSideEncryptionByDefault.sseAlgorithm).toBe("AES256");
    expect(ownership.properties.rule.objectOwnership).toBe("BucketOwnerEnforced");
    for (const [name, resource] of Object.entries<any>(program.resources))
      expect(resource.options.version, name).toBe("7.48.0");
  });
});

describe("stacks/", () => {
  const pipeline = validatePipeline(definition);
  const dir = path.join(repoRoot, "stacks");

  it("holds exactly the manifests the pipeline generates (run `npm run stacks` after editing kargo/pipeline.ts)", () => {
    const expected = renderStacks(pipeline, dir);
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".yaml"))
        .sort(),
    ).toEqual([...expected.keys()].sort());
    // Compared as data: Kargo's yaml-update may re-quote or re-indent a file when it writes a commit.
    for (const [file, content] of expected) {
      expect(YAML.parse(fs.readFileSync(path.join(dir, file), "utf8")), file).toEqual(YAML.parse(content));
    }
  });

  it("keeps the commit a promotion wrote when regenerating", () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "stacks-"));
    const promoted = {
      ...stackManifest(
        pipeline,
        pipeline.stages.find((s) => s.name === "dev") as never,
        "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
      ),
    };
    fs.writeFileSync(path.join(tmp, "dev.yaml"), YAML.stringify(promoted));
    const rendered = renderStacks(pipeline, tmp);
    expect(YAML.parse(rendered.get("dev.yaml")!).spec.commit).toBe(
      "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d",
    );
    expect(YAML.parse(rendered.get("qa.yaml")!).spec.commit).toBe(NO_COMMIT);
  });

  const manifests = () =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => YAML.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Obj);

  it("never lets a preview destroy anything, and previews the same Pulumi stack its update stage deploys", () => {
    for (const s of pipeline.stages.filter((s) => s.kind === "preview")) {
      const previewStack = manifests().find((m) => m.metadata.name === `infra-${s.name}`)!;
      const updateStage = pipeline.stages.find(
        (u) => u.kind === "update" && u.environment === s.environment,
      )!;
      const updateStack = manifests().find((m) => m.metadata.name === `infra-${updateStage.name}`)!;
      expect(previewStack.spec).toMatchObject({ preview: true, destroyOnFinalize: false });
      expect(previewStack.spec.stack).toBe(updateStack.spec.stack);
      expect(updateStack.spec).toMatchObject({ refresh: true, destroyOnFinalize: false });
      expect(updateStack.spec.preview).toBeUndefined();
    }
  });

  it("destroys on deletion only the update Stack of an environment marked ephemeral", () => {
    const ephemeral = validatePipeline({
      ...definition,
      environments: { ...definition.environments, dev: { ...definition.environments.dev!, ephemeral: true } },
    });
    const specOf = (name: string) =>
      stackManifest(ephemeral, ephemeral.stages.find((s) => s.name === name) as never, NO_COMMIT).spec;
    expect(specOf("dev").destroyOnFinalize).toBe(true);
    expect(specOf("devpreview").destroyOnFinalize).toBe(false);
    expect(specOf("dev2").destroyOnFinalize).toBe(false);
  });

  it("runs every Stack under the IRSA ServiceAccount with the token Secret and a pinned image, without AWS keys", () => {
    for (const m of manifests()) {
      expect(m.metadata.name.length).toBeLessThanOrEqual(42);
      expect(m.metadata.annotations["argocd.argoproj.io/sync-options"]).toBe("Prune=false,Delete=false");
      // Each environment's own identity for an update, the read-only one for a preview.
      const stage = pipeline.stages.find((s) => s.name === m.metadata.labels["app.kubernetes.io/instance"]);
      const suffix = stage!.kind === "preview" ? "preview" : (stage as { environment: string }).environment;
      expect(m.spec.serviceAccountName).toBe(`${setupDefaults.stackServiceAccount}-${suffix}`);
      expect(Object.keys(m.spec.envRefs)).toEqual(["PULUMI_ACCESS_TOKEN"]);
      expect(JSON.stringify(m)).not.toMatch(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
      expect(m.spec.workspaceTemplate.spec.image).toMatch(/^pulumi\/pulumi:\d+\.\d+\.\d+-nonroot$/);
      expect(m.spec.stack).toMatch(
        new RegExp(`^${pipeline.pulumi.organization}/${pipeline.pulumi.project}/`),
      );
      expect(m.spec.config["aws:region"]).toBeTruthy();
    }
  });

  it("does not run pulumi up anywhere before the first approved promotion", () => {
    // Committed manifests point at a commit that does not exist until a promotion writes a real one.
    for (const m of manifests()) expect(m.spec.commit).toBe(NO_COMMIT);
  });
});

const setupDefaults = { stackServiceAccount: "pulumi-stacks" };

describe("the promoted program's policy", () => {
  const pipeline = validatePipeline(definition);
  const program = YAML.parse(fs.readFileSync(path.join(repoRoot, "Pulumi.yaml"), "utf8"));
  const declaredTypes = [...new Set(Object.values<{ type: string }>(program.resources).map((r) => r.type))];

  it("has the provider's action list for every resource type the program declares, and no other", () => {
    expect(Object.keys(programActions).sort()).toEqual(declaredTypes.sort());
    for (const type of declaredTypes) {
      expect(programActions[type]!.read.length, type).toBeGreaterThan(0);
      expect(programActions[type]!.write.length, type).toBeGreaterThan(0);
    }
  });

  it("lists exact actions: no wildcard, no bucket policy or ACL writes that could undo the public-access block", () => {
    const actions = [...programReadActions, ...programWriteActions];
    for (const action of actions) expect(action).toMatch(/^s3:[A-Za-z]+$/);
    for (const forbidden of [
      "s3:PutBucketPolicy",
      "s3:PutBucketAcl",
      "s3:DeleteBucketPolicy",
      "s3:PutObject",
    ])
      expect(actions).not.toContain(forbidden);
    // The S3 Control tagging calls the provider tries first, and the bucket tagging API it falls back to.
    expect(actions).toEqual(
      expect.arrayContaining([
        "s3:ListTagsForResource",
        "s3:TagResource",
        "s3:UntagResource",
        "s3:PutBucketTagging",
      ]),
    );
  });

  it("scopes each environment to its own stack's buckets in the role's own account", () => {
    const dev = programPolicy(pipeline, "dev") as { Statement: any[] };
    const all = dev.Statement.flatMap((s) => s.Action);
    expect(new Set(all)).toEqual(new Set([...programReadActions, ...programWriteActions]));
    for (const statement of dev.Statement)
      expect(statement.Resource).toBe("arn:aws:s3:::infra-program-dev-*");
    const managed = dev.Statement.find((s) => s.Sid === "ManageProgramBuckets");
    expect(managed.Condition).toEqual({ StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } });
    expect(dev.Statement.find((s) => s.Sid === "CreateProgramBuckets").Action).toEqual([
      "s3:CreateBucket",
      "s3:TagResource",
    ]);
    expect(() => programPolicy(pipeline, "prod")).toThrow(/no environment "prod"/);
  });

  it("lets previews read every environment's buckets and change nothing", () => {
    const preview = previewPolicy(pipeline) as { Statement: any[] };
    expect(preview.Statement).toHaveLength(1);
    expect(preview.Statement[0].Resource).toEqual([
      "arn:aws:s3:::infra-program-dev-*",
      "arn:aws:s3:::infra-program-dev2-*",
      "arn:aws:s3:::infra-program-qa-*",
    ]);
    for (const action of preview.Statement[0].Action) expect(programWriteActions).not.toContain(action);
  });
});
