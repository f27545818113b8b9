// What `npm run rollback` walks through for an environment, derived from the pipeline alone: the program
// stages to take back (each program's preview stage, then its update stage), in the order they go, who
// decides and who starts, and the record's name. A derivation: it reads the stage graph and the names, and
// lib/rollback.ts runs it against Kargo.
import { programOrder, programStages, type ProgramStage } from "./graph";
import { names } from "./names";
import { environmentPromoters } from "./rbac";
import { riskPolicy, type Pipeline } from "./schema";

/** One program's stages in the environment, previewed then updated. */
export interface RollbackStep {
  program: string;
  preview: string;
  update: string;
}

export interface RollbackPlan {
  /** The Kargo project (and its namespace). */
  project: string;
  warehouse: string;
  environment: string;
  /** Who may promote its update stages by hand, and so take each step past its preview. */
  deciders: string[];
  /** The approvers of the gates the environment's previews take Freight from: with the deciders, who may ask. */
  promoters: string[];
  /** Dependents first (see {@link rollbackPlan}). */
  steps: RollbackStep[];
}

/** The ConfigMap in the Kargo project's namespace that records an environment's rollback or reconcile. */
export const rollbackRequestName = (environment: string) => `rollback-${environment}`;

/**
 * The programs to take back in `environment` (all of them, or `program` and every program depending on it,
 * directly or not) with their stages, dependents first. A release applied dependencies first; undoing it
 * mostly deletes, and Pulumi's engine deletes what depends on a resource before that resource, so a
 * dependent's resources that name the dependency's (a bucket's lifecycle rule, a route to a subnet) must be
 * gone before the dependency's preview and update can delete those: dependents first lets each program's
 * preview show what its own update will really do, against a state its dependents no longer hold onto.
 */
export function rollbackPlan(p: Pipeline, environment: string, program?: string): RollbackPlan {
  if (!Object.hasOwn(p.environments, environment))
    throw new Error(
      `environment "${environment}" is not in kargo/pipeline.ts; allowed: ${Object.keys(p.environments).join(", ")}`,
    );
  if (program !== undefined && !p.programs.some((x) => x.name === program))
    throw new Error(
      `--program "${program}" is not a program of kargo/pipeline.ts; allowed: ${p.programs.map((x) => x.name).join(", ")}`,
    );
  const ordered = programOrder(p.programs.map((x) => ({ name: x.name, dependsOn: x.dependsOn })));
  const covered =
    program === undefined ? new Set(ordered.map((x) => x.name)) : dependentsOf(ordered, program);
  const stages = programStages(p).filter((s) => s.environment === environment);
  const steps = ordered
    .filter((x) => covered.has(x.name))
    .reverse()
    .map((x) => stepOf(stages, environment, x.name));
  return {
    project: p.project,
    warehouse: names.warehouse,
    environment,
    deciders: riskPolicy(p.environments[environment]!).deciders,
    // The approvers of the gates its preview stages take Freight from, who let Freight into it (rbac.ts).
    promoters: environmentPromoters(p, environment).sort(),
    steps,
  };
}

/** `program` and every program depending on it, directly or through others. */
function dependentsOf(programs: { name: string; dependsOn: string[] }[], program: string): Set<string> {
  const found = new Set([program]);
  // In dependency order, each program's dependencies are decided before it.
  for (const x of programs) if (x.dependsOn.some((d) => found.has(d))) found.add(x.name);
  return found;
}

function stepOf(stages: ProgramStage[], environment: string, program: string): RollbackStep {
  const own = stages.filter((s) => s.program === program);
  const update = own.find((s) => s.kind === "update");
  const previews = own.filter((s) => s.kind === "preview");
  // The preview the update takes Freight from, when the environment has several.
  const preview =
    previews.find((s) => update?.from !== "warehouse" && update?.from.includes(s.name)) ?? previews[0];
  if (!update || !preview)
    throw new Error(
      `environment "${environment}" has no ${update ? "preview" : "update"} stage in kargo/pipeline.ts: a rollback previews each program in the environment, then updates it`,
    );
  return { program, preview: preview.name, update: update.name };
}
