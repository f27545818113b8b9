// The stage graph: which stages feed which, in what order, and which of them run an environment. Read by the
// checks (cycles, order, gates upstream) and by derivation and the diagram alike.
import type { EnvironmentStage, GateStage, Pipeline, Stage } from "./schema";

export const upstreamOf = (s: Stage): string[] => (s.from === "warehouse" ? [] : s.from);

/** Every stage upstream of `name`, transitively; every upstream must name a stage (validatePipeline checks it first). */
export function ancestors(stages: Stage[], name: string): Set<string> {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const seen = new Set<string>();
  const visit = (n: string) => {
    for (const up of upstreamOf(byName.get(n)!)) {
      if (!seen.has(up)) {
        seen.add(up);
        visit(up);
      }
    }
  };
  visit(name);
  return seen;
}

export const isGate = (s: Stage): s is GateStage => s.kind === "gate";
export const environmentStages = (p: Pipeline) => p.stages.filter((s): s is EnvironmentStage => !isGate(s));

/** A cycle among the stages, as the names along it, or undefined. */
export function findCycle(stages: Stage[]): string[] | undefined {
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
export function topologicalOrder(stages: Stage[]): Stage[] {
  const ordered: Stage[] = [];
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
