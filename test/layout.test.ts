// The house a fork reads before it trusts it: imports flow one way. No file imports one that imports it
// back; the library the three programs import (lib/, outside lib/cli/) never reaches into a project or the
// policy pack; the programs never import the command-line tools; and every `npm run` script starts in
// lib/cli/ or test/. Imports are read with TypeScript's own preprocessor, type-only imports included.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";

const programFolders = ["cluster", "cluster-setup", "kargo", "policy"];
const sources = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "*.ts"], {
  cwd: repoRoot,
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => f && !f.startsWith("test/") && fs.existsSync(path.join(repoRoot, f)));

/** Repository file → the repository files it imports (relative imports resolved as tsx resolves them). */
const imports = new Map(
  sources.map((file) => {
    const text = fs.readFileSync(path.join(repoRoot, file), "utf8");
    const targets = ts
      .preProcessFile(text, true, true)
      .importedFiles.map((i) => i.fileName)
      .filter((spec) => spec.startsWith("."))
      .flatMap((spec) => {
        const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
        const found = [`${base}.ts`, `${base}/index.ts`, base].find((f) => sources.includes(f));
        return found ? [found] : [];
      });
    return [file, targets];
  }),
);

const under = (folder: string) => (file: string) => file.startsWith(`${folder}/`);

describe("the import graph", () => {
  it("reads the library, the tools and the programs", () => {
    expect(sources.filter(under("lib/pipeline")).length).toBeGreaterThan(0);
    expect(sources.filter(under("lib/cli")).length).toBeGreaterThan(0);
    for (const folder of programFolders) expect(sources.filter(under(folder)).length).toBeGreaterThan(0);
  });

  it("has no loop: no file imports one that imports it back", () => {
    const state = new Map<string, "open" | "done">();
    const loops: string[] = [];
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        loops.push([...trail.slice(trail.indexOf(file)), file].join(" -> "));
        return;
      }
      state.set(file, "open");
      for (const next of imports.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, "done");
    };
    for (const file of sources) visit(file, []);
    expect(loops).toEqual([]);
  });

  it("keeps the library out of the projects: only lib/cli/ imports a file outside lib/", () => {
    const reaching = [...imports]
      .filter(([file]) => under("lib")(file) && !under("lib/cli")(file))
      .flatMap(([file, targets]) => targets.filter((t) => !under("lib")(t)).map((t) => `${file} -> ${t}`));
    expect(reaching).toEqual([]);
  });

  it("keeps the tools out of the programs: nothing outside lib/cli/ imports it", () => {
    const reaching = [...imports]
      .filter(([file]) => !under("lib/cli")(file))
      .flatMap(([file, targets]) => targets.filter(under("lib/cli")).map((t) => `${file} -> ${t}`));
    expect(reaching).toEqual([]);
  });

  it("starts every npm script that runs a TypeScript file in lib/cli/ or test/", () => {
    const { scripts } = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const entries = Object.values(scripts).flatMap((s) => s.match(/[\w./-]+\.ts\b/g) ?? []);
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.filter((f) => !under("lib/cli")(f) && !under("test")(f))).toEqual([]);
  });
});

// The house rule: no source file over 400 lines. Generated CRD types (lib/crds/generated/) are exempt, and so
// are lock files, JSON, YAML and Markdown, which this list of extensions leaves out. Untracked files a commit
// would add count too, so a new long file fails here before it lands.
const MAX_LINES = 400;
const sourceExtensions = ["ts", "mts", "mjs", "go", "lua", "sh"];
const exempt = ["lib/crds/generated/", "node_modules/"];

describe("the size of each source file", () => {
  const files = execFileSync(
    "git",
    ["ls-files", "-co", "--exclude-standard", "--", ...sourceExtensions.map((e) => `*.${e}`)],
    { cwd: repoRoot, encoding: "utf8" },
  )
    .split("\n")
    .filter(
      (f) =>
        f &&
        !exempt.some((dir) => f.startsWith(dir) || f.includes(`/${dir}`)) &&
        fs.existsSync(path.join(repoRoot, f)),
    );
  /** Lines as `wc -l` counts them, plus a last line with no newline after it. */
  const linesOf = (file: string) => {
    const text = fs.readFileSync(path.join(repoRoot, file), "utf8");
    return text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  };

  it("reads the TypeScript and the Go, and none of the generated CRD types", () => {
    expect(files).toContain("test/layout.test.ts");
    expect(files.some((f) => f.endsWith(".go"))).toBe(true);
    expect(files.filter((f) => f.startsWith("lib/crds/generated/"))).toEqual([]);
  });

  it(`has no file over ${MAX_LINES} lines`, () => {
    const over = files
      .map((file) => ({ file, lines: linesOf(file) }))
      .filter(({ lines }) => lines > MAX_LINES)
      .map(({ file, lines }) => `${file}: ${lines} lines (at most ${MAX_LINES})`);
    expect(over).toEqual([]);
  });
});
