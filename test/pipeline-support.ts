// What the pipeline tests (pipeline-*.test.ts) share: kargo/pipeline.ts with one part changed, the message
// a refused definition gets, and throwaway repository checkouts on disk.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect } from "vitest";
import { pipeline as defaultPipeline } from "../kargo/pipeline";
import { PipelineError, type EnvironmentStage, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

export type StageInput = PipelineInput["stages"][number];
export const base = defaultPipeline;
// Names taken from kargo/pipeline.ts, so that these rules hold whatever environments it declares.
export const basePipeline = validatePipeline(base);
export const environmentStages = basePipeline.stages.filter((s): s is EnvironmentStage => s.kind !== "gate");
export const stackFiles = environmentStages.map((s) => `${s.name}.yaml`);
export const firstEnv = Object.keys(basePipeline.environments)[0]!;
export const firstStack = basePipeline.environments[firstEnv]!.pulumiStack;
export const lastStack = Object.values(basePipeline.environments).at(-1)!.pulumiStack;
export const firstUpdate = environmentStages.find((s) => s.kind === "update")!;
export const previewOfFirstUpdate = environmentStages.find(
  (s) => s.kind === "preview" && s.environment === firstUpdate.environment,
)!;
export const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A message written for environment "dev" (stack dev), for the pipeline's first environment. */
export const forFirstEnvironment = (message: RegExp) =>
  new RegExp(
    message.source
      .replaceAll("Pulumi\\.dev\\.yaml", escaped(`Pulumi.${firstStack}.yaml`))
      .replace("environments\\.dev:", `environments\\.${escaped(firstEnv)}:`),
  );

export const withSource = (source: Partial<PipelineInput["source"]>): PipelineInput => ({
  ...base,
  source: { ...base.source, ...source },
});
export const withStacks = (stacks: Partial<PipelineInput["stacks"]>): PipelineInput => ({
  ...base,
  stacks: { ...base.stacks, ...stacks },
});
export const withVerification = (verification: PipelineInput["verification"]): PipelineInput => ({
  ...base,
  verification: { ...base.verification, ...verification },
});
export const withEnvironments = (environments: PipelineInput["environments"]): PipelineInput => ({
  ...base,
  environments: { ...base.environments, ...environments },
});
/** The default stages with one replaced (by name) or appended. */
export const withStage = (stage: StageInput, replacing = stage.name): PipelineInput => ({
  ...base,
  stages: base.stages.some((s) => s.name === replacing)
    ? base.stages.map((s) => (s.name === replacing ? stage : s))
    : [...base.stages, stage],
});

export const problemsOf = (input: unknown, repoRoot?: string): string => {
  try {
    validatePipeline(input, { repoRoot });
  } catch (err) {
    // A PipelineError is a RunError: `pulumi up` prints its message alone, never a stack trace.
    expect(err).toBeInstanceOf(PipelineError);
    return (err as Error).message;
  }
  throw new Error("the pipeline was accepted");
};

export const tempDirs: string[] = [];
export const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
};
/** For afterEach: removes the folders tempDir made. */
export const removeTempDirs = () => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
};

/** A repository checkout with the promoted program at its root and the platform's project folders. */
export function tempRepo(at?: string): string {
  const root = at ?? tempDir("pipeline-repo-");
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(root, "Pulumi.yaml"), "name: infra-program\nruntime: yaml\n");
  for (const project of ["cluster", "cluster-setup", "kargo"]) {
    fs.mkdirSync(path.join(root, project));
    fs.writeFileSync(path.join(root, project, "Pulumi.yaml"), `name: ${project}\nruntime: nodejs\n`);
  }
  for (const env of Object.values(base.environments)) {
    fs.writeFileSync(path.join(root, `Pulumi.${env.pulumiStack}.yaml`), "config:\n  aws:region: us-west-2\n");
  }
  return root;
}
