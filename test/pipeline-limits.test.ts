// The size limits of a pipeline (lib/pipeline/schema.ts): the largest definition they allow validates, one
// more of anything is refused naming the field and the limit, and cluster-setup allows the same number of
// environments, read from the same constant. test/kube/largest_test.go deploys that largest pipeline's
// admission policies and Stacks to a real API server.
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { clusterSetupConfigSchema } from "../cluster-setup/config";
import { programStages } from "../lib/pipeline/graph";
import {
  MAX_ENVIRONMENTS,
  MAX_PROGRAM_STAGES,
  MAX_PROGRAMS,
  MAX_STAGES,
  PipelineError,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { repoRoot } from "../lib/cli/plan/projects";
import { checkoutFor, largestDefinition, largestPipeline } from "./largest-pipeline";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
});

/** The refusal of a definition, in a checkout holding its programs. */
function problemsOf(input: PipelineInput): string {
  const root = checkoutFor(input);
  roots.push(root);
  try {
    validatePipeline(input, { repoRoot: root });
  } catch (err) {
    expect(err).toBeInstanceOf(PipelineError);
    expect((err as Error).message).not.toMatch(/\n\s+at /);
    return (err as Error).message;
  }
  throw new Error("the pipeline was accepted");
}

describe("the pipeline's size limits", () => {
  it("allow a pipeline at every limit at once: the largest, which the suite deploys", () => {
    const p = largestPipeline();
    expect(Object.keys(p.environments)).toHaveLength(MAX_ENVIRONMENTS);
    expect(p.programs).toHaveLength(MAX_PROGRAMS);
    expect(programStages(p)).toHaveLength(MAX_PROGRAM_STAGES);
    expect(p.stages.length).toBeLessThanOrEqual(MAX_STAGES);
  });

  it("refuse one environment more, naming the field and the limit", () => {
    expect(problemsOf(largestDefinition(MAX_ENVIRONMENTS + 1, 1))).toMatch(
      new RegExp(`^ {2}- environments: must define at most ${MAX_ENVIRONMENTS} environments$`, "m"),
    );
  });

  it("refuse one program more", () => {
    expect(problemsOf(largestDefinition(1, MAX_PROGRAMS + 1))).toMatch(
      new RegExp(`^ {2}- programs: must list at most ${MAX_PROGRAMS} programs$`, "m"),
    );
  });

  it("refuse one stage more", () => {
    const input = largestDefinition(1, 1);
    const gate = input.stages[0]!;
    const stages = [
      ...input.stages,
      ...Array.from({ length: MAX_STAGES + 1 - input.stages.length }, (_, i) => ({
        ...gate,
        name: `${gate.name}${i}`,
      })),
    ];
    expect(problemsOf({ ...input, stages })).toMatch(
      new RegExp(`^ {2}- stages: must list at most ${MAX_STAGES} stages$`, "m"),
    );
  });

  it("refuse one program stage more: another preview at the largest size", () => {
    const input = largestDefinition();
    const preview = input.stages.find((s) => s.kind === "preview")!;
    const stages = [...input.stages, { ...preview, name: `${preview.name}2` }];
    const envStages = stages.filter((s) => s.kind !== "gate").length;
    expect(problemsOf({ ...input, stages })).toMatch(
      new RegExp(
        `^ {2}- stages: ${envStages} preview and update stages times ${MAX_PROGRAMS} programs make ${envStages * MAX_PROGRAMS} program stages .*; at most ${MAX_PROGRAM_STAGES} are allowed`,
        "m",
      ),
    );
  });

  it("are cluster-setup's too: stackEnvironments allows as many environments as the pipeline, no more", () => {
    const problems = (stackEnvironments: string[]) =>
      (
        clusterSetupConfigSchema.safeParse({
          clusterStack: "org/cluster/dev",
          pulumiAccessToken: "pul-token",
          stackEnvironments,
        }).error?.issues ?? []
      ).map((i) => `${i.path.join(".")}: ${i.message}`);
    const envs = (n: number) => Array.from({ length: n }, (_, i) => `env${i}`);
    expect(problems(envs(MAX_ENVIRONMENTS))).toEqual([]);
    expect(problems(envs(MAX_ENVIRONMENTS + 1))).toEqual([
      expect.stringMatching(
        new RegExp(`^stackEnvironments: must list at most ${MAX_ENVIRONMENTS} environments`),
      ),
    ]);
  });

  it("are the ones the docs state", () => {
    const docs = fs.readFileSync(path.join(repoRoot, "docs/make-it-yours.md"), "utf8");
    expect(docs).toContain(
      `At most **${MAX_ENVIRONMENTS} environments**, **${MAX_PROGRAMS} programs**, **${MAX_STAGES} stages** and **${MAX_PROGRAM_STAGES} program stages**`,
    );
    expect(docs).toContain(`\`environments: must define at most ${MAX_ENVIRONMENTS}`);
    const security = fs.readFileSync(path.join(repoRoot, "docs/security-and-approvals.md"), "utf8");
    expect(security).toMatch(new RegExp(`all ${MAX_PROGRAM_STAGES}\\s+Stacks of the`));
  });
});
