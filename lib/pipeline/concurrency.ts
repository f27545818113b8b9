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
  /**
   * For a stage taking from any one of several, its choice: stages taking from any one of the same upstreams
   * share one, since once one upstream has verified the Freight it serves them all.
   */
  choiceOf: (string | undefined)[];
  /** Indexes of the program stages. */
  programs: number[];
  words: number;
}

function graphOf(p: Shape): Graph {
  const stages = runStages(p);
  const index = new Map(stages.map((s, i) => [s.name, i]));
  const from = stages.map((s) => (s.from === "warehouse" ? [] : s.from.map((u) => index.get(u)!)));
  return {
    stages,
    from,
    choiceOf: stages.map((s, i) => (takesAnyOf(s) ? from[i]!.join(",") : undefined)),
    programs: stages.flatMap((s, i) => (isProgramStage(s) ? [i] : [])),
    words: Math.ceil(stages.length / 32),
  };
}

/** Stage sets as bit sets: stage `i` is bit `i % 32` of word `i / 32` (never a shift past 31). */
type Bits = Uint32Array;
const has = (set: Bits, i: number) => (set[i >>> 5]! & (1 << (i & 31))) !== 0;
const add = (set: Bits, i: number) => (set[i >>> 5]! |= 1 << (i & 31));

/** What a choice decides: the upstream a group of stages taking from any one of several takes from. */
type Choice = Map<string, number>;

/**
 * For each stage, the stages that must have verified the Freight before it can take it: where `choice`
 * decides a stage's upstream, that one's; where it does not, only what every upstream needs (each decision
 * can only add to it).
 */
function requiredBefore(g: Graph, choice: Choice): Bits[] {
  const required: Bits[] = [];
  const through = (u: number) => {
    const set = required[u]!.slice();
    add(set, u);
    return set;
  };
  g.stages.forEach((_, i) => {
    const group = g.choiceOf[i];
    const chosen = group === undefined ? undefined : choice.get(group);
    const set = new Uint32Array(g.words);
    if (group === undefined || chosen !== undefined) {
      for (const u of chosen !== undefined ? [chosen] : g.from[i]!) {
        const t = through(u);
        for (let w = 0; w < g.words; w++) set[w]! |= t[w]!;
      }
    } else {
      set.fill(0xffffffff);
      for (const u of g.from[i]!) {
        const t = through(u);
        for (let w = 0; w < g.words; w++) set[w]! &= t[w]!;
      }
    }
    required[i] = set;
  });
  return required;
}

/**
 * The largest set of program stages of which none needs another before it (Dilworth: the stages minus a
 * maximum matching of "needs" pairs, found with Kuhn's augmenting paths; the set read off by König's
 * construction).
 */
function widest(g: Graph, required: Bits[]): number[] {
  const stages = g.programs;
  const after = new Map(stages.map((u) => [u, stages.filter((v) => has(required[v]!, u))]));
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
 * Which of the program stages `running` cannot take the Freight while all of them have it and none has
 * verified it: none when they can run at once. The stages that can verify it while none of `running` has
 * are found in one pass (a stage's upstreams come before it); each of `running` must be able to take the
 * Freight from those.
 */
function stuck(g: Graph, running: Set<number>): number[] {
  const done: boolean[] = [];
  const takes = (i: number) =>
    g.from[i]!.length === 0 ||
    (g.choiceOf[i] !== undefined ? g.from[i]!.some((u) => done[u]) : g.from[i]!.every((u) => done[u]));
  g.stages.forEach((_, i) => (done[i] = !running.has(i) && takes(i)));
  return [...running].filter((i) => !takes(i));
}

interface Candidate {
  choice: Choice;
  required: Bits[];
  set: number[];
}

const candidate = (g: Graph, choice: Choice): Candidate => {
  const required = requiredBefore(g, choice);
  return { choice, required, set: widest(g, required) };
};

/**
 * The upstreams worth choosing for stage `i`: one that needs another of them, whatever else is chosen, never
 * lets more run at once than that other one would (it needs all the other needs, and more).
 */
const worthChoosing = (g: Graph, required: Bits[], i: number) =>
  g.from[i]!.filter((u) => !g.from[i]!.some((v) => v !== u && has(required[u]!, v)));

/**
 * The most program stages one Freight can have running at once, and such a set: each of them has the
 * Freight and has not verified it, at one moment of the Freight's way through the pipeline. A stage runs once
 * the stages it takes Freight from have verified it (all of them, or any one); gates are promoted by people,
 * who may approve gates side by side at the same time, so a gate orders only what comes after it. Every
 * other promotion is automatic, or may be made at the same moment.
 *
 * When every stage needs all its upstreams this is the widest set of stages none of which comes after
 * another (Dilworth's theorem). A stage that takes from any one of several needs whichever upstream the
 * moment had; the count tries those choices, the most promising first, and stops where a widest set can
 * run together ({@link stuck}): a choice can only add to what stages need, so the widest set with the open
 * choices left open bounds every way of making them. Its time grows with the choices a widest set
 * depends on, not with the stages.
 */
export function concurrentStages(p: Shape): ProgramStage[] {
  const g = graphOf(p);
  // A first answer: every choice made for an upstream worth choosing; then no widest set runs apart.
  const greedy = new Map<string, number>();
  const relaxed = requiredBefore(g, greedy);
  g.stages.forEach((_, i) => {
    const group = g.choiceOf[i];
    if (group !== undefined && !greedy.has(group)) greedy.set(group, worthChoosing(g, relaxed, i)[0]!);
  });
  let best = widest(g, requiredBefore(g, greedy));
  // Best first: the candidate whose widest set is largest; the first that can run together is the answer.
  const queue = [candidate(g, new Map())];
  while (queue.length > 0) {
    queue.sort((a, b) => a.set.length - b.set.length);
    const { choice, required, set } = queue.pop()!;
    if (set.length <= best.length) break;
    const blocked = stuck(g, new Set(set));
    if (blocked.length === 0) {
      best = set;
      break;
    }
    // An open choice a stuck stage depends on: it, or a stage it needs, takes from any one of several. With
    // every such choice made the set could run together, so there is one.
    const reach = new Set<number>();
    const visit = (i: number) => {
      if (reach.has(i)) return;
      reach.add(i);
      const group = g.choiceOf[i];
      const chosen = group === undefined ? undefined : choice.get(group);
      for (const u of chosen !== undefined ? [chosen] : g.from[i]!) visit(u);
    };
    blocked.forEach(visit);
    const open = [...reach].find((i) => g.choiceOf[i] !== undefined && !choice.has(g.choiceOf[i]!));
    if (open === undefined)
      throw new Error("concurrentStages: a widest set with every choice made ran apart");
    for (const u of worthChoosing(g, required, open))
      queue.push(candidate(g, new Map([...choice, [g.choiceOf[open]!, u]])));
  }
  return best.map((i) => g.stages[i] as ProgramStage);
}
