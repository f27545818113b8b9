// What the kargo project's tests (kargo*.test.ts and the tests of what it derives) share: the example's plan
// of the kargo project, the approver groups a pipeline names, the stages Kargo runs read off the definition,
// a pipeline with one more program, the workspace image a program declares, and the shape of a planned
// Kubernetes object.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { pipeline as definition } from "../kargo/pipeline";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { kubernetesObjects } from "../lib/cli/plan/output";
import { planChain } from "../lib/cli/plan/projects";
import { programStageName, programStages } from "../lib/pipeline/graph";
import {
  WORKSPACE_IMAGES,
  riskPolicy,
  type EnvironmentStage,
  type Pipeline,
  type Program,
} from "../lib/pipeline/schema";

/**
 * The example's plans of cluster-setup and of the kargo project, which reads cluster-setup's outputs, and the
 * Kubernetes objects of a kind the kargo project declares. For a beforeAll: planChain plans each once per worker.
 */
export async function planKargo(): Promise<{
  setup: ProgramPlan;
  plan: ProgramPlan;
  ofKind: (kind: string) => Obj[];
}> {
  const plans = await planChain();
  const [setup, plan] = [plans[1]!, plans[2]!];
  const objects = kubernetesObjects(plan) as Obj[];
  return { setup, plan, ofKind: (kind: string) => objects.filter((o) => o.kind === kind) };
}

/** The Cognito groups the pipeline names: every gate's approvers and every environment's deciders. */
export const namedGroups = (p: Pipeline) =>
  [
    ...new Set([
      ...p.stages.flatMap((s) => (s.kind === "gate" ? s.approvers : [])),
      ...Object.values(p.environments).flatMap((e) => riskPolicy(e).deciders),
    ]),
  ].sort();

/** The definition's preview and update stages, as declared. */
export const declaredEnvironmentStages = (p: Pick<Pipeline, "stages">) =>
  p.stages.filter((s): s is EnvironmentStage => s.kind !== "gate");

/** The Kargo stage names of every program's preview and update: one per program and declared environment stage. */
export const programStageNames = (p: Pipeline) => programStages(p).map((s) => s.name);

/**
 * The declared environment stages that become joins, read off the definition alone: those a gate, or a stage
 * of another environment, takes Freight from.
 */
export const declaredJoins = (p: Pick<Pipeline, "stages">): EnvironmentStage[] =>
  declaredEnvironmentStages(p).filter((s) =>
    p.stages.some(
      (t) =>
        t.from !== "warehouse" &&
        t.from.includes(s.name) &&
        (t.kind === "gate" || t.environment !== s.environment),
    ),
  );

/** The declared update stage of an environment (validation allows one). */
export const declaredUpdateOf = (p: Pick<Pipeline, "stages">, environment: string) =>
  declaredEnvironmentStages(p).find((s) => s.kind === "update" && s.environment === environment);

/** Every program's Kargo stage of a declared stage, by program name. */
export const programStagesOf = (p: Pipeline, declared: string) =>
  p.programs.map((x) => programStageName(declared, x.name));

/** `base`, or `base` with the first number that makes it none of `taken`: a name no fork's definition uses. */
export function unusedName(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  for (let i = 0; ; i++) {
    const name = i === 0 ? base : `${base}${i}`;
    if (!used.has(name)) return name;
  }
}

/**
 * The pipeline with one more program (a YAML one, without AWS access), which depends on its first program:
 * what a stage, link or role derives must hold for any number of programs, not only the example's.
 */
export function withExtraProgram(p: Pipeline): Pipeline {
  const name = unusedName(
    "extra",
    p.programs.map((x) => x.name),
  );
  const extra: Program = {
    name,
    dir: unusedName(
      `${name}-program`,
      p.programs.map((x) => x.dir),
    ),
    dependsOn: [p.programs[0]!.name],
    includePaths: [],
    project: unusedName(
      `${p.project}-${name}`,
      p.programs.map((x) => x.project),
    ),
    runtime: "yaml",
    workspaceImage: WORKSPACE_IMAGES.yaml!,
    resources: p.stacks.workspaceResources,
    plugins: [],
  };
  return { ...p, programs: [...p.programs, extra] };
}

/** The workspace image kargo/pipeline.ts declares for a program, or none. */
export const declaredImage = (x: Pick<Program, "name">) =>
  definition.programs.find((d) => d.name === x.name)!.workspaceImage;

/** A program's Pulumi.yaml as committed, and the runtime it names (`runtime: x` or `runtime: {name: x}`). */
export function projectFile(repoRoot: string, x: Pick<Program, "dir">) {
  const file = YAML.parse(fs.readFileSync(path.join(repoRoot, x.dir, "Pulumi.yaml"), "utf8")) as {
    name: string;
    runtime: string | { name: string };
    [k: string]: any;
  };
  return { ...file, runtimeName: typeof file.runtime === "string" ? file.runtime : file.runtime.name };
}

export type Obj = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, any>;
  spec: any;
  [k: string]: any;
};
