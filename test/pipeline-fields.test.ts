// Single fields of kargo/pipeline.ts as the schema reads them: what each accepts, what a careless value gets
// told, and the defaults a field left out takes.
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import YAML from "yaml";
import { defaultRepoRoot } from "../lib/pipeline/check-repository";
import { githubRepository } from "../lib/pipeline/names";
import {
  DEFAULT_STOP_ON,
  PULUMI_CLOUD_API,
  WORKSPACE_IMAGES,
  isProtected,
  riskPolicy,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  base,
  basePipeline,
  escaped,
  firstEnv,
  firstProgram,
  removeTempDirs,
  tempRepo,
  problemsOf,
  withEnvironments,
  withFirstProgram,
  withSource,
  withStacks,
  withVerification,
} from "./pipeline-support";

const withPulumi = (pulumi: Partial<PipelineInput["pulumi"]>): PipelineInput => ({
  ...base,
  pulumi: { ...base.pulumi, ...pulumi },
});
const withResources = (
  requests: { cpu: string; memory: string },
  limits: { memory: string },
): PipelineInput => withStacks({ workspaceResources: { requests, limits } });
const { requests, limits } = base.stacks.workspaceResources;

describe("field values", () => {
  const refused: [string, PipelineInput, RegExp][] = [
    [
      "an environment that stops on something and names no deciders",
      withEnvironments({ [firstEnv]: { pulumiStack: base.environments[firstEnv]!.pulumiStack } }),
      new RegExp(
        `environments\\.${firstEnv}\\.deciders: stops on ${DEFAULT_STOP_ON.join(", ")}; deciders must name the Cognito groups`,
      ),
    ],
    [
      "a negative CPU request",
      withResources({ ...requests, cpu: "-250m" }, limits),
      /stacks\.workspaceResources\.requests\.cpu: must be a Kubernetes quantity such as "250m" or "640Mi"/,
    ],
    [
      "a memory limit in megabytes",
      withResources(requests, { memory: "1536MB" }),
      /stacks\.workspaceResources\.limits\.memory: must be a Kubernetes quantity/,
    ],
    [
      "a duration spelt out in minutes",
      withVerification({ previewTimeout: "15min" }),
      /verification\.previewTimeout: must be a duration such as "10s", "5m" or "1h"/,
    ],
    [
      "a negative initial delay",
      withVerification({ initialDelay: "-5m" }),
      /verification\.initialDelay: must be a duration such as "10s", "5m" or "1h"/,
    ],
    [
      "an environment's whole stack path as its Pulumi stack",
      withEnvironments({
        [firstEnv]: { ...base.environments[firstEnv]!, pulumiStack: `acme/infra/${firstEnv}` },
      }),
      new RegExp(`environments\\.${firstEnv}\\.pulumiStack: must be a Pulumi stack name`),
    ],
    [
      "a Pulumi organization with a space",
      withPulumi({ organization: "acme corp" }),
      /pulumi\.organization: must be a Pulumi organization name/,
    ],
    [
      "a repository URL as package.json writes it",
      withSource({ repoURL: "git+https://github.com/acme/infra.git" }),
      /source\.repoURL: must be an HTTPS git URL/,
    ],
    [
      "a repository URL followed by a branch",
      withSource({ repoURL: "https://github.com/acme/infra.git main" }),
      /source\.repoURL: must be an HTTPS git URL/,
    ],
    [
      "a repository URL holding a token",
      withSource({ repoURL: "https://x-access-token:ghp_secret@github.com/acme/infra.git" }),
      /source\.repoURL: must be an HTTPS git URL/,
    ],
    ["no programs", { ...base, programs: [] }, /programs: must list at least one promoted program/],
    [
      "a program without a folder",
      withFirstProgram({ dir: "" }),
      new RegExp(
        `programs\\.${firstProgram.name}\\.dir: must be the program's folder, such as "programs/network"`,
      ),
    ],
    [
      "an empty include path",
      withFirstProgram({ includePaths: [""] }),
      new RegExp(`programs\\.${firstProgram.name}\\.includePaths\\.0: Too small`),
    ],
    [
      "a program's memory limit in megabytes",
      withFirstProgram({ resources: { requests, limits: { memory: "1536MB" } } }),
      new RegExp(
        `programs\\.${firstProgram.name}\\.resources\\.limits\\.memory: must be a Kubernetes quantity`,
      ),
    ],
    [
      "an empty approver group",
      { ...base, stages: base.stages.map((s) => (s.kind === "gate" ? { ...s, approvers: [""] } : s)) },
      /stage "[^"]+" \(approvers\.0\): Too small/,
    ],
    [
      "a stage with an empty upstream list",
      { ...base, stages: base.stages.map((s) => (s.from === "warehouse" ? s : { ...s, from: [] })) },
      /stage "[^"]+" \(from\): must name at least one upstream stage/,
    ],
    [
      "a namespace ending in a hyphen",
      withStacks({ namespace: "pulumi-stacks-" }),
      /stacks\.namespace: must be a DNS label/,
    ],
    [
      "a namespace starting with a capital",
      withStacks({ namespace: "Pulumi-stacks" }),
      /stacks\.namespace: must be a DNS label/,
    ],
    [
      "a page size over what Pulumi Cloud serves",
      withVerification({ pageSize: 101 }),
      /verification\.pageSize: Too big: expected number to be <=100/,
    ],
    ["a page size of 0", withVerification({ pageSize: 0 }), /verification\.pageSize: Too small/],
  ];
  it.each(refused)("refuses %s, naming the field and what it must be", (_, input, message) => {
    expect(problemsOf(input)).toMatch(message);
  });

  const accepted: [string, PipelineInput][] = [
    [
      "a CPU request in whole cores and a limit in Gi",
      withResources({ ...requests, cpu: "1" }, { memory: "2Gi" }),
    ],
    ["durations in hours", withVerification({ interval: "1h", previewTimeout: "2h", updateTimeout: "24h" })],
    ["a one-letter namespace", withStacks({ namespace: "a" })],
    ["several include paths", withFirstProgram({ includePaths: ["zz-test-shared", "glob:zz-test/*.ts"] })],
    ["a page size of 100", withVerification({ pageSize: 100 })],
    ["the smallest plugin cache, 2 GiB", withStacks({ pluginCacheGiB: 2 })],
    ["the largest plugin cache, 64 GiB", withStacks({ pluginCacheGiB: 64 })],
  ];
  it.each(accepted)("accepts %s", (_, input) => {
    expect(() => validatePipeline(input)).not.toThrow();
  });
});

describe("a program's Pulumi project, read from its Pulumi.yaml", () => {
  afterEach(removeTempDirs);
  it("refuses an organization and project as the project name, naming the file and what it must be", () => {
    const repo = tempRepo();
    const file = path.join(repo, firstProgram.dir, "Pulumi.yaml");
    const project = YAML.parse(fs.readFileSync(file, "utf8")) as { name: string };
    fs.writeFileSync(file, YAML.stringify({ ...project, name: `acme/${project.name}` }));
    expect(problemsOf(base, repo)).toMatch(
      new RegExp(
        `programs\\.${escaped(firstProgram.name)}\\.dir: ${escaped(firstProgram.dir)}/Pulumi\\.yaml must name its project \\(name: letters, digits, "_", "\\.", "-"\\) and its runtime`,
      ),
    );
  });
  it("is the project of every stack of the program", () => {
    for (const x of basePipeline.programs) {
      const file = path.join(defaultRepoRoot, x.dir, "Pulumi.yaml");
      expect(x.project, x.name).toBe((YAML.parse(fs.readFileSync(file, "utf8")) as { name: string }).name);
    }
  });
});

describe("defaults of the fields left out", () => {
  const without = <T extends object>(o: T, ...keys: (keyof T)[]) =>
    Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k as keyof T))) as T;
  const source = without(base.source, "excludePaths");
  const programs = base.programs.map((x) =>
    without(x, "dependsOn", "includePaths", "workspaceImage", "resources"),
  );
  const stacks = without(base.stacks, "dir");
  const pulumi = without(base.pulumi, "apiUrl", "selfHostedApiUrl");
  // Each environment with its stack and deciders alone, whatever names it was written with (the older
  // destructiveChangeApprovers, or an environment that stops for nothing and has none): as the pipeline
  // reads them, or a made-up group where it reads none, which the default stop needs.
  const environments = Object.fromEntries(
    Object.entries(basePipeline.environments).map(([name, env]) => {
      const { deciders } = riskPolicy(env);
      return [
        name,
        { pulumiStack: env.pulumiStack, deciders: deciders.length > 0 ? deciders : ["zz-deciders"] },
      ];
    }),
  );
  const p = validatePipeline({ ...base, source, programs, stacks, pulumi, environments, verification: {} });

  it("excludes nothing from the Freight, adds nothing to a program's folder, and finds the Stacks in stacks/", () => {
    expect(p.source.excludePaths).toEqual([]);
    for (const x of p.programs) expect(x.includePaths, x.name).toEqual([]);
    expect(p.stacks.dir).toBe("stacks");
  });

  it("runs each program on its own, in its runtime's workspace image, with the stacks' workspace resources", () => {
    expect(p.programs.map((x) => x.name)).toEqual(base.programs.map((x) => x.name));
    for (const x of p.programs) {
      expect(x.dependsOn, x.name).toEqual([]);
      expect(x.workspaceImage, x.name).toBe(WORKSPACE_IMAGES[x.runtime]);
      expect(x.resources, x.name).toEqual(p.stacks.workspaceResources);
    }
  });

  it("sends the verification token to Pulumi Cloud's own API only", () => {
    expect(p.pulumi.apiUrl).toBe(PULUMI_CLOUD_API);
    expect(p.pulumi.selfHostedApiUrl).toBeUndefined();
  });

  it("keeps every environment (not ephemeral) and stops its Freight on loss, privilege and exposure", () => {
    for (const env of Object.values(p.environments)) {
      expect(env.ephemeral).toBe(false);
      expect(env.stopEveryPreview).toBe(false);
      expect(riskPolicy(env).stopOn).toEqual(["loss", "privilege", "exposure"]);
      expect(isProtected(env)).toBe(true);
    }
  });

  it("lets a stage take Freight from any one of its upstream stages", () => {
    const stage = without(
      base.stages.find((s) => s.from !== "warehouse")!,
      "requireAll",
    );
    const parsed = validatePipeline({
      ...base,
      stages: base.stages.map((s) => (s.name === stage.name ? stage : s)),
    });
    expect(parsed.stages.find((s) => s.name === stage.name)!.requireAll).toBe(false);
  });

  it("looks at Pulumi Cloud every 10 seconds, ten operations at a time", () => {
    expect(p.verification.pageSize).toBe(10);
    expect(p.verification).toMatchObject({ initialDelay: "10s", interval: "10s" });
  });
});

describe("the GitHub repository stage branches are created in", () => {
  it("is read from an https://github.com URL with or without .git", () => {
    for (const url of [
      "https://github.com/acme/infra.git",
      "https://github.com/acme/infra",
      "https://github.com/acme/infra/",
    ])
      expect(githubRepository(url)).toEqual({ owner: "acme", name: "infra" });
  });
  it("is refused for any other URL, naming source.repoURL", () => {
    for (const url of ["git+https://github.com/acme/infra.git", "https://github.com/acme/infra/tree/main"])
      expect(() => githubRepository(url)).toThrow(/source\.repoURL: .* is not a GitHub repository/);
  });
});
