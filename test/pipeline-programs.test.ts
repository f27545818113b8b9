// The promoted programs of a pipeline definition (kargo/pipeline.ts `programs`): what a program's folder,
// Pulumi project, runtime, lock files and dependencies must be, each refusal naming the field and what is
// allowed, over made-up pipelines whose programs are written into a throwaway checkout. The Kargo stages the
// programs make are pipeline-program-stages.test.ts's.
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RESERVED_FOLDERS } from "../lib/pipeline/check-repository";
import { programStages } from "../lib/pipeline/graph";
import { MAX_PROGRAM_NAME, WORKSPACE_IMAGES } from "../lib/pipeline/schema";
import { stackManifest } from "../lib/pipeline/stack-manifest";
import {
  accepted,
  declared,
  escaped,
  linesOf,
  madeUpEnvironments as environments,
  madeUpProject as project,
  packageJson,
  packageLock,
  problemsOf,
  refused,
  removeTempDirs,
  repoOf,
  testProgram,
  writeProgram,
} from "./pipeline-support";

afterEach(removeTempDirs);

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
