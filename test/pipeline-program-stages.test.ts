// The Kargo stages the promoted programs make of the declared stages (lib/pipeline/graph.ts): one per
// declared environment stage and program, dependencies first, joins where needed, and the names and
// refusals that come with them; over the definition and over made-up pipelines whose programs are written
// into a throwaway checkout. What a program itself must be is pipeline-programs.test.ts's.
import { afterEach, describe, expect, it } from "vitest";
import {
  environmentStages as declaredEnvironmentStages,
  expandStages,
  programStageName,
  programStages,
  runStages,
} from "../lib/pipeline/graph";
import { names, stackObjectName } from "../lib/pipeline/names";
import { MAX_PROGRAM_NAME, MAX_STACK_NAME, pipelineSchema } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  accepted,
  base,
  basePipeline,
  declared,
  dirOf,
  escaped,
  gate,
  linesOf,
  madeUpProject as project,
  packageJson,
  packageLock,
  preview,
  problemsOf,
  refused,
  removeTempDirs,
  repoOf,
  tempRepo,
  testProgram,
  twoEnvironments,
  update,
  withExtraProgram,
  writeProgram,
  type MadeUp,
} from "./pipeline-support";
import { expectExpansion } from "./fork-checks";

afterEach(removeTempDirs);

describe("the Kargo stages the programs make", () => {
  it("refuses a program stage named like a stage of the definition", () => {
    // Stage zza of program zz-b is Kargo stage "zza-zz-b", which the definition also declares.
    const stages = [...twoEnvironments, gate("zza-zz-b", ["zza"])];
    expect(refused([{ name: "zz-a" }, { name: "zz-b" }], stages)).toMatch(
      /stage "zza" \(program "zz-b"\): its Kargo stage "zza-zz-b" is also a stage of the definition; rename the stage or the program/,
    );
  });

  it("refuses a program stage named like another Kargo object of the project", () => {
    // Program "update" in a stage named "pulumi" would be Kargo stage "pulumi-update", the update AnalysisTemplate.
    const [template, ...rest] = names.analysis.update.split("-");
    const stages = twoEnvironments.map((s) =>
      s.name === "zza" ? { ...s, name: template! } : s.name === "zzgateb" ? { ...s, from: [template!] } : s,
    );
    expect(refused([{ name: rest.join("-") }], stages)).toMatch(
      new RegExp(
        `stage "${template}" \\(program "${rest.join("-")}"\\): its Kargo stage "${names.analysis.update}" is the update AnalysisTemplate's name; rename the stage or the program`,
      ),
    );
  });

  it("refuses an exclude that hides a program's lock file or entry point from the Freight", () => {
    const files = {
      "package.json": packageJson,
      "package-lock.json": packageLock({ "@pulumi/pulumi": "3.270.0" }),
      "index.ts": "export {};\n",
    };
    const programs: MadeUp[] = [{ name: "zz-node", runtime: "nodejs", files }];
    for (const hidden of ["package-lock.json", "index.ts"]) {
      const input = {
        ...declared(programs),
        source: { ...base.source, excludePaths: [`glob:**/${hidden}`] },
      };
      expect(problemsOf(input, repoOf(programs))).toMatch(
        new RegExp(
          `source\\.excludePaths\\[0\\]: "glob:\\*\\*/${escaped(hidden)}" excludes ${escaped(`${dirOf(programs[0]!)}/${hidden}`)}, which a stage runs`,
        ),
      );
    }
    // Files no runtime reads may be left out of the Freight.
    const docs = { ...declared(programs), source: { ...base.source, excludePaths: ["glob:**/*.md"] } };
    expect(() => validatePipeline(docs, { repoRoot: repoOf(programs) })).not.toThrow();
  });

  it("refuses two program stages of one name", () => {
    // Stage zza of program zz-x-y and stage zza-zz of program x-y are both "zza-zz-x-y".
    const stages = twoEnvironments.map((s) =>
      s.name === "zzapreview" ? { ...s, name: "zza-zz" } : s.name === "zza" ? { ...s, from: ["zza-zz"] } : s,
    );
    const problems = refused([{ name: "zz-x-y" }, { name: "x-y" }], stages);
    expect(problems).toMatch(
      /stage "(zza|zza-zz)" \(program "(zz-x-y|x-y)"\): its Kargo stage "zza-zz-x-y" is also program "(zz-x-y|x-y)"'s stage in "(zza|zza-zz)"; rename the stage or the program/,
    );
  });

  it(`refuses a PKO Stack name over ${MAX_STACK_NAME} characters, naming the program and the stage`, () => {
    const name = "z".repeat(MAX_PROGRAM_NAME);
    const stage = "s".repeat(MAX_STACK_NAME + 1 - `${project}--${name}`.length);
    const stages = twoEnvironments.map((s) =>
      s.name === "zzbpreview" ? { ...s, name: stage } : s.name === "zzb" ? { ...s, from: [stage] } : s,
    );
    const stackName = `${project}-${stage}-${name}`;
    expect(stackName).toHaveLength(MAX_STACK_NAME + 1);
    expect(refused([{ name: "zz-a" }, { name }], stages)).toMatch(
      new RegExp(
        `stage "${stage}" \\(program "${name}"\\): its PKO Stack would be named "${stackName}" \\(${MAX_STACK_NAME + 1} characters\\); PKO allows ${MAX_STACK_NAME}\\. Shorten the stage, program or project name`,
      ),
    );
  });
});

describe("the expansion of the declared stages", () => {
  it("over kargo/pipeline.ts: a stage per environment stage and program, dependencies first, joins where needed", () => {
    expectExpansion(basePipeline, runStages(basePipeline));
    expect(programStages(basePipeline)).toHaveLength(
      declaredEnvironmentStages(basePipeline).length * basePipeline.programs.length,
    );
  });

  it("over a made-up pipeline with one program, and with independent programs", () => {
    for (const programs of [[{ name: "zz-a" }], [{ name: "zz-a" }, { name: "zz-b" }, { name: "zz-c" }]]) {
      const p = accepted(programs);
      expectExpansion(p, runStages(p));
    }
  });

  it("over kargo/pipeline.ts with a made-up program depending on every other", () => {
    const repo = tempRepo();
    writeProgram(repo, { dir: testProgram, project: `${project}-${testProgram}` }, base.environments);
    const p = validatePipeline(
      withExtraProgram({ dir: testProgram, dependsOn: base.programs.map((x) => x.name) }),
      { repoRoot: repo },
    );
    expectExpansion(p, runStages(p));
  });

  it("gives the last of a diamond (a; b and c after a; d after b and c) its preview from both b's and c's update", () => {
    const programs = [
      { name: "zz-a" },
      { name: "zz-b", dependsOn: ["zz-a"] },
      { name: "zz-c", dependsOn: ["zz-a"] },
      { name: "zz-d", dependsOn: ["zz-b", "zz-c"] },
    ];
    const p = accepted(programs);
    const stages = runStages(p);
    expectExpansion(p, stages);
    for (const s of declaredEnvironmentStages(p).filter((s) => s.kind === "preview")) {
      const update = declaredEnvironmentStages(p).find(
        (u) => u.kind === "update" && u.environment === s.environment,
      )!;
      const d = stages.find((x) => x.name === programStageName(s.name, "zz-d"))!;
      expect(d.from, d.name).toEqual(
        expect.arrayContaining(["zz-b", "zz-c"].map((x) => programStageName(update.name, x))),
      );
      expect(d.from, d.name).toHaveLength(2);
      expect(d.requireAll, d.name).toBe(true);
    }
  });

  it("refuses a preview, a gate, then the update with dependent programs: the programs would wait for each other", () => {
    const stages = [
      gate("zzgate", "warehouse"),
      preview("zzapreview", "zza", ["zzgate"]),
      gate("zzgatea", ["zzapreview"]),
      update("zza", "zza", ["zzgatea"]),
      preview("zzbpreview", "zzb", ["zza"]),
      update("zzb", "zzb", ["zzbpreview"]),
    ];
    expect(accepted([{ name: "zz-a" }, { name: "zz-b" }], stages).programs).toHaveLength(2);
    const problems = refused([{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-a"] }], stages);
    expect(linesOf(problems)).toEqual([
      expect.stringMatching(
        /^programs: their dependencies cannot fit the stages: Kargo stages ("[a-z-]+" -> )+"[a-z-]+" would wait for each other\. A program's preview waits for its dependencies' update in the same environment, so nothing between an environment's preview and its update may wait for every program's preview$/,
      ),
    ]);
    expect(problems).toContain(`"${programStageName("zzapreview", "zz-b")}"`);
  });

  it("takes a dependent program's preview with two upstream stages (any one) only from its dependency's update", () => {
    const stages = [
      gate("zzgate", "warehouse"),
      gate("zzgate2", "warehouse"),
      preview("zzapreview", "zza", ["zzgate", "zzgate2"]),
      update("zza", "zza", ["zzapreview"]),
      preview("zzbpreview", "zzb", ["zza"]),
      update("zzb", "zzb", ["zzbpreview"]),
    ];
    const p = accepted([{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-a"] }], stages);
    const byName = new Map(runStages(p).map((s) => [s.name, s]));
    expect(byName.get(programStageName("zzapreview", "zz-a"))).toMatchObject({
      from: ["zzgate", "zzgate2"],
      requireAll: false,
    });
    expect(byName.get(programStageName("zzapreview", "zz-b"))).toMatchObject({
      from: [programStageName("zza", "zz-a")],
      requireAll: false,
    });
    expectExpansion(p, runStages(p));
  });

  it("refuses a stage that would take Freight from any one of several stages and also wait for a dependency", () => {
    // The preview stands beside the update (not before it), so the dependency's update does not follow its
    // upstream gates: the dependent's preview would need "any of two gates, and the update".
    const stages = [
      gate("zzgate", "warehouse"),
      gate("zzgate2", "warehouse"),
      gate("zzgate3", "warehouse"),
      update("zza", "zza", ["zzgate"]),
      preview("zzacheck", "zza", ["zzgate2", "zzgate3"]),
      preview("zzbpreview", "zzb", ["zza"]),
      update("zzb", "zzb", ["zzbpreview"]),
    ];
    const programs = [{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-a"] }];
    expect(refused(programs, stages)).toMatch(
      /programs\.zz-b\.dependsOn: stage "zzacheck-zz-b" would take Freight from any one of "zzgate2", "zzgate3" and also wait for the program's dependencies, which Kargo cannot combine; set requireAll on the stage or give it one upstream/,
    );
    const all = stages.map((s) => (s.name === "zzacheck" ? { ...s, requireAll: true } : s));
    const p = accepted(programs, all);
    expect(runStages(p).find((s) => s.name === "zzacheck-zz-b")).toMatchObject({
      from: ["zzgate2", "zzgate3", programStageName("zza", "zz-a")],
      requireAll: true,
    });
  });

  it("needs no checkout: expandStages reads only the stages and the programs' dependencies", () => {
    const stages = pipelineSchema.shape.stages.parse(twoEnvironments);
    const programs = [
      { name: "zz-a", dependsOn: [] },
      { name: "zz-b", dependsOn: ["zz-a"] },
    ];
    const { stages: expanded, cycle, mixed } = expandStages({ stages, programs });
    expect(cycle).toBeUndefined();
    expect(mixed).toEqual([]);
    expectExpansion({ stages, programs }, expanded);
    expect(stackObjectName({ project }, programStageName("zza", "zz-b"))).toBe("zzt-zza-zz-b");
  });
});
