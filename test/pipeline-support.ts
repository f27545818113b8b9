// What the pipeline tests (pipeline-*.test.ts) share: kargo/pipeline.ts with one part changed, the message
// a refused definition gets, throwaway repository checkouts on disk (test/checkout-support.ts), and made-up
// pipelines whose programs are.
import { expect } from "vitest";
import { pipeline as defaultPipeline } from "../kargo/pipeline";
import { programStages } from "../lib/pipeline/graph";
import { driftManifestFile, stackManifestFile } from "../lib/pipeline/names";
import { driftStages } from "../lib/pipeline/drift";
import {
  PipelineError,
  type EnvironmentStage,
  type Pipeline,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { programsRepo, type ProgramFiles } from "./checkout-support";

export type StageInput = PipelineInput["stages"][number];
export type ProgramInput = PipelineInput["programs"][number];
export const base = defaultPipeline;
// Names taken from kargo/pipeline.ts, so that these rules hold whatever environments and programs it declares.
export const basePipeline = validatePipeline(base);
export const environmentStages = basePipeline.stages.filter((s): s is EnvironmentStage => s.kind !== "gate");
/**
 * The Stack manifest of every program's stage of every environment stage, and of each update stage's drift
 * check, as `npm run stacks` writes them.
 */
export const stackFiles = [
  ...programStages(basePipeline).map((s) => stackManifestFile(s.name)),
  ...driftStages(basePipeline).map((s) => driftManifestFile(s.name)),
];
export const firstEnv = Object.keys(basePipeline.environments)[0]!;
export const firstStack = basePipeline.environments[firstEnv]!.pulumiStack;
export const lastStack = Object.values(basePipeline.environments).at(-1)!.pulumiStack;
export const firstUpdate = environmentStages.find((s) => s.kind === "update")!;
export const previewOfFirstUpdate = environmentStages.find(
  (s) => s.kind === "preview" && s.environment === firstUpdate.environment,
)!;
/** The definition's gate that takes Freight from the Warehouse. */
export const firstGate = basePipeline.stages.find((s) => s.kind === "gate" && s.from === "warehouse")!;
/** The definition's first program, resolved (its folder normalized, its project read from its Pulumi.yaml). */
export const firstProgram = basePipeline.programs[0]!;
/** A program name no fork would give one of its own. */
export const testProgram = "zz-test-program";
export const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** Any one of `texts`, as a regular expression source. */
export const anyOf = (texts: readonly string[]) => `(?:${texts.map(escaped).join("|")})`;
/** A message written for environment "dev" (stack dev), for the first program's file of the first environment. */
export const forFirstEnvironment = (message: RegExp) =>
  new RegExp(
    message.source
      .replaceAll("Pulumi\\.dev\\.yaml", escaped(`${firstProgram.dir}/Pulumi.${firstStack}.yaml`))
      .replaceAll('environment "dev"', `environment "${escaped(firstEnv)}"`)
      .replace("programs\\.PROGRAM:", `programs\\.${escaped(firstProgram.name)}:`),
  );

/** A problem of a field of the definition's first program. */
export const ofFirstProgram = (field: string, problem: RegExp) =>
  new RegExp(`programs\\.${escaped(firstProgram.name)}\\.${field}: ${problem.source}`);

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
/** The default programs with the first one changed. */
export const withFirstProgram = (changes: Partial<ProgramInput>): PipelineInput => ({
  ...base,
  programs: base.programs.map((x, i) => (i === 0 ? { ...x, ...changes } : x)),
});
/** The default programs and one more, named {@link testProgram} unless given a name. */
export const withExtraProgram = (program: Partial<ProgramInput> & { dir: string }): PipelineInput => ({
  ...base,
  programs: [...base.programs, { name: testProgram, ...program }],
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

/** A hostile definition's refusal: a list of problems, one of them `message`, and no stack trace. */
export function expectRefused(input: unknown, message: RegExp): void {
  const problems = problemsOf(input);
  expect(problems).toMatch(/^Invalid pipeline definition:\n {2}- /);
  expect(problems).toMatch(message);
  expect(problems).not.toMatch(/\n\s+at /); // no stack trace in the message
}

/** The problem lines of a refusal. */
export const linesOf = (problems: string) =>
  problems
    .split("\n")
    .filter((line) => line.startsWith("  - "))
    .map((line) => line.slice(4));

export * from "./checkout-support";

// Made-up pipelines (pipeline-programs, pipeline-program-stages): names no fork's pipeline has, a Kargo
// project, two environments, their stages and programs, the programs written into a throwaway checkout.
export const madeUpProject = "zzt";
export const madeUpEnvironments: PipelineInput["environments"] = {
  zza: { pulumiStack: "zza", destructiveChangeApprovers: ["zz-approvers"] },
  zzb: { pulumiStack: "zzb", destructiveChangeApprovers: ["zz-approvers"] },
};
export const gate = (name: string, from: StageInput["from"], requireAll = false): StageInput => ({
  name,
  kind: "gate",
  from,
  requireAll,
  approvers: ["zz-approvers"],
});
const envStage =
  (kind: "preview" | "update") =>
  (name: string, environment: string, from: StageInput["from"], requireAll = false): StageInput => ({
    name,
    kind,
    environment,
    from,
    requireAll,
  });
export const preview = envStage("preview");
export const update = envStage("update");
/**
 * Gate, preview and update for zza; a gate taking Freight from zza (which makes zza a join), then preview
 * and update for zzb.
 */
export const twoEnvironments: StageInput[] = [
  gate("zzgate", "warehouse"),
  preview("zzapreview", "zza", ["zzgate"]),
  update("zza", "zza", ["zzapreview"]),
  gate("zzgateb", ["zza"]),
  preview("zzbpreview", "zzb", ["zzgateb"]),
  update("zzb", "zzb", ["zzbpreview"]),
];

/** A made-up program: its declaration, and its files unless told otherwise. */
export interface MadeUp extends Partial<ProgramFiles> {
  name: string;
  dependsOn?: string[];
  workspaceImage?: string;
}
export const dirOf = (x: MadeUp) => x.dir ?? `zz-programs/${x.name}`;
/** The made-up pipeline declaring `programs`, over `stages`. */
export const declared = (programs: MadeUp[], stages = twoEnvironments): PipelineInput => ({
  ...base,
  project: madeUpProject,
  programs: programs.map((x) => ({
    name: x.name,
    dir: dirOf(x),
    ...(x.dependsOn ? { dependsOn: x.dependsOn } : {}),
    ...(x.workspaceImage ? { workspaceImage: x.workspaceImage } : {}),
  })),
  environments: madeUpEnvironments,
  stages,
});
/** A checkout holding the programs' folders, each with its Pulumi project `zzt-<name>` unless told. */
export const repoOf = (programs: MadeUp[]) =>
  programsRepo(
    programs.map((x) => ({
      dir: dirOf(x),
      project: x.project ?? `${madeUpProject}-${x.name}`,
      runtime: x.runtime,
      files: x.files,
    })),
    madeUpEnvironments,
  );
export const accepted = (programs: MadeUp[], stages = twoEnvironments): Pipeline =>
  validatePipeline(declared(programs, stages), { repoRoot: repoOf(programs) });
export const refused = (programs: MadeUp[], stages = twoEnvironments): string =>
  problemsOf(declared(programs, stages), repoOf(programs));
