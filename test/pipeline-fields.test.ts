// Single fields of kargo/pipeline.ts as the schema reads them: what each accepts, what a careless value gets
// told, and the defaults a field left out takes.
import { describe, expect, it } from "vitest";
import { githubRepository } from "../lib/pipeline/names";
import { PULUMI_CLOUD_API, isProtected, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  base,
  firstEnv,
  problemsOf,
  withEnvironments,
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
      "a protected environment that names no destructive-change approvers",
      withEnvironments({ [firstEnv]: { pulumiStack: base.environments[firstEnv]!.pulumiStack } }),
      new RegExp(
        `environment "${firstEnv}": is protected; destructiveChangeApprovers must name the Cognito groups`,
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
      "an organization and project as the Pulumi project",
      withPulumi({ project: `acme/${base.pulumi.project}` }),
      /pulumi\.project: must be a Pulumi project name/,
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
    [
      "no include paths",
      withSource({ includePaths: [] }),
      /source\.includePaths: must list the promoted program's files/,
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
    ["several include paths", withSource({ includePaths: ["Pulumi.yaml", "glob:*.ts"] })],
    ["a page size of 100", withVerification({ pageSize: 100 })],
    ["the smallest plugin cache, 2 GiB", withStacks({ pluginCacheGiB: 2 })],
    ["the largest plugin cache, 64 GiB", withStacks({ pluginCacheGiB: 64 })],
  ];
  it.each(accepted)("accepts %s", (_, input) => {
    expect(() => validatePipeline(input)).not.toThrow();
  });
});

describe("defaults of the fields left out", () => {
  const without = <T extends object>(o: T, ...keys: (keyof T)[]) =>
    Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k as keyof T))) as T;
  const source = without(base.source, "excludePaths", "programDir");
  const stacks = without(base.stacks, "dir");
  const pulumi = without(base.pulumi, "apiUrl", "selfHostedApiUrl");
  const environments = Object.fromEntries(
    Object.entries(base.environments).map(([name, { pulumiStack, destructiveChangeApprovers }]) => [
      name,
      { pulumiStack, destructiveChangeApprovers },
    ]),
  );
  const p = validatePipeline({ ...base, source, stacks, pulumi, environments, verification: {} });

  it("excludes nothing from the Freight and finds the program at the root and the Stacks in stacks/", () => {
    expect(p.source.excludePaths).toEqual([]);
    expect(p.source.programDir).toBe(".");
    expect(p.stacks.dir).toBe("stacks");
  });

  it("sends the verification token to Pulumi Cloud's own API only", () => {
    expect(p.pulumi.apiUrl).toBe(PULUMI_CLOUD_API);
    expect(p.pulumi.selfHostedApiUrl).toBeUndefined();
  });

  it("keeps every environment (not ephemeral) and protects it from destructive changes", () => {
    for (const env of Object.values(p.environments)) {
      expect(env.ephemeral).toBe(false);
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
