// The stage graph: which stages feed which, in what order, and which of them run an environment. Read by the
// checks (cycles, order, gates upstream) and by derivation and the diagram alike.
import type { EnvironmentStage, GateStage, Pipeline, Stage } from "./schema";

/** Anything that takes Freight from the Warehouse or from named stages. */
export interface GraphNode {
  name: string;
  from: "warehouse" | string[];
}

export const upstreamOf = (s: GraphNode): string[] => (s.from === "warehouse" ? [] : s.from);

/**
 * The stages upstream of a stage, transitively, for any stage of `stages`: each worked out once, over one index
 * of the stages (a pipeline of the largest size asks for most of its thousand stages').
 */
export function ancestry(stages: GraphNode[]): (name: string) => ReadonlySet<string> {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const known = new Map<string, Set<string>>();
  return (name) => {
    let seen = known.get(name);
    if (seen) return seen;
    seen = new Set<string>();
    const visit = (n: string) => {
      for (const up of upstreamOf(byName.get(n)!)) {
        if (!seen!.has(up)) {
          seen!.add(up);
          visit(up);
        }
      }
    };
    visit(name);
    known.set(name, seen);
    return seen;
  };
}

/** Every stage upstream of `name`, transitively; every upstream must name a stage (validatePipeline checks it first). */
export const ancestors = (stages: GraphNode[], name: string): Set<string> => new Set(ancestry(stages)(name));

export const isGate = (s: Stage): s is GateStage => s.kind === "gate";
/** The definition's environment stages (each becomes one Kargo stage per program: {@link expandStages}). */
export const environmentStages = (p: Pick<Pipeline, "stages">) =>
  p.stages.filter((s): s is EnvironmentStage => !isGate(s));

/** A cycle among the stages, as the names along it, or undefined. */
export function findCycle(stages: GraphNode[]): string[] | undefined {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const state = new Map<string, "visiting" | "done">();
  // Stryker disable next-line ArrayDeclaration: a seeded path is never part of a cycle: indexOf finds the stage first
  const path: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === "done") return undefined;
    if (state.get(name) === "visiting") return [...path.slice(path.indexOf(name)), name];
    state.set(name, "visiting");
    path.push(name);
    for (const up of upstreamOf(byName.get(name)!)) {
      const found = visit(up);
      if (found) return found;
    }
    path.pop();
    state.set(name, "done");
    return undefined;
  };
  for (const s of stages) {
    const found = visit(s.name);
    if (found) return found.reverse();
  }
  return undefined;
}

/** Stages ordered so that every stage comes after its upstream stages (the pipeline must be acyclic). */
export function topologicalOrder<T extends GraphNode>(stages: T[]): T[] {
  const ordered: T[] = [];
  const placed = new Set<string>();
  while (ordered.length < stages.length) {
    const ready = stages.filter((s) => !placed.has(s.name) && upstreamOf(s).every((up) => placed.has(up)));
    if (ready.length === 0) throw new Error("pipeline has a cycle");
    for (const s of ready) {
      ordered.push(s);
      placed.add(s.name);
    }
  }
  return ordered;
}

/**
 * A stage Kargo runs. The definition's gates stay as they are. Each environment stage becomes one stage per
 * program (`<stage>-<program>`), each with its own PKO Stack, branch, Application and verification; and an
 * environment stage that a gate or another environment takes Freight from also becomes a join: a Kargo
 * control-flow stage (no promotion steps) of the same name, where Freight is verified once every program's
 * stage has verified it (akuity/kargo v1.11.2 pkg/controller/stages/control_flow_stages.go).
 */
export type RunStage =
  | (GateStage & { declared: string })
  | ProgramStage
  | {
      name: string;
      kind: "join";
      declared: string;
      environment: string;
      from: string[];
      requireAll: boolean;
    };

/** One program's preview or update in one environment stage of the definition. */
export interface ProgramStage {
  name: string;
  kind: "preview" | "update";
  environment: string;
  program: string;
  /** The definition's stage it belongs to. */
  declared: string;
  from: "warehouse" | string[];
  requireAll: boolean;
}

/** The Kargo stage of a program in an environment stage of the definition. */
export const programStageName = (declared: string, program: string) => `${declared}-${program}`;

/** Programs ordered so that each comes after those it depends on (dependencies must be acyclic and known). */
export function programOrder<T extends { name: string; dependsOn: string[] }>(programs: T[]): T[] {
  const ordered: T[] = [];
  const placed = new Set<string>();
  while (ordered.length < programs.length) {
    const ready = programs.filter((x) => !placed.has(x.name) && x.dependsOn.every((d) => placed.has(d)));
    if (ready.length === 0) throw new Error("programs depend on each other in a cycle");
    for (const x of ready) {
      ordered.push(x);
      placed.add(x.name);
    }
  }
  return ordered;
}

/** A cycle among the programs' dependencies, as the names along it, or undefined. */
export function findProgramCycle(programs: { name: string; dependsOn: string[] }[]): string[] | undefined {
  return findCycle(programs.map((x) => ({ name: x.name, from: x.dependsOn })));
}

interface Expansion {
  stages: RunStage[];
  /** A cycle the programs' dependencies make with the stages, as the Kargo stages along it. */
  cycle?: string[];
  /** Program stages that would have to take Freight from any one of several stages and also wait for a dependency. */
  mixed: { stage: string; program: string; upstream: string[] }[];
}

/**
 * The Kargo stages of a pipeline: {@link RunStage}. A program's stage takes Freight from its declared stage's
 * upstream (an upstream stage of the same environment means the same program's stage there), and, when it
 * depends on other programs, from their update in the same environment, so its preview reads the outputs
 * its update will read. Edges implied by others are left out: a dependency's update already follows the
 * gates before it, and a program's update already follows its own preview.
 */
export function expandStages(
  p: Pick<Pipeline, "stages"> & { programs: { name: string; dependsOn: string[] }[] },
): Expansion {
  const declared = new Map(p.stages.map((s) => [s.name, s]));
  const programs = programOrder(p.programs);
  const updateOf = (environment: string) =>
    p.stages.find((s) => s.kind === "update" && s.environment === environment)?.name;
  const joins = new Set<string>();
  const refFrom = (up: string, program: string | undefined, environment: string | undefined) => {
    const s = declared.get(up)!;
    if (isGate(s)) return up;
    if (program !== undefined && s.environment === environment) return programStageName(up, program);
    joins.add(up);
    return up;
  };
  const stages: RunStage[] = [];
  const dependencyEdges = new Map<string, string[]>();
  for (const s of topologicalOrder(p.stages)) {
    if (isGate(s)) {
      stages.push({
        ...s,
        declared: s.name,
        from: s.from === "warehouse" ? s.from : s.from.map((u) => refFrom(u, undefined, undefined)),
      });
      continue;
    }
    for (const x of programs) {
      const name = programStageName(s.name, x.name);
      const update = updateOf(s.environment);
      const deps = update ? x.dependsOn.map((d) => programStageName(update, d)) : [];
      dependencyEdges.set(name, deps);
      stages.push({
        name,
        kind: s.kind,
        environment: s.environment,
        program: x.name,
        declared: s.name,
        from: s.from === "warehouse" ? "warehouse" : s.from.map((u) => refFrom(u, x.name, s.environment)),
        requireAll: s.requireAll,
      });
    }
  }
  for (const s of p.stages.filter((s): s is EnvironmentStage => !isGate(s) && joins.has(s.name))) {
    const from = programs.map((x) => programStageName(s.name, x.name));
    // All, even of one program's stage: the join's rule reads the same whatever programs a fork keeps.
    stages.push({
      name: s.name,
      kind: "join",
      declared: s.name,
      environment: s.environment,
      from,
      requireAll: true,
    });
  }

  // Every edge first, dependencies included: a cycle there is a definition no Freight could pass.
  const full = stages.map((s) =>
    s.kind === "join" || s.kind === "gate"
      ? s
      : { ...s, from: [...(s.from === "warehouse" ? [] : s.from), ...dependencyEdges.get(s.name)!] },
  );
  const cycle = findCycle(full);
  if (cycle) return { stages, cycle, mixed: [] };

  const mixed: Expansion["mixed"] = [];
  const upstreamOfStage = ancestry(full);
  const result = stages.map((s): RunStage => {
    if (s.kind === "join" || s.kind === "gate") return s;
    const deps = dependencyEdges.get(s.name)!;
    if (deps.length === 0) return s;
    const base = s.from === "warehouse" ? [] : s.from;
    const keptDeps = deps.filter((d) => !base.some((b) => upstreamOfStage(b).has(d)));
    const keptBase = base.filter((b) => !keptDeps.some((d) => upstreamOfStage(d).has(b)));
    if (keptDeps.length > 0 && keptBase.length > 1 && !s.requireAll)
      mixed.push({ stage: s.name, program: s.program, upstream: keptBase });
    const from = [...keptBase, ...keptDeps];
    return { ...s, from, requireAll: keptDeps.length > 0 ? from.length > 1 : s.requireAll };
  });
  return { stages: topologicalOrder(result), mixed };
}

const expanded = new WeakMap<object, RunStage[]>();

/** Every Kargo stage of a validated pipeline, each after its upstream stages (worked out once per pipeline). */
export function runStages(p: Pick<Pipeline, "stages" | "programs">): RunStage[] {
  const known = expanded.get(p) ?? expandStages(p).stages;
  expanded.set(p, known);
  return [...known];
}

export const isProgramStage = (s: RunStage): s is ProgramStage => s.kind === "preview" || s.kind === "update";

/** The stages that run a program: one per program and environment stage, each with its own PKO Stack. */
export const programStages = (p: Pick<Pipeline, "stages" | "programs">): ProgramStage[] =>
  runStages(p).filter(isProgramStage);
