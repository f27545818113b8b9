// The kargo project's pipeline objects as planned from kargo/pipeline.ts: Project, Stages and their wiring,
// joins, promotion policies, the Warehouse, stage branches, gate approvals and verification. Who may act and
// with what (approver roles, Applications, the plugin cache, credentials, each environment's identity) is
// kargo-access.test.ts's.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import { ancestors, programStageName, programStages, runStages, type GraphNode } from "../lib/pipeline/graph";
import { githubRepository, names, stackConfigFile } from "../lib/pipeline/names";
import { verificationScriptKey } from "../lib/pipeline/verification";
import { approvalKey, approvalTimeKey, freightPaths, stageSpec } from "../lib/pipeline/promotion";
import { riskPolicy, type Pipeline } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { repoRoot } from "../lib/cli/plan/projects";
import {
  declaredJoins,
  declaredUpdateOf,
  planKargo,
  programStageNames,
  programStagesOf,
  withExtraProgram,
  type Obj,
} from "./kargo-support";

describe("kargo project", () => {
  const pipeline: Pipeline = validatePipeline(definition);
  let plan: ProgramPlan;
  let ofKind: (kind: string) => Obj[];
  const stage = (name: string) => ofKind("Stage").find((s) => s.metadata.name === name)!;

  beforeAll(async () => {
    ({ plan, ofKind } = await planKargo());
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
          // A set to Kargo, rendered sorted (lib/pipeline/promotion.ts).
          stages: [...s.from].sort(),
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
      expect(rest, j.name).toEqual({ availabilityStrategy: "All" });
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
      expect(Object.keys(update.values).sort()).toEqual(
        [approvalKey(s.name), approvalTimeKey(s.name)].sort(),
      );
      expect(update.values[approvalKey(s.name)]).toContain("ctx.meta.promotion.actor");
      expect(update.values[approvalTimeKey(s.name)]).toContain("now()");
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
      // Every arg without a default is passed; a preview's policy args have a default ("") they may leave.
      expect(passed).toEqual(expect.arrayContaining(required));
      const used = [...JSON.stringify(template.spec).matchAll(/\{\{\s*args\.([\w-]+)\s*\}\}/g)].map(
        (m) => m[1],
      );
      expect(declared.map((a) => a.name)).toEqual(expect.arrayContaining([...new Set(used)]));
    }
    const commit = `\${{ quote(commitFrom("${pipeline.source.repoURL}").ID) }}`;
    for (const s of programStages(pipeline)) {
      const program = pipeline.programs.find((x) => x.name === s.program)!;
      const args = stage(s.name).spec.verification.args as { name: string; value: string }[];
      // A preview also carries its environment's policy: what stops it, who decides, where they approve.
      const policy = riskPolicy(pipeline.environments[s.environment]!);
      const update = pipeline.stages.find((u) => u.kind === "update" && u.environment === s.environment)!;
      const stops = policy.stopOn === "all" || policy.stopOn.length > 0;
      expect(Object.fromEntries(args.map((a) => [a.name, a.value])), s.name).toEqual({
        project: program.project,
        stack: pipeline.environments[s.environment]!.pulumiStack,
        commit,
        ...(s.kind === "preview" && stops
          ? {
              "stop-on": policy.stopOn === "all" ? "all" : policy.stopOn.join(","),
              deciders: policy.deciders.join(","),
              "approve-stage": `${update.name}-${s.program}`,
            }
          : {}),
      });
      expect(stage(s.name).spec.verification.analysisTemplates, s.name).toEqual([
        { kind: "AnalysisTemplate", name: s.kind === "update" ? "pulumi-update" : "pulumi-preview" },
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
      // Every module of kargo/verification the Job imports, each as committed.
      const modules = fs
        .readdirSync(path.join(repoRoot, "kargo/verification"))
        .filter((f) => f.endsWith(".mjs"));
      expect(Object.keys(script!.data).sort()).toEqual([...modules].sort());
      expect(verificationScriptKey in script!.data).toBe(true);
      for (const f of modules)
        expect(script!.data[f]).toBe(fs.readFileSync(path.join(repoRoot, "kargo/verification", f), "utf8"));
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
});
