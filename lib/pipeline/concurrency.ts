// How many program stages one Freight can have running at once: the workspaces it starts together, whatever
// the pipeline's shape (gates side by side, joins, stages that take Freight from any one of several).
import { isProgramStage, runStages, type ProgramStage, type RunStage } from "./graph";
import type { Pipeline } from "./schema";

type Shape = Pick<Pipeline, "stages" | "programs">;

/**
 * A stage takes Freight once every upstream stage has verified it (`requireAll`, a join, a single upstream),
 * or once any one of them has (Kargo's default availability across several upstream stages).
 */
const takesAnyOf = (s: RunStage) => s.from !== "warehouse" && s.from.length > 1 && !s.requireAll;

interface Graph {
  stages: RunStage[];
  /** Upstream stages of each stage, by index in `stages` (topologically ordered: upstreams come first). */
  from: number[][];
  anyOf: boolean[];
  /** Indexes of the program stages. */
  programs: number[];
}

function graphOf(p: Shape): Graph {
  const stages = runStages(p);
  const index = new Map(stages.map((s, i) => [s.name, i]));
  return {
    stages,
    from: stages.map((s) => (s.from === "warehouse" ? [] : s.from.map((u) => index.get(u)!))),
    anyOf: stages.map(takesAnyOf),
    programs: stages.flatMap((s, i) => (isProgramStage(s) ? [i] : [])),
  };
}

/**
 * Whether the program stages `running` can all run at once: whether one Freight can reach a moment where
 * each of them has the Freight and none has verified it. The stages that can verify it while none of
 * `running` has are found in one pass (a stage's upstreams come before it); each of `running` must be able
 * to take the Freight from those.
 */
function canRunTogether(g: Graph, running: Set<number>): boolean {
  const done: boolean[] = [];
  const takes = (i: number) =>
    g.from[i]!.length === 0 ||
    (g.anyOf[i] ? g.from[i]!.some((u) => done[u]) : g.from[i]!.every((u) => done[u]));
  g.stages.forEach((_, i) => (done[i] = !running.has(i) && takes(i)));
  return [...running].every(takes);
}

/**
 * For each stage, the stages that must have verified the Freight before it can take it, when each stage of
 * `choice` takes it from the upstream chosen there and every other stage that takes from any one of several
 * needs only what all of those upstreams need.
 */
function requiredBefore(g: Graph, choice: Map<string, number>): Set<number>[] {
  const required: Set<number>[] = [];
  g.stages.forEach((_, i) => {
    const through = (u: number) => new Set([u, ...required[u]!]);
    const from = g.from[i]!;
    const chosen = g.anyOf[i] ? choice.get(signature(g, i)) : undefined;
    if (!g.anyOf[i] || chosen !== undefined) {
      required[i] = new Set((chosen !== undefined ? [chosen] : from).flatMap((u) => [...through(u)]));
    } else {
      const [first, ...rest] = from.map(through);
      required[i] = new Set([...first!].filter((x) => rest.every((r) => r.has(x))));
    }
  });
  return required;
}

/**
 * Stages that take from any one of the same upstream stages share a choice: once one upstream has verified
 * the Freight, it serves them all, so no moment needs two of them to have chosen differently.
 */
const signature = (g: Graph, i: number) => g.from[i]!.join(",");

/**
 * The largest set of program stages of which none needs another before it (Dilworth: the stages minus a
 * maximum matching of "needs" pairs, found with Kuhn's augmenting paths; the set read off by König's
 * construction).
 */
function widest(g: Graph, required: Set<number>[]): number[] {
  const stages = g.programs;
  const after = new Map(stages.map((u) => [u, stages.filter((v) => required[v]!.has(u))]));
  const matchOf = new Map<number, number>();
  const augment = (u: number, seen: Set<number>): boolean =>
    after.get(u)!.some((v) => {
      if (seen.has(v)) return false;
      seen.add(v);
      const holder = matchOf.get(v);
      if (holder === undefined || augment(holder, seen)) {
        matchOf.set(v, u);
        return true;
      }
      return false;
    });
  for (const u of stages) augment(u, new Set());
  const matchedLeft = new Set(matchOf.values());
  const left = new Set(stages.filter((u) => !matchedLeft.has(u)));
  const right = new Set<number>();
  const queue = [...left];
  while (queue.length > 0) {
    const u = queue.pop()!;
    for (const v of after.get(u)!)
      if (!right.has(v) && matchOf.get(v) !== u) {
        right.add(v);
        const next = matchOf.get(v);
        if (next !== undefined && !left.has(next)) {
          left.add(next);
          queue.push(next);
        }
      }
  }
  return stages.filter((s) => left.has(s) && !right.has(s));
}

/**
 * The most program stages one Freight can have running at once, and such a set: each of them has the
 * Freight and has not verified it, at one moment of the Freight's way through the pipeline. A stage runs once
 * the stages it takes Freight from have verified it (all of them, or any one); gates are promoted by people,
 * who may approve gates side by side at the same time, so a gate orders only what comes after it. Every
 * other promotion is automatic, or may be made at the same moment.
 *
 * When every stage needs all its upstreams this is the widest set of stages none of which comes after
 * another (Dilworth's theorem). A stage that takes from any one of several needs whichever the moment
 * chose; the count tries those choices, best first, and stops where a widest set can run together
 * ({@link canRunTogether}): each choice can only add what a stage needs, so the widest set with the open
 * choices left open bounds every way of making them.
 */
export function concurrentStages(p: Shape): ProgramStage[] {
  const g = graphOf(p);
  let best: number[] = [];
  const search = (choice: Map<string, number>) => {
    const required = requiredBefore(g, choice);
    const set = widest(g, required);
    if (set.length <= best.length) return;
    if (canRunTogether(g, new Set(set))) {
      best = set;
      return;
    }
    // An open choice the set depends on: one of its stages, or a stage one of them needs, takes from any one
    // of several. With every such choice made, the set could run together; so there is one.
    const reach = new Set<number>();
    const visit = (i: number) => {
      if (reach.has(i)) return;
      reach.add(i);
      const chosen = g.anyOf[i] ? choice.get(signature(g, i)) : undefined;
      for (const u of chosen !== undefined ? [chosen] : g.from[i]!) visit(u);
    };
    set.forEach(visit);
    const open = [...reach].find((i) => g.anyOf[i] && !choice.has(signature(g, i)));
    if (open === undefined)
      throw new Error("concurrentStages: a widest set with every choice made ran apart");
    for (const u of g.from[open]!) search(new Map([...choice, [signature(g, open), u]]));
  };
  search(new Map());
  return best.map((i) => g.stages[i] as ProgramStage);
}
