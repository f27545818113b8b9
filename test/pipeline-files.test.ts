// What a pipeline definition points at on disk: each program's config file for each environment in its
// folder, paths resolved through symlinks, and `npm run stacks`, which never writes or deletes a file not its own.
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { validatePipeline } from "../lib/pipeline/validate";
import { isGenerated, writeStacks } from "../lib/pipeline/stacks";
import {
  base,
  stackFiles,
  firstProgram,
  escaped,
  firstStack,
  forFirstEnvironment,
  testProgram,
  withExtraProgram,
  withStacks,
  problemsOf,
  tempDir,
  removeTempDirs,
  tempRepo,
} from "./pipeline-support";

afterEach(removeTempDirs);

describe("each environment's config file in each program's folder", () => {
  const withDevConfig = (text: string | undefined) => {
    const repo = tempRepo();
    const file = path.join(repo, firstProgram.dir, `Pulumi.${firstStack}.yaml`);
    if (text === undefined) fs.rmSync(file);
    else fs.writeFileSync(file, text);
    return repo;
  };
  it.each([
    [
      "a missing file",
      undefined,
      /programs\.PROGRAM: Pulumi\.dev\.yaml is missing; each program has its stack config for environment "dev" in its folder, as Pulumi\.<pulumiStack>\.yaml \("config: \{\}" if it needs none\)/,
    ],
    [
      "text that is not YAML",
      "config:\n  aws:region: [us-west-2\n",
      /Pulumi\.dev\.yaml: is not valid YAML \(\w/,
    ],
    [
      "a list",
      "- aws:region\n",
      /Pulumi\.dev\.yaml: must be a map of stack settings such as "config:", not a list/,
    ],
    [
      "a misspelt top-level key",
      "confg:\n  aws:region: us-west-2\n",
      /Pulumi\.dev\.yaml: unknown key "confg"; allowed: config, /,
    ],
    [
      "config that is not a map",
      "config: us-west-2\n",
      /Pulumi\.dev\.yaml: config must be a map of <namespace>:<key> to values/,
    ],
    [
      "a config key without a namespace",
      "config:\n  region: us-west-2\n",
      /Pulumi\.dev\.yaml: config\.region: "region" is not a Pulumi config key; allowed: <namespace>:<key>/,
    ],
    [
      "a config key with two colons",
      "config:\n  aws:region:x: us-west-2\n",
      /Pulumi\.dev\.yaml: config\.aws:region:x: "aws:region:x" is not a Pulumi config key; allowed: <namespace>:<key>/,
    ],
    [
      "an aws:region that is no AWS region",
      "config:\n  aws:region: us-west-9\n",
      /Pulumi\.dev\.yaml: config\.aws:region: "us-west-9" is not an AWS region; allowed: a region such as us-west-2/,
    ],
    [
      "a config value that is null",
      "config:\n  aws:region: us-west-2\n  infra-program:tags:\n    a: null\n",
      /Pulumi\.dev\.yaml: config\.infra-program:tags: has no value; allowed: a string, number, boolean, or a list or map of those/,
    ],
    [
      "a number YAML reads as infinite",
      "config:\n  infra-program:limit: .inf\n",
      /Pulumi\.dev\.yaml: config\.infra-program:limit: Infinity is not a finite number; allowed: a string, number, boolean/,
    ],
    [
      "a NaN inside a list",
      "config:\n  infra-program:limits: [1, .nan]\n",
      /Pulumi\.dev\.yaml: config\.infra-program:limits: NaN is not a finite number; allowed:/,
    ],
    [
      "a value a YAML tag makes a timestamp",
      "config:\n  infra-program:since: !!timestamp 2001-12-14\n",
      /Pulumi\.dev\.yaml: config\.infra-program:since: a Date is not a config value; allowed:/,
    ],
    [
      "binary data inside a map",
      "config:\n  infra-program:files:\n    logo: !!binary aGVsbG8=\n",
      /Pulumi\.dev\.yaml: config\.infra-program:files: a Uint8Array is not a config value; allowed:/,
    ],
    [
      "a value nested deeper than 32 levels",
      `config:\n  infra-program:deep: ${"[".repeat(33)}1${"]".repeat(33)}\n`,
      /Pulumi\.dev\.yaml: config\.infra-program:deep: is nested more than 32 lists or maps deep; allowed:/,
    ],
    [
      "maps nested 33 deep",
      `config:\n  infra-program:deep: ${"{a: ".repeat(33)}1${"}".repeat(33)}\n`,
      /Pulumi\.dev\.yaml: config\.infra-program:deep: is nested more than 32 lists or maps deep; allowed:/,
    ],
  ])("rejects %s, naming the file and what is allowed", (_, text, message) => {
    expect(problemsOf(base, withDevConfig(text))).toMatch(forFirstEnvironment(message));
  });

  it("accepts structured values, encrypted secrets, an empty file and config with no value", () => {
    const structured =
      "config:\n  aws:region: eu-central-1\n  aws:defaultTags:\n    tags:\n      team: infra\n  infra-program:n: 3\n" +
      "  infra-program:token:\n    secure: AAABAG==\n  infra-program:enabled: true\nencryptionsalt: v1:abc\n";
    // `config:` with no value is how a file reads once its last key is removed; the CLI takes it as no config.
    const deepest = `config:\n  infra-program:deep: ${"[{a: ".repeat(16)}1${"}]".repeat(16)}\n`;
    for (const text of [structured, deepest, "", "# no settings yet\n", "config:\n"]) {
      expect(() => validatePipeline(base, { repoRoot: withDevConfig(text) })).not.toThrow();
    }
  });
});

describe("paths resolved on disk", () => {
  it("refuses a stacks directory that is a symlink out of the repository", () => {
    const repo = tempRepo();
    const outside = tempDir("outside-");
    fs.symlinkSync(outside, path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(
      /stacks\.dir: "stacks" resolves to .*, outside the repository \(through a symlink\)/,
    );
  });
  it("refuses a stacks directory that is a symlink into a project folder", () => {
    const repo = tempRepo();
    fs.symlinkSync(path.join(repo, "kargo"), path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(/stacks\.dir: "stacks" is the repository's kargo\/ folder/);
  });
  it("refuses a stacks directory inside a Pulumi project", () => {
    const repo = tempRepo();
    fs.mkdirSync(path.join(repo, "app"));
    fs.writeFileSync(path.join(repo, "app", "Pulumi.yaml"), "name: app\n");
    expect(problemsOf(withStacks({ dir: "app/stacks" }), repo)).toMatch(
      /stacks\.dir: "app\/stacks" is inside a Pulumi project \(app\/Pulumi\.yaml\)/,
    );
  });
  it("refuses a stacks directory written with backslashes, naming the separator allowed", () => {
    expect(problemsOf(withStacks({ dir: "deploy\\stacks" }), tempRepo())).toMatch(
      /stacks\.dir: "deploy\\stacks" is not a relative path; allowed: a folder of the repository such as "stacks", with "\/" separators/,
    );
  });
  it("refuses a stacks directory that is a symlink to the folder holding the repository", () => {
    const outer = tempDir("outer-");
    const repo = tempRepo(path.join(outer, "repo"));
    fs.symlinkSync(outer, path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(
      /stacks\.dir: "stacks" resolves to .*, outside the repository \(through a symlink\)/,
    );
  });
  it("refuses a stacks directory that holds a Pulumi project", () => {
    const repo = tempRepo();
    fs.mkdirSync(path.join(repo, "app"));
    fs.writeFileSync(path.join(repo, "app", "Pulumi.yaml"), "name: app\n");
    expect(problemsOf(withStacks({ dir: "app" }), repo)).toMatch(
      /stacks\.dir: "app" is a Pulumi project \(app\/Pulumi\.yaml\); allowed: a folder that holds only the generated Stack manifests/,
    );
  });
  it("refuses a program's folder as the stacks directory", () => {
    expect(problemsOf(withStacks({ dir: firstProgram.dir }), tempRepo())).toMatch(
      new RegExp(
        `stacks\\.dir: "${escaped(firstProgram.dir)}" is the promoted program's folder ${escaped(firstProgram.dir)} \\(programs\\[\\]\\.dir\\); allowed: a folder of its own`,
      ),
    );
  });
  describe("beside a program's folder", () => {
    // A fork that keeps its stacks next to a program: beside it is fine, inside it is not.
    const besideProgram = path.posix.join(path.posix.dirname(firstProgram.dir), "zz-test-stacks");
    const insideProgram = path.posix.join(firstProgram.dir, "zz-test-stacks");
    it("accepts a stacks directory beside it", () => {
      expect(() =>
        validatePipeline(withStacks({ dir: besideProgram }), { repoRoot: tempRepo() }),
      ).not.toThrow();
    });
    it("refuses a stacks directory inside it", () => {
      expect(problemsOf(withStacks({ dir: insideProgram }), tempRepo())).toMatch(
        new RegExp(
          `stacks\\.dir: "${escaped(insideProgram)}" is inside the promoted program's folder ${escaped(firstProgram.dir)} \\(programs\\[\\]\\.dir\\); allowed: a folder of its own`,
        ),
      );
    });
  });
  it("refuses a stacks directory through a looping symlink, which mkdir would trip over", () => {
    const repo = tempRepo();
    fs.symlinkSync(path.join(repo, "stacks"), path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(
      /stacks\.dir: "stacks" goes through a broken or looping symlink; allowed: a real folder of the repository/,
    );
  });
  it("refuses a stacks directory that is a symlink to the repository root, where stacks would overwrite the program", () => {
    const repo = tempRepo();
    fs.symlinkSync(repo, path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(
      /stacks\.dir: "stacks" resolves to the repository root; allowed: a folder of its own/,
    );
  });
  it("refuses a program's folder through a dangling symlink, naming programs.<name>.dir", () => {
    const repo = tempRepo();
    fs.symlinkSync(path.join(repo, "not-yet"), path.join(repo, testProgram));
    expect(problemsOf(withExtraProgram({ dir: testProgram }), repo)).toMatch(
      new RegExp(
        `programs\\.${testProgram}\\.dir: "${testProgram}" goes through a broken or looping symlink; allowed: a real folder of the repository`,
      ),
    );
  });
  it("refuses a stacks directory through a dangling symlink out of the repository", () => {
    const repo = tempRepo();
    fs.symlinkSync(path.join(tempDir("outside-"), "not-yet"), path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(/stacks\.dir: "stacks" goes through a broken or looping symlink/);
  });
  it("refuses a program's folder that is a symlink out of the repository", () => {
    const repo = tempRepo();
    const outside = tempDir("outside-");
    fs.writeFileSync(path.join(outside, "Pulumi.yaml"), `name: ${testProgram}\nruntime: yaml\n`);
    fs.symlinkSync(outside, path.join(repo, testProgram));
    expect(problemsOf(withExtraProgram({ dir: testProgram }), repo)).toMatch(
      new RegExp(
        `programs\\.${testProgram}\\.dir: "${testProgram}" resolves to .*, outside the repository \\(through a symlink\\)`,
      ),
    );
  });
});

describe("npm run stacks", () => {
  const pipeline = (dir = "stacks") => validatePipeline(withStacks({ dir }));

  it("writes one generated manifest per program and environment stage into its own folder", () => {
    const repo = tempRepo();
    const { written } = writeStacks(pipeline(), repo);
    expect(written.sort()).toEqual(stackFiles.map((f) => `stacks/${f}`).sort());
    expect(fs.readdirSync(path.join(repo, "stacks")).sort()).toEqual([...stackFiles].sort());
    for (const f of stackFiles) expect(isGenerated(path.join(repo, "stacks", f))).toBe(true);
  });

  it("deletes only stale manifests it generated, never other files", () => {
    const repo = tempRepo();
    writeStacks(pipeline(), repo);
    const dir = path.join(repo, "stacks");
    fs.copyFileSync(path.join(dir, stackFiles[0]!), path.join(dir, "oldstage.yaml"));
    fs.writeFileSync(path.join(dir, "notes.yaml"), "mine: true\n");
    fs.writeFileSync(path.join(dir, "README.md"), "# stacks\n");
    const { removed, leftAlone } = writeStacks(pipeline(), repo);
    expect(removed).toEqual(["stacks/oldstage.yaml"]);
    expect(leftAlone).toEqual(["stacks/notes.yaml"]);
    expect(fs.readFileSync(path.join(dir, "notes.yaml"), "utf8")).toBe("mine: true\n");
    expect(fs.existsSync(path.join(dir, "README.md"))).toBe(true);
  });

  it("keeps a file whose first line is not wholly its header: one starting like it, or one naming the generator", () => {
    const repo = tempRepo();
    writeStacks(pipeline(), repo);
    const dir = path.join(repo, "stacks");
    fs.writeFileSync(path.join(dir, "copy.yaml"), '# PKO Stack template of pipeline stage "dev", my copy\n');
    fs.writeFileSync(path.join(dir, "notes.yaml"), "# Written like the ones Generated by `npm run stacks`\n");
    const { removed, leftAlone } = writeStacks(pipeline(), repo);
    expect(removed).toEqual([]);
    expect(leftAlone.sort()).toEqual(["stacks/copy.yaml", "stacks/notes.yaml"]);
  });

  it("names what it wrote under stacks.dir as given with a trailing slash", () => {
    const repo = tempRepo();
    const { written } = writeStacks(pipeline("deploy/stacks/"), repo);
    expect(written.sort()).toEqual(stackFiles.map((f) => `deploy/stacks/${f}`).sort());
    expect(isGenerated(path.join(repo, "deploy", "missing.yaml"))).toBe(false);
  });

  it("with a project folder as the stacks directory, deletes nothing (its Pulumi.yaml stays)", () => {
    const repo = tempRepo();
    const before = fs.readdirSync(path.join(repo, "kargo"));
    // Bypass validatePipeline to show the generator refuses on its own.
    const input = { ...pipeline(), stacks: { ...pipeline().stacks, dir: "kargo" } };
    expect(() => writeStacks(input, repo)).toThrow(/stacks\.dir: "kargo" is the repository's kargo\/ folder/);
    expect(fs.readdirSync(path.join(repo, "kargo"))).toEqual(before);
    expect(fs.readFileSync(path.join(repo, "kargo", "Pulumi.yaml"), "utf8")).toBe(
      "name: kargo\nruntime: nodejs\n",
    );
  });

  it("refuses a folder that holds a Pulumi.yaml, which stays", () => {
    const repo = tempRepo();
    fs.mkdirSync(path.join(repo, "app"));
    fs.writeFileSync(path.join(repo, "app", "Pulumi.yaml"), "name: app\n");
    const input = { ...pipeline(), stacks: { ...pipeline().stacks, dir: "app" } };
    expect(() => writeStacks(input, repo)).toThrow(/stacks\.dir: "app" is a Pulumi project/);
    expect(fs.readdirSync(path.join(repo, "app"))).toEqual(["Pulumi.yaml"]);
  });

  it.each([
    ["../escaped", "a folder beside the repository"],
    ["ABSOLUTE", "an absolute folder beside the repository"],
    ["stacks/../../escaped", "a folder reached through stacks/.."],
  ])("writes nothing outside the repository for %j (%s)", (dir) => {
    // The repository sits alone in a temporary folder: anything written outside it would show up there.
    const outer = tempDir("outer-");
    const repo = tempRepo(path.join(outer, "repo"));
    const before = fs.readdirSync(repo, { recursive: true }).sort();
    const stacksDir = dir === "ABSOLUTE" ? path.join(outer, "escaped") : dir;
    const input = { ...pipeline(), stacks: { ...pipeline().stacks, dir: stacksDir } };
    expect(() => writeStacks(input, repo)).toThrow(
      /stacks\.dir: .*(not a relative path|leaves the repository)/,
    );
    expect(fs.readdirSync(outer)).toEqual(["repo"]);
    expect(fs.readdirSync(repo, { recursive: true }).sort()).toEqual(before);
  });

  it("writes nothing through a stacks directory symlinked out of the repository", () => {
    const repo = tempRepo();
    const outside = tempDir("outside-");
    fs.symlinkSync(outside, path.join(repo, "stacks"));
    expect(() => writeStacks(pipeline("stacks"), repo)).toThrow(
      /outside the repository \(through a symlink\)/,
    );
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it("writes nothing over a file it did not generate, nor through a symlink in its folder", () => {
    const repo = tempRepo();
    const dir = path.join(repo, "stacks");
    fs.mkdirSync(dir);
    // Three of the files the pipeline wants (a pipeline has at least a preview and an update stage).
    const [hand, broken = "other.yaml", linked = hand!] = [...stackFiles].reverse();
    const [handFile, linkedFile] = hand === linked ? [stackFiles[0]!, stackFiles[1]!] : [hand!, linked];
    fs.writeFileSync(path.join(dir, handFile), "hand: written\n");
    fs.writeFileSync(path.join(dir, broken), "not: [yaml\n");
    const target = path.join(tempDir("outside-"), "target.yaml");
    fs.writeFileSync(target, "outside: true\n");
    fs.symlinkSync(target, path.join(dir, linkedFile));
    const error = (() => {
      try {
        writeStacks(pipeline(), repo);
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    })();
    for (const f of [handFile, linkedFile])
      expect(error).toContain(`stacks.dir: stacks/${f} exists and was not generated by \`npm run stacks\``);
    expect(fs.readFileSync(path.join(dir, handFile), "utf8")).toBe("hand: written\n");
    expect(fs.readFileSync(target, "utf8")).toBe("outside: true\n");
    expect(fs.readFileSync(path.join(dir, broken), "utf8")).toBe("not: [yaml\n");
    expect(fs.readdirSync(dir).sort()).toEqual([...new Set([handFile, broken, linkedFile])].sort());
  });

  it("never deletes through a symlink that looks generated", () => {
    const repo = tempRepo();
    writeStacks(pipeline(), repo);
    const target = path.join(tempDir("outside-"), "old.yaml");
    fs.copyFileSync(path.join(repo, "stacks", stackFiles[0]!), target);
    fs.symlinkSync(target, path.join(repo, "stacks", "oldstage.yaml"));
    const { removed, leftAlone } = writeStacks(pipeline(), repo);
    expect(removed).toEqual([]);
    expect(leftAlone).toEqual(["stacks/oldstage.yaml"]);
    expect(fs.existsSync(target)).toBe(true);
  });
});
