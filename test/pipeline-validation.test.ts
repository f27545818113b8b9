import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as defaultPipeline } from "../kargo/pipeline";
import { MAX_STACK_NAME, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { planError } from "./helpers";
import { escaped, firstProgram, removeTempDirs, tempRepo } from "./pipeline-support";

type StageInput = PipelineInput["stages"][number];
const gate = (name: string, from: StageInput["from"], approvers = ["qa-approvers"]): StageInput => ({
  name,
  kind: "gate",
  from,
  approvers,
});
const preview = (name: string, environment: string, from: string[]): StageInput => ({
  name,
  kind: "preview",
  environment,
  from,
});
const update = (name: string, environment: string, from: StageInput["from"]): StageInput => ({
  name,
  kind: "update",
  environment,
  from,
});
/**
 * The rules are tried on environments of their own, in a checkout of their own holding each program's
 * Pulumi.<stack>.yaml for each, so that they hold whatever kargo/pipeline.ts declares.
 */
const environments: PipelineInput["environments"] = {
  dev: { pulumiStack: "dev", destructiveChangeApprovers: ["qa-approvers"] },
  dev2: { pulumiStack: "dev2", destructiveChangeApprovers: ["qa-approvers"] },
  qa: { pulumiStack: "qa", destructiveChangeApprovers: ["qa-approvers"] },
};
let checkout = "";
beforeAll(() => {
  checkout = tempRepo(undefined, environments);
});
afterAll(removeTempDirs);
// The program whose Stacks get the longest names, and a stage name that makes one a character too long.
const longestName = defaultPipeline.programs
  .map((x) => x.name)
  .reduce((a, b) => (b.length > a.length ? b : a));
const tooLong = "d".repeat(MAX_STACK_NAME + 1 - `${defaultPipeline.project}--${longestName}`.length);
const withStages = (stages: StageInput[]): PipelineInput => ({ ...defaultPipeline, environments, stages });
const problemsOf = (input: unknown): string => {
  try {
    validatePipeline(input, { repoRoot: checkout });
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the pipeline was accepted");
};

describe("the pipeline definition", () => {
  it("accepts kargo/pipeline.ts, whose every update stage has a gate and a preview before it", () => {
    const p = validatePipeline(defaultPipeline);
    expect(p.stages.some((s) => s.kind === "gate")).toBe(true);
    expect(p.stages.some((s) => s.kind === "update")).toBe(true);
  });

  it("accepts a pipeline of the rules' own environments", () => {
    const stages = [
      gate("gate", "warehouse"),
      ...Object.keys(environments).flatMap((env) => [
        preview(`${env}preview`, env, ["gate"]),
        update(env, env, [`${env}preview`]),
      ]),
    ];
    expect(validatePipeline(withStages(stages), { repoRoot: checkout }).stages).toHaveLength(7);
  });

  const cases: [string, PipelineInput, RegExp][] = [
    ["an empty pipeline", withStages([]), /pipeline: has no stages/],
    [
      "a duplicate name",
      withStages([
        gate("gate", "warehouse"),
        update("dev", "dev", ["gate"]),
        update("gate", "dev2", ["gate"]),
      ]),
      /stage "gate": the name is used by 2 stages/,
    ],
    [
      "an unknown upstream",
      withStages([gate("gate", "warehouse"), update("dev", "dev", ["gat"])]),
      /stage "dev": upstream stage "gat" does not exist/,
    ],
    [
      "a cycle",
      withStages([
        gate("gate", "warehouse"),
        update("dev", "dev", ["gate", "qa"]),
        update("qa", "qa", ["dev"]),
      ]),
      /stages "dev" -> "qa" -> "dev": form a cycle|stages "qa" -> "dev" -> "qa": form a cycle/,
    ],
    [
      "a stage only a cycle feeds",
      withStages([
        gate("gate", "warehouse"),
        gate("a", ["b"]),
        gate("b", ["a"]),
        update("dev", "dev", ["a"]),
      ]),
      /stage "dev": is not reachable from the Warehouse/,
    ],
    [
      "a name that is not a DNS label",
      withStages([gate("Gate_1", "warehouse"), update("dev", "dev", ["Gate_1"])]),
      /stage "Gate_1": the name must be a DNS label/,
    ],
    [
      `a Stack name over ${MAX_STACK_NAME} characters`,
      withStages([
        gate("gate", "warehouse"),
        ...Object.keys(environments).flatMap((env) => [
          preview(`${env}preview`, env, ["gate"]),
          update(env === "dev" ? tooLong : env, env, [`${env}preview`]),
        ]),
      ]),
      new RegExp(
        `stage "${tooLong}" \\(program "${escaped(longestName)}"\\): its PKO Stack would be named "${escaped(`${defaultPipeline.project}-${tooLong}-${longestName}`)}" \\(${MAX_STACK_NAME + 1} characters\\); PKO allows ${MAX_STACK_NAME}`,
      ),
    ],
    [
      "a gate without approvers",
      withStages([gate("gate", "warehouse", []), update("dev", "dev", ["gate"])]),
      /stage "gate": a gate needs at least one approver group/,
    ],
    [
      "a preview without its update stage",
      withStages([
        gate("gate", "warehouse"),
        preview("qapreview", "qa", ["gate"]),
        update("dev", "dev", ["gate"]),
      ]),
      /stage "qapreview": previews environment "qa", which no update stage deploys/,
    ],
    [
      "an unknown environment",
      withStages([gate("gate", "warehouse"), update("prod", "prod", ["gate"])]),
      /stage "prod": environment "prod" is not defined; defined environments: dev, dev2, qa/,
    ],
    [
      "pulumi up with no gate before it",
      withStages([update("dev", "dev", "warehouse")]),
      /stage "dev": runs pulumi up with no approval gate upstream/,
    ],
    [
      "two update stages for one environment",
      withStages([
        gate("gate", "warehouse"),
        update("dev", "dev", ["gate"]),
        update("dev-again", "dev", ["gate"]),
      ]),
      /stages "dev", "dev-again": update the same environment "dev"/,
    ],
    [
      "requireAll with one upstream",
      withStages([gate("gate", "warehouse"), { ...update("dev", "dev", ["gate"]), requireAll: true }]),
      /stage "dev": requireAll needs at least two upstream stages/,
    ],
    [
      "a misspelt field",
      withStages([
        { name: "gate", kind: "gate", from: "warehouse", aprovers: ["qa"] } as unknown as StageInput,
      ]),
      /stage "gate": Invalid input: expected array, received undefined|Unrecognized key: "aprovers"/,
    ],
    [
      "an unknown stage kind",
      withStages([{ name: "gate", kind: "approval", from: "warehouse" } as unknown as StageInput]),
      /stage "gate" \(kind\): Invalid discriminator value/,
    ],
    [
      "a repository that is not HTTPS",
      { ...defaultPipeline, source: { ...defaultPipeline.source, repoURL: "git@github.com:acme/infra.git" } },
      /source.repoURL: must be an HTTPS git URL/,
    ],
    [
      "a workspace image without a pinned tag",
      {
        ...defaultPipeline,
        programs: defaultPipeline.programs.map((x, i) =>
          i === 0 ? { ...x, workspaceImage: "pulumi/pulumi" } : x,
        ),
      },
      new RegExp(
        `programs\\.${escaped(firstProgram.name)}\\.workspaceImage: must be an image with a pinned tag`,
      ),
    ],
    ...(
      [
        ["a plugin cache too small for one AWS provider and the next", 1],
        ["a plugin cache in fractions of a GiB", 2.5],
        ["a plugin cache beyond the bound", 65],
        ["a negative plugin cache", -1],
        ["a plugin cache size given as a quantity", "4Gi"],
      ] as const
    ).map(([title, pluginCacheGiB]): [string, PipelineInput, RegExp] => [
      title,
      // A size the type allows only as a number; the string case is what a hand edit could still write.
      { ...defaultPipeline, stacks: { ...defaultPipeline.stacks, pluginCacheGiB: pluginCacheGiB as number } },
      /stacks\.pluginCacheGiB: must be 0 \(no plugin cache\) or a whole number of GiB from 2 \(one AWS provider and the next during an upgrade\) to 64/,
    ]),
    [
      "workspace memory that is not a Kubernetes quantity",
      {
        ...defaultPipeline,
        stacks: {
          ...defaultPipeline.stacks,
          workspaceResources: { requests: { cpu: "250m", memory: "640MB" }, limits: { memory: "1536Mi" } },
        },
      },
      /stacks.workspaceResources.requests.memory: must be a Kubernetes quantity such as "250m" or "640Mi"/,
    ],
    [
      "an environment with config in the pipeline instead of its Pulumi.<stack>.yaml",
      {
        ...defaultPipeline,
        environments: { dev: { pulumiStack: "dev", config: { "aws:region": "us-west-2" } } },
      } as unknown as PipelineInput,
      /environments.dev: Unrecognized key: "config"/,
    ],
  ];
  it.each(cases)("rejects %s, naming the stage and the problem", (_, input, message) => {
    const problems = problemsOf(input);
    expect(problems).toMatch(/^Invalid pipeline definition:/);
    expect(problems).toMatch(message);
  });

  it("reports every problem at once", () => {
    const problems = problemsOf(
      withStages([gate("gate", "warehouse", []), update("prod", "prod", ["nowhere"])]),
    );
    expect(problems).toMatch(/a gate needs at least one approver group/);
    expect(problems).toMatch(/environment "prod" is not defined/);
    expect(problems).toMatch(/upstream stage "nowhere" does not exist/);
  });
});

describe("the kargo program", () => {
  it("rejects bad config before registering anything", async () => {
    const error = await planError("kargo", { "kargo:kargoHostname": "https://kargo.example.com" });
    expect(error.message).toMatch(
      /kargo:kargoHostname: must be a DNS name such as kargo\.example\.com: .*no scheme or port/,
    );
  });
  it("requires the git token as a secret", async () => {
    const error = await planError("kargo", { "kargo:gitToken": "" });
    expect(error.message).toMatch(/kargo:gitToken: must be set: pulumi config set --secret gitToken/);
  });
});
