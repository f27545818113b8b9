// `npm run plan` refuses a pipeline in which an identity may reach another environment's resources, in a
// fork's copy of this repository, planned in this process by the copy's own command (its
// lib/cli/plan/execute.ts, so the copy's kargo/pipeline.ts and programs are what is planned): an environment
// whose resources another's name pattern covers (`dev-x` beside `dev`) is refused by the pipeline's check in
// the kargo program, before anything of it is registered; a program's custom access that names no
// environment is refused by the IAM policy engine's answers, naming both environments and the statement.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { accountOf } from "../lib/pipeline/accounts";
import { policyResourceName } from "../lib/pipeline/access";
import { validatePipeline } from "../lib/pipeline/validate";
import { copyOfRepository, pipelineSourceOver } from "./repo-copy";

const pipeline = validatePipeline(definition);
const envs = Object.keys(pipeline.environments);
const [first] = envs as [string];
const firstStack = pipeline.environments[first]!.pulumiStack;
const withAws = pipeline.programs.find((x) => x.aws)!;

describe("npm run plan, on a fork whose identities would reach another environment's resources", () => {
  // A copy each: a plan command caches the example's upstream plans, made from the pipeline it first read.
  const copies = { nameInside: "", customAccess: "" };
  /** `npm run plan -- ARGS` of a copy, in this process. */
  const plan = async (copy: string, ...args: string[]) => {
    const { planCommand } = (await import(
      path.join(copy, "lib/cli/plan/execute.ts")
    )) as typeof import("../lib/cli/plan/execute");
    const printed = { stdout: "", stderr: "" };
    const code = await planCommand(args, {
      log: (text) => (printed.stdout += `${text}\n`),
      error: (text) => (printed.stderr += `${text}\n`),
    });
    return { code, ...printed };
  };
  beforeAll(async () => {
    for (const key of Object.keys(copies) as (keyof typeof copies)[]) {
      copies[key] = fs.mkdtempSync(path.join(os.tmpdir(), "plan-reach-"));
      await copyOfRepository(copies[key]);
    }
  });
  afterAll(() => {
    for (const copy of Object.values(copies)) if (copy) fs.rmSync(copy, { recursive: true, force: true });
  });

  /**
   * The copy's kargo/pipeline.ts: ours with environment `added` (stack `stack`, like the first one, behind the
   * first gate, its stack files copied from the first's) and `programs`, an expression over `ours.programs`.
   */
  const declare = (copy: string, added: string, stack: string, programs = "ours.programs") => {
    for (const x of pipeline.programs)
      fs.copyFileSync(
        path.join(copy, x.dir, `Pulumi.${firstStack}.yaml`),
        path.join(copy, x.dir, `Pulumi.${stack}.yaml`),
      );
    const gate = pipeline.stages.find((s) => s.kind === "gate" && s.from === "warehouse")!.name;
    fs.writeFileSync(
      path.join(copy, "kargo/pipeline.ts"),
      pipelineSourceOver(`{
        ...ours,
        programs: ${programs},
        environments: { ...ours.environments, ${JSON.stringify(added)}: { ...ours.environments[${JSON.stringify(first)}]!, pulumiStack: ${JSON.stringify(stack)} } },
        stages: [
          ...ours.stages,
          { name: ${JSON.stringify(`${added}preview`)}, kind: "preview", environment: ${JSON.stringify(added)}, from: [${JSON.stringify(gate)}] },
          { name: ${JSON.stringify(added)}, kind: "update", environment: ${JSON.stringify(added)}, from: [${JSON.stringify(`${added}preview`)}] },
        ],
      }`),
    );
  };

  it("refuses an environment named inside another's pattern (dev-x beside dev), naming both, writing nothing", async () => {
    const added = `${first}-x`;
    const stack = `${firstStack}-x`;
    const copy = copies.nameInside;
    declare(copy, added, stack);
    const out = path.join(copy, "plan-out");
    const result = await plan(copy, "--out", out);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `plan failed: project kargo: Invalid pipeline definition:\\n\\s+- environments\\.${added}\\.pulumiStack: "${stack}" names its resources .*environment "${first}"'s identity`,
      ),
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(fs.existsSync(out)).toBe(false);
  });

  it("refuses a program's access that names no environment, naming both environments and the statement", async () => {
    // The fork's own statement: the program's reports buckets, `<project>-reports-*`, in every environment;
    // beside the first environment one more under a name the pipeline's check accepts, so two share an account.
    const added = `${first}x`;
    const copy = copies.customAccess;
    declare(
      copy,
      added,
      `${firstStack}x`,
      `ours.programs.map((x) =>
        x.name === ${JSON.stringify(withAws.name)}
          ? {
              ...x,
              aws: {
                preview: x.aws!.preview,
                update: (scope) => [
                  ...x.aws!.update(scope),
                  {
                    Sid: "SharedReports",
                    Effect: "Allow",
                    Action: ["s3:PutObject"],
                    Resource: [\`arn:\${scope.partition}:s3:::\${scope.project}-reports-*/*\`],
                    Condition: { StringEquals: { "aws:ResourceAccount": "\${aws:PrincipalAccount}" } },
                  },
                ],
              },
            }
          : x,
      )`,
    );
    const out = path.join(copy, "plan-out");
    const result = await plan(copy, "--out", out);
    expect(result.stdout).not.toContain("plan written");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^plan refused: an identity of the plan may do what kargo\/pipeline\.ts does not give it/,
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
    // Every environment reaches every other one of its account, by that statement of its policy.
    const all = [...envs, added];
    const accountOfEnv = (e: string) => accountOf(pipeline.environments, e === added ? first : e);
    for (const env of all)
      for (const other of all.filter((e) => e !== env && accountOfEnv(e) === accountOfEnv(env)))
        expect(result.stderr).toContain(
          `reaches environment ${other}'s resources: statement SharedReports (kargo:${policyResourceName(withAws.name, env)}) allows s3:PutObject on `,
        );
    expect(result.stderr).toMatch(new RegExp(`^  - environment ${first} \\(`, "m"));
    expect(fs.existsSync(out)).toBe(false);
  });
});
