// The core assertions of the tests that read kargo/pipeline.ts, as functions of any validated pipeline: the
// test files call them with the fork's own pipeline, and test/generated-forks.test.ts with generated forks at
// the schema's limits, in-process, so a fork of any shape the schema allows is held to the same rules.
import { expect } from "vitest";
import { concurrentStages } from "../lib/pipeline/concurrency";
import {
  ancestors,
  environmentStages as declaredEnvironmentStages,
  isGate,
  programStageName,
  programStages,
  runStages,
  type RunStage,
} from "../lib/pipeline/graph";
import { stackManifestFile } from "../lib/pipeline/names";
import { stageSpec } from "../lib/pipeline/promotion";
import { riskPolicy, stopOnText, type Pipeline } from "../lib/pipeline/schema";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { bruteForceCount, runTogether } from "./capacity-support";

/**
 * What every expansion must be, whatever the definition: one stage per declared environment stage and
 * program; a program's stages after its dependencies' update of the same environment; a program without
 * dependencies taking Freight where its declared stage does; joins exactly where a gate or another
 * environment takes Freight from an environment stage, from every program's stage there.
 */
export function expectExpansion(
  p: Pick<Pipeline, "stages"> & { programs: { name: string; dependsOn: string[] }[] },
  stages: RunStage[],
) {
  const byName = new Map(stages.map((s) => [s.name, s]));
  const environment = declaredEnvironmentStages(p);
  const updateOf = (env: string) => environment.find((s) => s.kind === "update" && s.environment === env)!;
  // Every Kargo stage after its upstream stages, each of which exists.
  stages.forEach((s, i) => {
    for (const up of s.from === "warehouse" ? [] : s.from) {
      expect(byName.has(up), `${s.name} <- ${up}`).toBe(true);
      expect(
        stages.findIndex((u) => u.name === up),
        `${s.name} <- ${up}`,
      ).toBeLessThan(i);
    }
  });
  for (const s of environment) {
    for (const x of p.programs) {
      const name = programStageName(s.name, x.name);
      expect(byName.get(name), name).toMatchObject({
        kind: s.kind,
        environment: s.environment,
        program: x.name,
        declared: s.name,
      });
      const before = ancestors(stages, name);
      for (const d of x.dependsOn)
        expect(before.has(programStageName(updateOf(s.environment).name, d)), `${name} after ${d}`).toBe(
          true,
        );
      if (x.dependsOn.length === 0) {
        const expected =
          s.from === "warehouse"
            ? "warehouse"
            : s.from.map((up) => {
                const u = p.stages.find((t) => t.name === up)!;
                return !isGate(u) && u.environment === s.environment ? programStageName(up, x.name) : up;
              });
        expect(byName.get(name)!.from, name).toEqual(expected);
        expect(byName.get(name)!.requireAll, name).toBe(s.requireAll);
      }
    }
  }
  const programStageCount = stages.filter((s) => s.kind === "preview" || s.kind === "update").length;
  expect(programStageCount).toBe(environment.length * p.programs.length);
  // Joins: the environment stages a gate or another environment's stage takes Freight from.
  const joined = environment
    .filter((s) =>
      p.stages.some(
        (t) =>
          t.from !== "warehouse" && t.from.includes(s.name) && (isGate(t) || t.environment !== s.environment),
      ),
    )
    .map((s) => s.name);
  const joins = stages.filter((s) => s.kind === "join");
  expect(joins.map((j) => j.name).sort()).toEqual([...joined].sort());
  // Every program's stage there, in whatever order the expansion lists them (any dependency order is valid).
  for (const j of joins) {
    expect([...(j.from as string[])].sort(), j.name).toEqual(
      p.programs.map((x) => programStageName(j.declared, x.name)).sort(),
    );
    expect(j.requireAll, j.name).toBe(true);
  }
  // Only gates keep their declared names, besides the joins.
  expect(stages.filter((s) => s.kind === "gate").map((s) => s.name)).toEqual(
    expect.arrayContaining(p.stages.filter(isGate).map((s) => s.name)),
  );
}

/** The environments of a pipeline, whatever it names them: each with its preview and update stage. */
export const environmentsOf = (p: Pipeline) =>
  Object.keys(p.environments).map((name) => ({
    name,
    preview: declaredEnvironmentStages(p).find((s) => s.kind === "preview" && s.environment === name),
    update: declaredEnvironmentStages(p).find((s) => s.kind === "update" && s.environment === name),
  }));
type PreviewedEnvironment = ReturnType<typeof environmentsOf>[number];

const byName = <T extends { name: string }>(xs: T[]) => [...xs].sort((a, b) => a.name.localeCompare(b.name));

/** What each program's stage of a declared stage passes its AnalysisTemplate beyond project, stack and commit. */
export const policyArgsOf = (p: Pipeline, declared: string) => {
  const stages = programStages(p).filter((s) => s.declared === declared);
  expect(stages.map((s) => s.program).sort(), declared).toEqual(p.programs.map((x) => x.name).sort());
  // By program name: the stages come in dependency order, which is any order the dependencies allow.
  return stages
    .sort((a, b) => a.program.localeCompare(b.program))
    .map((s) => {
      const verification = stageSpec(p, s).verification!;
      const args = Object.fromEntries(verification.args!.map((a) => [a.name, a.value]));
      const { project: _p, stack: _s, commit: _c, ...policy } = args;
      return { program: s.program, template: verification.analysisTemplates![0]!.name, policy };
    });
};
/** The policy args a preview stage passes when its environment stops on `stopOn`, decided by `deciders`. */
export const stopping = (
  p: Pipeline,
  env: PreviewedEnvironment,
  stopOn: string,
  deciders: readonly string[],
) =>
  byName(p.programs).map((x) => ({
    program: x.name,
    template: "pulumi-preview",
    policy: {
      "stop-on": stopOn,
      deciders: deciders.join(","),
      "approve-stage": `${env.update!.name}-${x.name}`,
    },
  }));
export const stopsNothing = (p: Pipeline) =>
  byName(p.programs).map((x) => ({ program: x.name, template: "pulumi-preview", policy: {} }));

/** Each preview is told what its environment stops on, who decides and which update stage they approve. */
export function expectPolicyArgs(p: Pipeline): void {
  for (const env of environmentsOf(p).filter((e) => e.preview && e.update)) {
    const policy = riskPolicy(p.environments[env.name]!);
    expect(policyArgsOf(p, env.preview!.name), env.name).toEqual(
      stopOnText(policy) === "nothing"
        ? stopsNothing(p)
        : stopping(p, env, policy.stopOn === "all" ? "all" : policy.stopOn.join(","), policy.deciders),
    );
    // An update compares with its preview whatever the policy: no policy args.
    for (const u of policyArgsOf(p, env.update!.name))
      expect(u, env.name).toEqual({ program: u.program, template: "pulumi-update", policy: {} });
  }
}

/**
 * The exact count of the program stages one Freight has running at once (lib/pipeline/concurrency.ts), a set
 * that can run together; and where the brute force can walk the pipeline within `limit` moments, its count.
 */
export function expectExactCount(p: Pipeline, at: string, limit?: number): number {
  const running = concurrentStages(p);
  const reference = bruteForceCount(p, limit);
  if (reference !== undefined) expect(running.length, at).toBe(reference);
  expect(
    runTogether(
      p,
      running.map((s) => s.name),
    ),
    at,
  ).toBe(true);
  return running.length;
}

/**
 * `npm run stacks`'s manifests: one per program stage, running the program's folder on its stack in the
 * stage's environment; and every Kargo stage requesting Freight from the stages it comes after.
 */
export function expectStacksAndStages(p: Pipeline): void {
  const stages = programStages(p);
  // A file of its own each; the files hold stackManifest's objects as YAML (`npm run stacks`).
  expect(new Set(stages.map((s) => stackManifestFile(s.name))).size).toBe(stages.length);
  for (const s of stages) {
    const x = p.programs.find((x) => x.name === s.program)!;
    const manifest = stackManifest(p, s);
    expect(manifest.spec, s.name).toMatchObject({
      stack: `${p.pulumi.organization}/${x.project}/${p.environments[s.environment]!.pulumiStack}`,
      repoDir: x.dir,
    });
  }
  for (const s of runStages(p)) {
    const sources = stageSpec(p, s).requestedFreight![0]!.sources;
    if (s.from === "warehouse") expect(sources.direct, s.name).toBe(true);
    else {
      expect([...(sources.stages ?? [])].sort(), s.name).toEqual([...s.from].sort());
      expect(sources.availabilityStrategy === "All", s.name).toBe(Boolean(s.requireAll));
    }
  }
}
