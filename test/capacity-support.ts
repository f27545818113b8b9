// Pipelines of other shapes for the capacity and cost tests: a fork's with more environments, added as
// docs/make-it-yours.md documents ("Add an environment": each behind a gate of its own after the last update
// stage, with a stack config in every program's folder, written into a copy of the programs so validation
// reads them as it reads the fork's), never past the schema's limits (a fork at them first makes room);
// seeded generated ones; and the brute-force count of what runs at once, for the pipelines it can walk.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { repoRoot } from "../lib/cli/plan/projects";
import { isProgramStage, runStages } from "../lib/pipeline/graph";
import {
  MAX_ENVIRONMENTS,
  MAX_PROGRAM_STAGES,
  MAX_STAGES,
  type Pipeline,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

type StageInput = PipelineInput["stages"][number];

/**
 * How many environments `withMoreEnvironments` can add to `definition` within the schema's limits: each
 * adds an environment, three stages, and a preview and an update stage per program.
 */
export function roomFor(definition: PipelineInput): number {
  const programs = definition.programs.length;
  const environmentStages = definition.stages.filter((s) => s.kind !== "gate").length;
  return Math.max(
    0,
    Math.min(
      MAX_ENVIRONMENTS - Object.keys(definition.environments).length,
      Math.floor((MAX_STAGES - definition.stages.length) / 3),
      Math.floor((MAX_PROGRAM_STAGES - environmentStages * programs) / (2 * programs)),
    ),
  );
}

/** The pipeline without `env`: its stages go, and whatever came from them comes from what they came from. */
export function withoutEnvironment(p: PipelineInput, env: string): PipelineInput {
  const gone = new Map(
    p.stages.filter((s) => s.kind !== "gate" && s.environment === env).map((s) => [s.name, s]),
  );
  const resolve = (from: StageInput["from"]): string[] =>
    from === "warehouse" ? [] : from.flatMap((up) => (gone.has(up) ? resolve(gone.get(up)!.from) : [up]));
  const stages = p.stages
    .filter((s) => !gone.has(s.name))
    .map((s): StageInput => {
      if (s.from === "warehouse") return s;
      const from = [...new Set(resolve(s.from))];
      const { requireAll, ...rest } = s;
      return {
        ...rest,
        from: from.length > 0 ? from : "warehouse",
        ...(from.length > 1 && requireAll ? { requireAll } : {}),
      };
    });
  const { [env]: _removed, ...environments } = p.environments;
  return { ...p, environments, stages };
}

/**
 * `definition`, or, when it is too large to grow by `count` environments (a fork at the schema's limits), it
 * with the fewest of its environments removed that leaves the room: the last it lists first, each removal
 * leaving a pipeline the validation takes.
 */
export function withRoomFor(definition: PipelineInput, count: number): PipelineInput {
  let p = definition;
  while (roomFor(p) < count) {
    const smaller = Object.keys(p.environments)
      .reverse()
      .map((env) => withoutEnvironment(p, env))
      .find((q) => {
        try {
          validatePipeline(q);
          return true;
        } catch {
          return false;
        }
      });
    if (!smaller) throw new Error(`no environment of the pipeline can go to make room for ${count} more`);
    p = smaller;
  }
  return p;
}

/** `definition` with `count` environments more, chained after its last update stage, or side by side after it. */
export function withMoreEnvironments(
  definition: PipelineInput,
  count: number,
  layout: "chained" | "side by side" = "chained",
): Pipeline {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "more-environments-"));
  for (const program of definition.programs)
    fs.cpSync(path.join(repoRoot, program.dir), path.join(copy, program.dir), { recursive: true });
  const last = [...definition.stages].reverse().find((s) => s.kind === "update")!.name;
  const environments = { ...definition.environments };
  const stages: StageInput[] = [...definition.stages];
  let after = last;
  for (let i = 1; i <= count; i++) {
    const env = `extra${i}`;
    environments[env] = { pulumiStack: env, destructiveChangeApprovers: ["extra-approvers"] };
    for (const program of definition.programs)
      fs.writeFileSync(
        path.join(copy, program.dir, `Pulumi.${env}.yaml`),
        "config:\n  aws:region: us-west-2\n",
      );
    stages.push(
      { name: `approvalgate${env}`, kind: "gate", from: [after], approvers: ["extra-approvers"] },
      { name: `${env}preview`, kind: "preview", environment: env, from: [`approvalgate${env}`] },
      { name: env, kind: "update", environment: env, from: [`${env}preview`] },
    );
    if (layout === "chained") after = env;
  }
  return validatePipeline({ ...definition, environments, stages }, { repoRoot: copy });
}

/** A seeded pseudo-random source (mulberry32): one seed, one sequence, on every machine. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ShapeSize {
  environments: number;
  programs: number;
}

/** What a generated pipeline is made of, for the tests to say they met every kind. */
export interface GeneratedShape {
  pipeline: Pick<PipelineInput, "environments" | "stages"> & {
    programs: { name: string; dependsOn: string[] }[];
  };
  /** Gates taking Freight from the same stages, side by side. */
  sideBySideGates: boolean;
  /** A stage taking Freight from any one of several. */
  anyOf: boolean;
  /** A stage waiting for all of several (an environment's stage after another environment is a join too). */
  requireAll: boolean;
  /** A program depending on another. */
  dependencies: boolean;
}

/**
 * A pipeline of `size.environments` environments and `size.programs` programs, drawn from `seed`: a gate
 * from the Warehouse first; then each environment takes Freight from one to three earlier gates or
 * environments (all of them or any one), behind a gate of its own, two gates side by side, or none; and
 * each program may depend on earlier ones. Only what the validation accepts: an update has a gate upstream,
 * requireAll has two upstreams at least, and a stage taking from any one of several waits for no program
 * dependency (Kargo cannot combine them).
 */
export function generateShape(seed: number, size: ShapeSize): GeneratedShape {
  const random = seeded(seed);
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
  const programs = Array.from({ length: size.programs }, (_, i) => ({
    name: `p${i}`,
    dependsOn: Array.from({ length: i }, (_, j) => `p${j}`).filter(() => random() < 0.3),
  }));
  const dependencies = programs.some((x) => x.dependsOn.length > 0);
  const environments: PipelineInput["environments"] = {};
  const stages: StageInput[] = [{ name: "g", kind: "gate", from: "warehouse", approvers: ["a"] }];
  const anchors = ["g"];
  const shape = { sideBySideGates: false, anyOf: false, requireAll: false };
  const upstream = (from: string[], mayChooseAny: boolean) => {
    const requireAll = from.length > 1 && (!mayChooseAny || random() < 0.5);
    if (from.length > 1) shape[requireAll ? "requireAll" : "anyOf"] = true;
    return { from, ...(from.length > 1 ? { requireAll } : {}) };
  };
  for (let e = 0; e < size.environments; e++) {
    const env = `e${e}`;
    environments[env] = { pulumiStack: env, destructiveChangeApprovers: ["a"] };
    const count = Math.min(anchors.length, 1 + Math.floor(random() * 3));
    const shuffled = [...anchors];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const from = shuffled.slice(0, count);
    const gates = pick([0, 1, 1, 2]);
    let previewFrom: { from: string[]; requireAll?: boolean };
    if (gates === 0) previewFrom = upstream(from, !dependencies);
    else {
      const names = Array.from({ length: gates }, (_, i) => `${env}g${i}`);
      for (const name of names)
        stages.push({ name, kind: "gate", ...upstream(from, true), approvers: ["a"] });
      if (gates > 1) shape.sideBySideGates = true;
      anchors.push(...names);
      previewFrom = upstream(names, !dependencies);
    }
    stages.push(
      { name: `${env}p`, kind: "preview", environment: env, ...previewFrom },
      { name: env, kind: "update", environment: env, from: [`${env}p`] },
    );
    anchors.push(env);
  }
  return { pipeline: { environments, stages, programs }, dependencies, ...shape };
}

/** `environments` environments, each behind a gate of its own from the Warehouse, and one program. */
export function gatesSideBySide(environments: number): GeneratedShape {
  const names = Array.from({ length: environments }, (_, e) => `e${e}`);
  return {
    pipeline: {
      programs: [{ name: "p0", dependsOn: [] }],
      environments: Object.fromEntries(names.map((e) => [e, { pulumiStack: e, deciders: ["a"] }])),
      stages: names.flatMap((e): StageInput[] => [
        { name: `${e}g`, kind: "gate", from: "warehouse", approvers: ["a"] },
        { name: `${e}p`, kind: "preview", environment: e, from: [`${e}g`] },
        { name: e, kind: "update", environment: e, from: [`${e}p`] },
      ]),
    },
    sideBySideGates: environments > 1,
    anyOf: false,
    requireAll: false,
    dependencies: false,
  };
}

/** `shape` as a whole definition, its programs written into a throwaway checkout, validated as a fork's. */
export function validatedShape(shape: GeneratedShape, definition: PipelineInput): Pipeline {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "generated-pipeline-"));
  for (const project of ["cluster", "cluster-setup", "kargo"]) {
    fs.mkdirSync(path.join(root, project));
    fs.writeFileSync(path.join(root, project, "Pulumi.yaml"), `name: ${project}\nruntime: nodejs\n`);
  }
  const programs = shape.pipeline.programs.map((x) => ({ ...x, dir: `gen/${x.name}` }));
  for (const x of programs) {
    fs.mkdirSync(path.join(root, x.dir), { recursive: true });
    fs.writeFileSync(path.join(root, x.dir, "Pulumi.yaml"), `name: gen-${x.name}\nruntime: yaml\n`);
    for (const env of Object.values(shape.pipeline.environments))
      fs.writeFileSync(path.join(root, x.dir, `Pulumi.${env.pulumiStack}.yaml`), "config: {}\n");
  }
  try {
    return validatePipeline(
      { ...definition, project: "gen", ...shape.pipeline, programs },
      { repoRoot: root },
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The brute force: every moment one Freight can reach, explored one verification at a time from the
 * Warehouse (a stage takes the Freight once all of its upstream stages have verified it, or any one of them
 * unless requireAll), and at each moment the program stages that have the Freight and have not verified it.
 * Exact, and as slow as the moments are many: for small pipelines only. Shares nothing with
 * lib/pipeline/concurrency.ts but the Kargo stages the definition makes (runStages).
 */
export function bruteForceMoments(p: Pick<Pipeline, "stages" | "programs">, limit = 200_000): string[][] {
  const all = runStages(p);
  const index = new Map(all.map((s, i) => [s.name, i]));
  const ups = all.map((s) => (s.from === "warehouse" ? [] : s.from.map((u) => index.get(u)!)));
  const takes = (i: number, done: boolean[]) =>
    ups[i]!.length === 0 ||
    (all[i]!.requireAll ? ups[i]!.every((u) => done[u]) : ups[i]!.some((u) => done[u]));
  const seen = new Set<string>();
  const running: string[][] = [];
  const stack = [all.map(() => false)];
  while (stack.length > 0) {
    const done = stack.pop()!;
    const key = done.map((d) => (d ? "1" : "0")).join("");
    if (seen.has(key)) continue;
    seen.add(key);
    if (seen.size > limit) throw new Error(`more than ${limit} moments: too large for the brute force`);
    const ready = all.flatMap((_, i) => (!done[i] && takes(i, done) ? [i] : []));
    running.push(ready.filter((i) => isProgramStage(all[i]!)).map((i) => all[i]!.name));
    for (const i of ready) stack.push(done.map((d, j) => d || j === i));
  }
  return running;
}

/**
 * The brute force's count of the program stages one Freight has running at once, or undefined when the
 * pipeline has too many moments for it: then only the exact count (lib/pipeline/concurrency.ts) counts it.
 */
export function bruteForceCount(
  p: Pick<Pipeline, "stages" | "programs">,
  limit?: number,
): number | undefined {
  try {
    return Math.max(...bruteForceMoments(p, limit).map((running) => running.length));
  } catch (err) {
    if (/too large for the brute force/.test((err as Error).message)) return undefined;
    throw err;
  }
}

/**
 * Whether the program stages `running` can have one Freight at one moment, none of them having verified it:
 * the stages that can verify it first, in the order the stages come, without any of `running` (a set of
 * verified stages can always grow by one that takes the Freight from it), must give each of them the Freight.
 */
export function runTogether(p: Pick<Pipeline, "stages" | "programs">, running: string[]): boolean {
  const all = runStages(p);
  const done = new Set<string>();
  const takes = (s: (typeof all)[number]) =>
    s.from === "warehouse" ||
    (s.requireAll ? s.from.every((u) => done.has(u)) : s.from.some((u) => done.has(u)));
  for (const s of all) if (!running.includes(s.name) && takes(s)) done.add(s.name);
  return all.filter((s) => running.includes(s.name)).every(takes);
}
