// Environments one of which would reach another's resources by name are refused by the pipeline's own
// check (lib/pipeline/check-reach.ts), so `pulumi up` of kargo and `npm run plan` stop before anything is
// registered: an environment whose stack name is another's followed by "-" (`dev-x` beside `dev`) names
// its resources inside the other's pattern, `<project>-<pulumiStack>-*`. Names from kargo/pipeline.ts.
import { afterEach, describe, expect, it } from "vitest";
import { resourceNameProblems } from "../lib/pipeline/check-reach";
import { MAX_ENVIRONMENTS, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  base,
  basePipeline,
  escaped,
  firstEnv,
  firstGate,
  firstStack,
  linesOf,
  problemsOf,
  removeTempDirs,
  tempRepo,
} from "./pipeline-support";

afterEach(removeTempDirs);

/** The definition with one more environment after the first gate, and a checkout holding its stack files. */
function withEnvironment(name: string, pulumiStack: string): { input: PipelineInput; repo: string } {
  const environments = {
    ...base.environments,
    [name]: { ...base.environments[firstEnv]!, pulumiStack },
  };
  const input: PipelineInput = {
    ...base,
    environments,
    stages: [
      ...base.stages,
      { name: `${name}preview`, kind: "preview", environment: name, from: [firstGate.name] },
      { name, kind: "update", environment: name, from: [`${name}preview`] },
    ],
  };
  return { input, repo: tempRepo(undefined, environments) };
}

const projects = basePipeline.programs.map((x) => x.project);

describe("environments whose resource names another's identity may reach", () => {
  it("refuses one whose stack is another's followed by '-', naming both, the field and what is allowed", () => {
    const added = `${firstEnv}-x`;
    const { input, repo } = withEnvironment(added, `${firstStack}-x`);
    const lines = linesOf(problemsOf(input, repo));
    const mine = lines.filter((l) => l.startsWith(`environments.${added}.pulumiStack: `));
    expect(mine, lines.join("\n")).toHaveLength(1);
    expect(mine[0]).toMatch(
      new RegExp(
        `^environments\\.${escaped(added)}\\.pulumiStack: "${escaped(firstStack)}-x" names its resources (${projects.map(escaped).join("|")})-${escaped(firstStack)}-x-… .*inside (${projects.map(escaped).join("|")})-${escaped(firstStack)}-\\*, the pattern environment "${escaped(firstEnv)}"'s identity is allowed .*allowed: a pulumiStack .* not start with "${escaped(firstStack)}-", such as "${escaped(firstStack)}x"`,
      ),
    );
  });

  it("accepts the same environment under a stack no other's pattern covers", () => {
    const { input, repo } = withEnvironment(`${firstEnv}-x`, `${firstStack}x`);
    expect(() => validatePipeline(input, { repoRoot: repo })).not.toThrow();
  });

  it("refuses a pattern of one program's project that covers another program's resources in another environment", () => {
    // Project zz in stack b-c names its resources as project zz-b does in stack c: zz-b-c-…, either way.
    const programs = [
      { name: "one", project: "zz" },
      { name: "two", project: "zz-b" },
    ];
    const environments = { e1: { pulumiStack: "b-c" }, e2: { pulumiStack: "c" } };
    const problems = resourceNameProblems({ ...basePipeline, environments } as never, programs);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^environments\.(e1|e2)\.pulumiStack: "(b-c|c)" names its resources zz-b-c-… \(program "(one|two)"\), inside zz-b-c-\*, the pattern environment "(e1|e2)"'s identity is allowed/,
    );
    expect(problems[0]).toMatch(/environments\.e1\b[^]*"e2"|environments\.e2\b[^]*"e1"/);
  });

  it("accepts stack names that share a beginning without the '-': as many as the schema allows", () => {
    // e1 and e10, dev and dev2: infra-bucket-e1-* does not cover infra-bucket-e10-….
    const environments = Object.fromEntries(
      Array.from({ length: MAX_ENVIRONMENTS }, (_, i) => [`e${i}`, { pulumiStack: `e${i}` }]),
    );
    expect(resourceNameProblems({ ...basePipeline, environments } as never, basePipeline.programs)).toEqual(
      [],
    );
    expect(resourceNameProblems(basePipeline, basePipeline.programs)).toEqual([]);
  });
});
