// The promoted programs of a pipeline definition (kargo/pipeline.ts `programs`): what a program's folder,
// Pulumi project, runtime, lock files and dependencies must be, each refusal naming the field and what is
// allowed; and the Kargo stages the programs make of the declared stages (lib/pipeline/graph.ts), over the
// definition and over made-up pipelines whose programs are written into a throwaway checkout.
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RESERVED_FOLDERS } from "../lib/pipeline/check-repository";
import {
  ancestors,
  environmentStages as declaredEnvironmentStages,
  expandStages,
  isGate,
  programStageName,
  programStages,
  runStages,
  type RunStage,
} from "../lib/pipeline/graph";
import { names, stackObjectName } from "../lib/pipeline/names";
import {
  MAX_PROGRAM_NAME,
  MAX_STACK_NAME,
  WORKSPACE_IMAGES,
  pipelineSchema,
  type Pipeline,
  type PipelineInput,
} from "../lib/pipeline/schema";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  base,
  basePipeline,
  escaped,
  problemsOf,
  programsRepo,
  removeTempDirs,
  tempRepo,
  testProgram,
  withExtraProgram,
  writeProgram,
  type ProgramFiles,
  type StageInput,
} from "./pipeline-support";

afterEach(removeTempDirs);

// Made-up names no fork's pipeline has: a Kargo project, two environments, their stages and programs.
const project = "zzt";
const environments: PipelineInput["environments"] = {
  zza: { pulumiStack: "zza", destructiveChangeApprovers: ["zz-approvers"] },
  zzb: { pulumiStack: "zzb", destructiveChangeApprovers: ["zz-approvers"] },
};
const gate = (name: string, from: StageInput["from"], requireAll = false): StageInput => ({
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
const preview = envStage("preview");
const update = envStage("update");
/**
 * Gate, preview and update for zza; a gate taking Freight from zza (which makes zza a join), then preview
 * and update for zzb.
 */
const twoEnvironments: StageInput[] = [
  gate("zzgate", "warehouse"),
  preview("zzapreview", "zza", ["zzgate"]),
  update("zza", "zza", ["zzapreview"]),
  gate("zzgateb", ["zza"]),
  preview("zzbpreview", "zzb", ["zzgateb"]),
  update("zzb", "zzb", ["zzbpreview"]),
];

/** A made-up program: its declaration, and its files unless told otherwise. */
interface MadeUp extends Partial<ProgramFiles> {
  name: string;
  dependsOn?: string[];
  workspaceImage?: string;
}
const dirOf = (x: MadeUp) => x.dir ?? `zz-programs/${x.name}`;
const declared = (programs: MadeUp[], stages = twoEnvironments): PipelineInput => ({
  ...base,
  project,
  programs: programs.map((x) => ({
    name: x.name,
    dir: dirOf(x),
    ...(x.dependsOn ? { dependsOn: x.dependsOn } : {}),
    ...(x.workspaceImage ? { workspaceImage: x.workspaceImage } : {}),
  })),
  environments,
  stages,
});
/** A checkout holding the programs' folders, each with its Pulumi project `zzt-<name>` unless told. */
const repoOf = (programs: MadeUp[]) =>
  programsRepo(
    programs.map((x) => ({
      dir: dirOf(x),
      project: x.project ?? `${project}-${x.name}`,
      runtime: x.runtime,
      files: x.files,
    })),
    environments,
  );
const accepted = (programs: MadeUp[], stages = twoEnvironments): Pipeline =>
  validatePipeline(declared(programs, stages), { repoRoot: repoOf(programs) });
const refused = (programs: MadeUp[], stages = twoEnvironments): string =>
  problemsOf(declared(programs, stages), repoOf(programs));

/** The problem lines of a refusal. */
const linesOf = (problems: string) =>
  problems
    .split("\n")
    .filter((line) => line.startsWith("  - "))
    .map((line) => line.slice(4));

const packageJson = JSON.stringify({ name: "zz", dependencies: { "@pulumi/pulumi": "3.270.0" } });
const packageLock = (dependencies: Record<string, string>) =>
  JSON.stringify({ name: "zz", lockfileVersion: 3, packages: { "": { name: "zz", dependencies } } });

describe("a program's dependencies on other programs", () => {
  it("refuses a cycle, naming the programs along it and what is allowed", () => {
    const names = ["zz-a", "zz-b", "zz-c"];
    const problems = refused([
      { name: "zz-a", dependsOn: ["zz-c"] },
      { name: "zz-b", dependsOn: ["zz-a"] },
      { name: "zz-c", dependsOn: ["zz-b"] },
    ]);
    const line = linesOf(problems).find((l) => l.includes("cycle"));
    expect(line).toMatch(
      /^programs: ("zz-[abc]" -> ){3}"zz-[abc]" depend on each other in a cycle; allowed: dependencies that end$/,
    );
    for (const name of names) expect(line).toContain(`"${name}"`);
  });

  it("refuses a dependency that is no program, naming the programs there are", () => {
    expect(refused([{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-nowhere"] }])).toMatch(
      /programs\.zz-b\.dependsOn: "zz-nowhere" is not a program; programs: zz-a, zz-b/,
    );
  });

  it("refuses a program depending on itself, naming the programs it may depend on", () => {
    expect(refused([{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-b"] }])).toMatch(
      /programs\.zz-b\.dependsOn: lists the program itself; allowed: the other programs to update first in each environment \(zz-a\)/,
    );
  });

  it("refuses a dependency listed twice", () => {
    expect(refused([{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-a", "zz-a"] }])).toMatch(
      /programs\.zz-b\.dependsOn: lists "zz-a" more than once/,
    );
  });
});

describe("a program's name", () => {
  it.each([
    ["too long", "z".repeat(MAX_PROGRAM_NAME + 1), `must be at most ${MAX_PROGRAM_NAME} characters`],
    ["not a DNS label", "ZZ_Test", "must be a DNS label \\(lower-case letters, digits and '-'\\)"],
    ["ending in a hyphen", "zz-test-", "must be a DNS label"],
  ])("refuses a name %s, naming the field and what is allowed", (_, name, message) => {
    const input = declared([{ name: "zz-a" }, { name }]);
    expect(problemsOf(input, repoOf([{ name: "zz-a" }]))).toMatch(
      new RegExp(`programs\\.1\\.name: ${message}`),
    );
  });

  it(`accepts a name of ${MAX_PROGRAM_NAME} characters`, () => {
    const name = "z".repeat(MAX_PROGRAM_NAME);
    expect(accepted([{ name }]).programs.map((x) => x.name)).toEqual([name]);
  });

  it("refuses two programs of one name", () => {
    const input = declared([{ name: "zz-a" }, { name: "zz-a", dir: "zz-programs/zz-other" }]);
    const repo = repoOf([{ name: "zz-a" }, { name: "zz-b", dir: "zz-programs/zz-other" }]);
    expect(problemsOf(input, repo)).toMatch(/programs: "zz-a" is declared 2 times; each program once/);
  });
});

describe("a program's folder and Pulumi project", () => {
  it("refuses two programs of one Pulumi project, naming the project and the other program", () => {
    expect(
      refused([
        { name: "zz-a", project: "zzt-same" },
        { name: "zz-b", project: "zzt-same" },
      ]),
    ).toMatch(
      /programs\.zz-b\.dir: its Pulumi project "zzt-same" is also program "zz-a"'s; each program needs a project of its own/,
    );
  });

  it("refuses a folder that does not exist", () => {
    const input = declared([{ name: "zz-a" }, { name: "zz-b", dir: "zz-programs/zz-missing" }]);
    expect(problemsOf(input, repoOf([{ name: "zz-a" }]))).toMatch(
      /programs\.zz-b\.dir: "zz-programs\/zz-missing" does not exist; allowed: the folder holding the program's Pulumi\.yaml/,
    );
  });

  it("refuses a folder without a Pulumi.yaml", () => {
    const repo = repoOf([{ name: "zz-a" }]);
    fs.mkdirSync(path.join(repo, "zz-programs", "zz-empty"));
    const input = declared([{ name: "zz-a" }, { name: "zz-b", dir: "zz-programs/zz-empty" }]);
    expect(problemsOf(input, repo)).toMatch(
      /programs\.zz-b\.dir: "zz-programs\/zz-empty" holds no Pulumi\.yaml; allowed: the folder holding the program's Pulumi\.yaml/,
    );
  });

  it("refuses a Pulumi.yaml that names no runtime", () => {
    const repo = repoOf([{ name: "zz-a" }]);
    fs.writeFileSync(path.join(repo, "zz-programs", "zz-a", "Pulumi.yaml"), "name: zzt-zz-a\n");
    expect(problemsOf(declared([{ name: "zz-a" }]), repo)).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a\/Pulumi\.yaml must name its project \(name: letters, digits, "_", "\.", "-"\) and its runtime/,
    );
  });

  it.each([".", "./", "zz-programs/../"])("refuses the repository root (%j) as a folder", (dir) => {
    const repo = repoOf([{ name: "zz-a" }]);
    // The root holds a Pulumi project, so the refusal is for the place alone.
    writeProgram(repo, { dir: ".", project: "zzt-root" }, environments);
    const problems = problemsOf(declared([{ name: "zz-a" }, { name: "zz-b", dir }]), repo);
    expect(problems).toMatch(
      dir.includes("..")
        ? /programs\.zz-b\.dir: "zz-programs\/\.\.\/" leaves the repository; allowed: a folder of the repository without "\.\."/
        : new RegExp(
            `programs\\.zz-b\\.dir: "${escaped(dir)}" is the repository root, where every commit would become Freight; allowed: a folder of its own, such as "programs/zz-b"`,
          ),
    );
  });

  it("refuses a symlink to the repository root as a folder", () => {
    const repo = repoOf([{ name: "zz-a" }]);
    writeProgram(repo, { dir: ".", project: "zzt-root" }, environments);
    fs.symlinkSync(repo, path.join(repo, "zz-root"));
    expect(problemsOf(declared([{ name: "zz-a" }, { name: "zz-b", dir: "zz-root" }]), repo)).toMatch(
      /programs\.zz-b\.dir: "zz-root" resolves to the repository root \(through a symlink\), where every commit would become Freight; allowed: a folder of its own/,
    );
  });

  it("refuses a folder above the repository once, as the program's, not also as holding stacks.dir", () => {
    const problems = problemsOf(
      declared([{ name: "zz-a" }, { name: "zz-b", dir: ".." }]),
      repoOf([{ name: "zz-a" }]),
    );
    expect(linesOf(problems)).toEqual([
      'programs.zz-b.dir: ".." leaves the repository; allowed: a folder of the repository without ".."',
    ]);
  });

  it.each(RESERVED_FOLDERS)("refuses a folder inside the platform's %s/ folder", (reserved) => {
    const dir = `${reserved}/${testProgram}`;
    const repo = repoOf([{ name: "zz-a" }]);
    writeProgram(repo, { dir, project: `${project}-${testProgram}` }, environments);
    expect(problemsOf(declared([{ name: "zz-a" }, { name: testProgram, dir }]), repo)).toMatch(
      new RegExp(
        `programs\\.${testProgram}\\.dir: "${escaped(dir)}" is in the platform's ${escaped(reserved)}/ folder; allowed: a folder of its own`,
      ),
    );
  });

  it.each([
    ["one inside the other", "zz-programs/zz-a/zz-b"],
    ["the same folder", "zz-programs/zz-a/"],
  ])("refuses two programs whose folders overlap: %s", (_, dir) => {
    const programs = [{ name: "zz-a" }, { name: "zz-b", dir }];
    const repo = repoOf([{ name: "zz-a" }]);
    if (!fs.existsSync(path.join(repo, dir, "Pulumi.yaml")))
      writeProgram(repo, { dir, project: "zzt-zz-b" }, environments);
    expect(problemsOf(declared(programs), repo)).toMatch(
      new RegExp(
        `programs\\.zz-b\\.dir: "${escaped(dir)}" overlaps program "zz-a"'s folder; each program needs a folder of its own`,
      ),
    );
  });

  it("refuses a program without its stack config for an environment, naming the file and what is allowed", () => {
    const programs = [{ name: "zz-a" }, { name: "zz-b" }];
    const repo = repoOf(programs);
    fs.rmSync(path.join(repo, "zz-programs", "zz-b", "Pulumi.zzb.yaml"));
    expect(linesOf(problemsOf(declared(programs), repo))).toEqual([
      'programs.zz-b: zz-programs/zz-b/Pulumi.zzb.yaml is missing; each program has its stack config for environment "zzb" in its folder, as Pulumi.<pulumiStack>.yaml ("config: {}" if it needs none)',
    ]);
  });

  it("accepts programs side by side, each with its folder, project and runtime", () => {
    const p = accepted([{ name: "zz-a" }, { name: "zz-b", dependsOn: ["zz-a"] }]);
    expect(p.programs.map((x) => [x.name, x.dir, x.project, x.runtime])).toEqual([
      ["zz-a", "zz-programs/zz-a", "zzt-zz-a", "yaml"],
      ["zz-b", "zz-programs/zz-b", "zzt-zz-b", "yaml"],
    ]);
  });
});

describe("a program's runtime and its workspace image", () => {
  const defaults = Object.keys(WORKSPACE_IMAGES);
  it("refuses a runtime with no default image when none is given, naming the runtimes that have one", () => {
    expect(refused([{ name: "zz-a", runtime: "dotnet" }])).toMatch(
      new RegExp(
        `programs\\.zz-a\\.workspaceImage: runtime "dotnet" \\(zz-programs/zz-a/Pulumi\\.yaml\\) has no default workspace image; set one that holds its toolchain and runs as uid 1000 \\(runtimes with a default: ${escaped(defaults.join(", "))}\\)`,
      ),
    );
  });

  it("accepts that runtime with a workspace image of its own, which its Stacks run in", () => {
    const image = "registry.example.com/zz-dotnet:8.0.1";
    const p = accepted([{ name: "zz-a", runtime: "dotnet", workspaceImage: image }]);
    expect(p.programs[0]).toMatchObject({ runtime: "dotnet", workspaceImage: image });
    for (const s of programStages(p))
      expect(stackManifest(p, s).spec.workspaceTemplate!.spec!.image, s.name).toBe(image);
  });

  it.each(defaults)("runs runtime %s in its default image", (runtime) => {
    const files: Record<string, Record<string, string>> = {
      nodejs: {
        "package.json": packageJson,
        "package-lock.json": packageLock({ "@pulumi/pulumi": "3.270.0" }),
      },
      python: { "uv.lock": "version = 1\n" },
      go: { "go.mod": "module zz\n", "go.sum": "" },
    };
    const p = accepted([{ name: "zz-a", runtime, files: files[runtime] }]);
    expect(p.programs[0]!.workspaceImage).toBe(WORKSPACE_IMAGES[runtime]);
  });

  it.each([
    ["unpinned", "registry.example.com/zz-image", "has neither"],
    ["tagged latest", "registry.example.com/zz-image:latest", '"latest" moves with every release'],
  ])("refuses a workspace image %s, naming programs.<name>.workspaceImage", (_, image, why) => {
    expect(refused([{ name: "zz-a", workspaceImage: image }])).toMatch(
      new RegExp(
        `programs\\.zz-a\\.workspaceImage: must be an image with a pinned tag or digest; .*${escaped(why)}; allowed: an image with a version tag or digest`,
      ),
    );
  });
});

describe("a program's locked dependencies", () => {
  it("refuses a nodejs program without package-lock.json, saying to commit it", () => {
    expect(refused([{ name: "zz-a", runtime: "nodejs", files: { "package.json": packageJson } }])).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a has no package-lock\.json; `pulumi install` would resolve its dependencies anew on every run\. Commit the lock file \(npm install in zz-programs\/zz-a\)/,
    );
  });

  it("refuses a package-lock.json out of sync with package.json", () => {
    const files = {
      "package.json": packageJson,
      "package-lock.json": packageLock({ "@pulumi/pulumi": "3.269.0" }),
    };
    expect(refused([{ name: "zz-a", runtime: "nodejs", files }])).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a\/package-lock\.json does not match package\.json; npm install would rewrite it with whatever is newest\. Run npm install in zz-programs\/zz-a and commit both/,
    );
  });

  it.each([
    ["package.json", "{ not json"],
    ["package-lock.json", "[]"],
  ])("refuses a %s npm could not read, as a problem, not an exception", (file, text) => {
    const files = {
      "package.json": packageJson,
      "package-lock.json": packageLock({ "@pulumi/pulumi": "3.270.0" }),
      [file]: text,
    };
    expect(refused([{ name: "zz-a", runtime: "nodejs", files }])).toMatch(
      new RegExp(
        `programs\\.zz-a\\.dir: zz-programs/zz-a/${escaped(file)} is not (valid JSON|a JSON object).*; allowed: the file npm install writes`,
      ),
    );
  });

  it("refuses a nodejs program with a package manager no one knows", () => {
    const runtime = "{ name: nodejs, options: { packagemanager: zzpm } }";
    expect(refused([{ name: "zz-a", runtime, files: { "package.json": packageJson } }])).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a\/Pulumi\.yaml runtime option packagemanager "zzpm" is unknown; allowed: npm, yarn, pnpm, bun/,
    );
  });

  it.each([
    ["with toolchain pip", "{ name: python, options: { toolchain: pip } }"],
    ["with no toolchain and no lock file (pip)", "python"],
  ])("refuses a python program %s, naming the toolchains allowed", (_, runtime) => {
    expect(refused([{ name: "zz-a", runtime, files: { "requirements.txt": "pulumi==3.270.0\n" } }])).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a\/Pulumi\.yaml runs Python with toolchain "pip", which upgrades pip, setuptools and wheel to their newest on every install; allowed: toolchain uv \(with uv\.lock\) or poetry \(with poetry\.lock\)/,
    );
  });

  it("refuses toolchain uv without uv.lock", () => {
    const runtime = "{ name: python, options: { toolchain: uv } }";
    expect(refused([{ name: "zz-a", runtime, files: { "pyproject.toml": "" } }])).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a has no uv\.lock; commit the lock file \(uv lock in zz-programs\/zz-a\)/,
    );
  });

  it("accepts toolchain uv with uv.lock, and its workspace refuses to relock (UV_LOCKED=1)", () => {
    const runtime = "{ name: python, options: { toolchain: uv } }";
    const files = { "pyproject.toml": "", "uv.lock": "version = 1\n" };
    const p = accepted([{ name: "zz-a", runtime, files }, { name: "zz-b" }]);
    expect(p.programs.map((x) => x.runtime)).toEqual(["python", "yaml"]);
    for (const s of programStages(p)) {
      const env = stackManifest(p, s).spec.workspaceTemplate!.spec!.env!;
      if (s.program === "zz-a") expect(env, s.name).toContainEqual({ name: "UV_LOCKED", value: "1" });
      else
        expect(
          env.map((e) => e.name),
          s.name,
        ).not.toContain("UV_LOCKED");
    }
  });

  it("refuses a go program without go.sum", () => {
    expect(refused([{ name: "zz-a", runtime: "go", files: { "go.mod": "module zz\n" } }])).toMatch(
      /programs\.zz-a\.dir: zz-programs\/zz-a needs go\.mod and go\.sum, so the modules `pulumi install` fetches are the pinned ones/,
    );
  });
});

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

/**
 * What every expansion must be, whatever the definition: one stage per declared environment stage and
 * program; a program's stages after its dependencies' update of the same environment; a program without
 * dependencies taking Freight where its declared stage does; joins exactly where a gate or another
 * environment takes Freight from an environment stage, from every program's stage there.
 */
function expectExpansion(
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
  for (const j of joins) {
    expect(j.from, j.name).toEqual(p.programs.map((x) => programStageName(j.declared, x.name)));
    expect(j.requireAll, j.name).toBe(p.programs.length > 1);
  }
  // Only gates keep their declared names, besides the joins.
  expect(stages.filter((s) => s.kind === "gate").map((s) => s.name)).toEqual(
    expect.arrayContaining(p.stages.filter(isGate).map((s) => s.name)),
  );
}

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
