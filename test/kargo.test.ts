import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import {
  previewPolicy,
  programActions,
  programPolicy,
  programReadActions,
  programWriteActions,
} from "../kargo/programPolicy";
import { checkAgainstClusterSetup, type ClusterSetup } from "../kargo/upstream";
import { githubRepository } from "../lib/pipeline/names";
import { approvalKey, freightPaths, promotionTaskSpec } from "../lib/pipeline/promotion";
import { approverGroups } from "../lib/pipeline/rbac";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { isProtected, type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { renderStacks } from "../lib/pipeline/stacks";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain, repoRoot } from "../lib/cli/plan/projects";
import { ofType, one, planProject } from "./helpers";

/** The Cognito groups the pipeline names: every gate's approvers and every destructive-change approver group. */
const namedGroups = (p: Pipeline) =>
  [
    ...new Set([
      ...p.stages.flatMap((s) => (s.kind === "gate" ? s.approvers : [])),
      ...Object.values(p.environments).flatMap((e) => e.destructiveChangeApprovers),
    ]),
  ].sort();
const environmentStageNames = (p: Pipeline) => p.stages.filter((s) => s.kind !== "gate").map((s) => s.name);

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

  describe("the shared PromotionTask", () => {
    type Step = { uses: string; as?: string; config: any };
    const steps = () => ofKind("PromotionTask")[0]!.spec.steps as Step[];
    const step = (uses: string) => steps().find((s) => s.uses === uses)!;

    it("copies the stage's template from the Freight's commit to the stage's own branch, pins it, pushes there and syncs to that push", () => {
      expect(steps().map((s) => s.uses)).toEqual([
        "git-clone",
        "git-clear",
        "copy",
        "yaml-update",
        "file-write",
        "git-commit",
        "git-push",
        "argocd-update",
      ]);
      const commit = "${{ quote(commitFrom(vars.repoURL).ID) }}";
      expect(step("git-clone").config.checkout).toEqual([
        { commit, path: "./freight" },
        { branch: "stage/${{ ctx.stage }}", create: true, path: "./stage" },
      ]);
      expect(step("git-clear").config).toEqual({ path: "./stage" });
      expect(step("copy").config).toEqual({
        inPath: "./freight/${{ vars.stacksDir }}/${{ ctx.stage }}.yaml",
        outPath: "./stage/${{ ctx.stage }}.yaml",
      });
      expect(step("yaml-update").config).toEqual({
        path: "./stage/${{ ctx.stage }}.yaml",
        updates: [{ key: "spec.commit", value: commit }],
      });
      expect(step("file-write").config).toMatchObject({ path: "./stage/PIPELINE-STAGE.md", overwrite: true });
      expect(step("git-commit").config.path).toBe("./stage");
      expect(step("git-push")).toEqual({
        uses: "git-push",
        as: "push",
        config: { path: "./stage", targetBranch: "stage/${{ ctx.stage }}" },
      });
      expect(step("argocd-update").config.apps[0].sources).toEqual([
        { repoURL: "${{ vars.repoURL }}", desiredRevision: "${{ quote(task.outputs.push.commit) }}" },
      ]);
    });

    it("never writes to the branch the Warehouse watches: every write and the push are in the stage branch's checkout", () => {
      const watched = ofKind("Warehouse")[0]!.spec.subscriptions[0].git.branch as string;
      for (const s of steps()) {
        expect(JSON.stringify(s.config)).not.toContain(`"${watched}"`);
        if (["git-clear", "yaml-update", "file-write", "git-commit", "git-push"].includes(s.uses))
          expect(s.config.path).toMatch(/^\.\/stage(\/|$)/);
      }
      expect(step("copy").config.outPath).toMatch(/^\.\/stage\//);
      expect(step("git-push").config.targetBranch).not.toBe(watched);
    });

    it("quotes every expression that is a commit ID on its own, so Kargo never turns one into a number", () => {
      const strings: string[] = [];
      const visit = (v: unknown): void => {
        if (typeof v === "string") strings.push(v);
        else if (v && typeof v === "object") Object.values(v).forEach(visit);
      };
      visit(objects);
      const whole = strings.filter((t) => /^\$\{\{.*\}\}$/.test(t) && /commitFrom|\.commit\b/.test(t));
      // git-clone's commit, yaml-update's value, argocd-update's revision, each stage's verification arg.
      expect(whole.length).toBe(3 + environmentStageNames(pipeline).length);
      for (const t of whole) expect(t).toMatch(/^\$\{\{ quote\(.*\) \}\}$/);
    });

    it("is what every environment stage runs, and syncs exactly that stage's Application, tracking its branch", () => {
      const task = ofKind("PromotionTask")[0]!;
      const app = step("argocd-update").config.apps[0];
      for (const s of pipeline.stages.filter((s) => s.kind !== "gate")) {
        expect(stage(s.name).spec.promotionTemplate.spec.steps).toEqual([
          { task: { kind: "PromotionTask", name: task.metadata.name } },
        ]);
        const appName = app.name
          .replace("${{ ctx.project }}", pipeline.project)
          .replace("${{ ctx.stage }}", s.name);
        const application = ofKind("Application").find((a) => a.metadata.name === appName);
        expect(application, appName).toBeDefined();
        expect(application!.metadata.annotations["kargo.akuity.io/authorized-stage"]).toBe(
          `${pipeline.project}:${s.name}`,
        );
        expect(application!.spec.source).toEqual({
          repoURL: pipeline.source.repoURL,
          targetRevision: `stage/${s.name}`,
          path: ".",
          directory: { include: `${s.name}.yaml` },
        });
        expect(fs.existsSync(path.join(repoRoot, "stacks", `${s.name}.yaml`))).toBe(true);
      }
    });
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

    it("polls Pulumi Cloud for the stage's stack with the documented endpoints and Accept header", () => {
      const { "pulumi-update": update, "pulumi-preview-protected": preview } = templates();
      expect(update.metrics[0].provider.web.url).toBe(
        `{{args.api-url}}/api/stacks/{{args.organization}}/{{args.project}}/{{args.stack}}/updates?pageSize=${pipeline.verification.pageSize}&page=1`,
      );
      expect(preview.metrics[0].provider.web.url).toBe(
        `{{args.api-url}}/api/stacks/{{args.organization}}/{{args.project}}/{{args.stack}}/updates/latest/previews?asc=false&pageSize=${pipeline.verification.pageSize}&page=1`,
      );
      for (const t of [update, preview]) {
        // The whole answer is each measurement's value: only the latest is kept per metric.
        expect(t.measurementRetention).toEqual([{ metricName: ".*", limit: 1 }]);
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

    // The conditions themselves are evaluated by expr-lang in verification.test.ts.
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
      // No admin password or token signing key is generated (the webhook's secret is, webhook.test.ts).
      expect(
        ofType(plan, "random:index/randomPassword:RandomPassword").filter((r) => r.name.startsWith("kargo-")),
      ).toEqual([]);
      expect(plan.outputs).not.toHaveProperty("kargoAdminPassword");
      expect(plan.upstream.secretOutputNames).toEqual(["githubWebhookSecret"]);

      // Asked for, it has a generated password, short-lived tokens, and the password is a secret output.
      const withAdmin = await planProject("kargo", { "kargo:kargoAdminAccount": true });
      const adminValues = (one(withAdmin, "kubernetes:helm.sh/v3:Release").inputs.values as any).api;
      expect(adminValues.adminAccount).toEqual({
        enabled: true,
        passwordHash: "[secret]",
        tokenSigningKey: "[secret]",
        tokenTTL: "1h",
      });
      expect(withAdmin.upstream.secretOutputNames.sort()).toEqual([
        "githubWebhookSecret",
        "kargoAdminPassword",
      ]);
    });

    it("signs in with a public Cognito client, the same for UI and CLI, admins by group claim", () => {
      const client = one(plan, "aws:cognito/userPoolClient:UserPoolClient").inputs;
      const host = plan.outputs.kargoLoadBalancerHostname;
      expect(client).toMatchObject({
        userPoolId: setup.outputs.cognitoUserPoolId,
        generateSecret: false,
        allowedOauthFlows: ["code"],
        allowedOauthScopes: ["openid", "email", "profile"],
        callbackUrls: [`https://${host}/login`, "http://localhost:8085/auth/callback"],
        logoutUrls: [`https://${host}/login`],
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
        users: { claims: { "cognito:groups": namedGroups(pipeline) } },
      });
    });

    it("is reached through a network load balancer on the API's node port, in every zone of the nodes", () => {
      expect(one(plan, "aws:lb/loadBalancer:LoadBalancer").inputs).toMatchObject({
        loadBalancerType: "network",
        internal: false,
        // One public subnet per zone; the nodes' private subnets are in the same zones.
        subnets: setup.outputs.publicSubnetIds,
        enableCrossZoneLoadBalancing: true,
      });
      expect((setup.outputs.publicSubnetIds as string[]).length).toBeGreaterThan(1);
      expect(values().api.service).toEqual({ type: "NodePort", nodePort: 30443 });
      expect(one(plan, "aws:lb/targetGroup:TargetGroup", "kargo").inputs).toMatchObject({
        port: 30443,
        targetType: "instance",
      });
      expect(plan.outputs.kargoUrl).toBe(`https://${plan.outputs.kargoLoadBalancerHostname}`);
    });

    it("spans fewer zones only when asked to", async () => {
      const oneZone = await planProject("kargo", { "kargo:kargoLoadBalancerZones": 1 });
      expect(one(oneZone, "aws:lb/loadBalancer:LoadBalancer").inputs.subnets).toEqual(
        (setup.outputs.publicSubnetIds as string[]).slice(0, 1),
      );
    });

    it("uses a configured hostname for the host and the callback instead", async () => {
      const named = await planProject("kargo", { "kargo:kargoHostname": "kargo.example.com" });
      expect((one(named, "kubernetes:helm.sh/v3:Release").inputs.values as any).api.host).toBe(
        "kargo.example.com",
      );
      expect(one(named, "aws:cognito/userPoolClient:UserPoolClient").inputs.callbackUrls).toEqual([
        "https://kargo.example.com/login",
        "http://localhost:8085/auth/callback",
      ]);
    });
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

  it("holds exactly the templates the pipeline generates (run `npm run stacks` after editing kargo/pipeline.ts)", () => {
    const expected = renderStacks(pipeline);
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".yaml"))
        .sort(),
    ).toEqual([...expected.keys()].sort());
    for (const [file, content] of expected) {
      expect(fs.readFileSync(path.join(dir, file), "utf8"), file).toBe(content);
    }
  });

  const manifests = () =>
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .map((f) => YAML.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Obj);

  it("previews refresh like their update, never destroy anything, and preview the stack their update deploys", () => {
    for (const s of pipeline.stages.filter((s) => s.kind === "preview")) {
      const previewStack = manifests().find((m) => m.metadata.name === `infra-${s.name}`)!;
      const updateStage = pipeline.stages.find(
        (u) => u.kind === "update" && u.environment === s.environment,
      )!;
      const updateStack = manifests().find((m) => m.metadata.name === `infra-${updateStage.name}`)!;
      expect(previewStack.spec).toMatchObject({ preview: true, destroyOnFinalize: false });
      expect(previewStack.spec.stack).toBe(updateStack.spec.stack);
      expect(updateStack.spec).toMatchObject({ destroyOnFinalize: false });
      expect(updateStack.spec.preview).toBeUndefined();
      expect(previewStack.spec.refresh).toBe(updateStack.spec.refresh);
      expect(updateStack.spec.refresh).toBe(true);
    }
  });

  it("destroys on deletion only the update Stack of an environment marked ephemeral", () => {
    const [env, ...others] = Object.keys(definition.environments);
    const ephemeral = validatePipeline({
      ...definition,
      environments: {
        ...definition.environments,
        [env!]: { ...definition.environments[env!]!, ephemeral: true },
      },
    });
    for (const s of ephemeral.stages.filter((s) => s.kind !== "gate")) {
      const { destroyOnFinalize } = stackManifest(ephemeral, s).spec;
      expect(destroyOnFinalize, s.name).toBe(s.kind === "update" && s.environment === env);
    }
    expect(ephemeral.stages.some((s) => s.kind === "update" && s.environment === env)).toBe(true);
    expect(ephemeral.stages.some((s) => s.kind === "update" && others.includes(s.environment))).toBe(
      others.length > 0,
    );
  });

  it("runs every Stack under the IRSA ServiceAccount with the token Secret and a pinned slim image, without AWS keys", () => {
    for (const m of manifests()) {
      expect(m.metadata.name.length).toBeLessThanOrEqual(42);
      expect(m.metadata.annotations["argocd.argoproj.io/sync-options"]).toBe("Prune=false,Delete=false");
      // Each environment's own identity for an update, the read-only one for a preview.
      const stage = pipeline.stages.find((s) => s.name === m.metadata.labels["app.kubernetes.io/instance"]);
      const suffix = stage!.kind === "preview" ? "preview" : (stage as { environment: string }).environment;
      expect(m.spec.serviceAccountName).toBe(`${setupDefaults.stackServiceAccount}-${suffix}`);
      expect(Object.keys(m.spec.envRefs)).toEqual(["PULUMI_ACCESS_TOKEN"]);
      expect(JSON.stringify(m)).not.toMatch(/AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY/);
      expect(m.spec.workspaceTemplate.spec.image).toMatch(/^pulumi\/pulumi-base:\d+\.\d+\.\d+$/);
      expect(m.spec.stack).toMatch(
        new RegExp(`^${pipeline.pulumi.organization}/${pipeline.pulumi.project}/`),
      );
      // Config comes from Pulumi.<stack>.yaml at the promoted commit, so it passes the gates with the program.
      expect(m.spec.config).toBeUndefined();
    }
  });

  it("sizes each workspace for the AWS provider, removes it after success, and gives uid 1000 a writable PULUMI_HOME", () => {
    for (const m of manifests()) {
      const ws = m.spec.workspaceTemplate.spec;
      expect(ws.securityProfile).toBe("restricted");
      expect(ws.resources).toEqual({
        requests: { cpu: "250m", memory: "640Mi" },
        limits: { memory: "1536Mi" },
      });
      expect(m.spec.workspaceReclaimPolicy).toBe("Delete");
      expect(ws.env).toEqual([{ name: "PULUMI_HOME", value: "/share/.pulumi" }]);
    }
  });

  it("never names a commit: only a promotion pins one, on the stage's branch, so nothing runs before it", () => {
    for (const m of manifests()) {
      // Empty: PKO refuses the template as it stands (`missing "commit" or "branch"`, v2.9.0 git.go).
      expect(m.spec.commit).toBe("");
      expect(m.spec.branch).toBeUndefined();
    }
    const everything = [...fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), "utf8"))];
    for (const text of everything) expect(text).not.toMatch(/0{40}/);
  });

  it("holds spec.commit as a scalar the promotion's yaml-update can replace", () => {
    // Kargo's yaml-update rewrites only a key path that reaches an existing scalar and fails the promotion
    // with "key path not found" otherwise (akuity/kargo v1.11.2 pkg/yaml/yaml.go, findScalarNode).
    const steps = promotionTaskSpec(validatePipeline(definition), "argocd").steps;
    const keys = steps
      .filter((s) => s.uses === "yaml-update")
      .flatMap((s) => (s.config as any).updates.map((u: any) => u.key));
    expect(keys).toEqual(["spec.commit"]);
    for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml"))) {
      const doc = YAML.parseDocument(fs.readFileSync(path.join(dir, file), "utf8"));
      for (const key of keys) {
        expect(YAML.isScalar(doc.getIn(key.split("."), true)), `${file}: ${key} is a scalar`).toBe(true);
      }
    }
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

  it("lists exact actions: no wildcard, no bucket policy, ACL or object writes that could make a bucket public", () => {
    const actions = [...programReadActions, ...programWriteActions];
    for (const action of actions) expect(action).toMatch(/^s3:[A-Za-z]+$/);
    for (const forbidden of [
      "s3:PutBucketPolicy",
      "s3:PutBucketAcl",
      "s3:PutObjectAcl",
      "s3:PutObjectVersionAcl",
      "s3:DeleteBucketPolicy",
      "s3:PutObject",
      "s3:PutAccessPointPolicy",
    ])
      expect(actions).not.toContain(forbidden);
    // The block the program declares is written with the one action that also removes it, so the README must
    // not promise that the role cannot undo it.
    expect(actions).toContain("s3:PutBucketPublicAccessBlock");
    const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain("The role can change its buckets' public-access block, even turn it off");
    expect(readme).not.toContain("cannot undo its own public-access block");
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
    const [env, { pulumiStack }] = Object.entries(pipeline.environments)[0]!;
    const dev = programPolicy(pipeline, env) as { Statement: any[] };
    const all = dev.Statement.flatMap((s) => s.Action);
    expect(new Set(all)).toEqual(new Set([...programReadActions, ...programWriteActions]));
    for (const statement of dev.Statement)
      expect(statement.Resource).toBe(`arn:aws:s3:::${pipeline.pulumi.project}-${pulumiStack}-*`);
    const managed = dev.Statement.find((s) => s.Sid === "ManageProgramBuckets");
    expect(managed.Condition).toEqual({ StringEquals: { "aws:ResourceAccount": "${aws:PrincipalAccount}" } });
    expect(dev.Statement.find((s) => s.Sid === "CreateProgramBuckets").Action).toEqual([
      "s3:CreateBucket",
      "s3:TagResource",
    ]);
    expect(() => programPolicy(pipeline, "no-such-env")).toThrow(/no environment "no-such-env"/);
  });

  it("lets previews read every environment's buckets and change nothing", () => {
    const preview = previewPolicy(pipeline) as { Statement: any[] };
    expect(preview.Statement).toHaveLength(1);
    expect(preview.Statement[0].Resource).toEqual(
      Object.values(pipeline.environments).map(
        (e) => `arn:aws:s3:::${pipeline.pulumi.project}-${e.pulumiStack}-*`,
      ),
    );
    for (const action of preview.Statement[0].Action) expect(programWriteActions).not.toContain(action);
  });
});
