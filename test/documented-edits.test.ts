// docs/make-it-yours.md's edits leave the linter green: removing a program (its entry in kargo/pipeline.ts and the
// import of its access) and then `npm run format`, as the page says, in a copy of the repository. And its
// section on a Go program says what the code does: the image, what `pulumi install` needs, what the plugin
// cache reads of go.mod.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { repoRoot } from "../lib/cli/plan/projects";
import { programPlugins } from "../lib/pipeline/program-plugins";
import { WORKSPACE_IMAGES } from "../lib/pipeline/schema";
import { copyOfRepository } from "./repo-copy";

const run = promisify(execFile);
const bin = (name: string) => path.join(repoRoot, "node_modules", ".bin", name);
const page = fs.readFileSync(path.join(repoRoot, "docs/make-it-yours.md"), "utf8");
const section = (heading: string) => {
  const start = page.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(0);
  return page.slice(start, page.indexOf("\n#", start + heading.length + 2));
};

/**
 * kargo/pipeline.ts without program `name`: its element of `programs`, and every import the file no longer
 * uses, removed from the source as a person would (nothing else touched).
 */
function withoutProgram(source: string, name: string): string {
  const file = ts.createSourceFile("pipeline.ts", source, ts.ScriptTarget.Latest, true);
  const cuts: [number, number][] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isObjectLiteralExpression(node) &&
      node.properties.some(
        (p) =>
          ts.isPropertyAssignment(p) &&
          p.name.getText() === "name" &&
          ts.isStringLiteral(p.initializer) &&
          p.initializer.text === name,
      ) &&
      ts.isArrayLiteralExpression(node.parent)
    ) {
      const end = source.slice(node.end).match(/^\s*,/)?.[0].length ?? 0;
      cuts.push([node.getFullStart(), node.end + end]);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  expect(cuts, `program ${name} in kargo/pipeline.ts`).toHaveLength(1);
  let edited = source.slice(0, cuts[0]![0]) + source.slice(cuts[0]![1]);
  const rest = ts.createSourceFile("pipeline.ts", edited, ts.ScriptTarget.Latest, true);
  for (const statement of rest.statements.filter(ts.isImportDeclaration).reverse()) {
    const names = statement.importClause?.namedBindings;
    if (!names || !ts.isNamedImports(names)) continue;
    const body = edited.slice(statement.end);
    if (names.elements.every((e) => !new RegExp(`\\b${e.name.text}\\b`).test(body)))
      edited = edited.slice(0, statement.getFullStart()) + edited.slice(statement.end);
  }
  return edited;
}

describe("removing a program as docs/make-it-yours.md says", () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "documented-edits-"));
  const file = path.join(copy, "kargo/pipeline.ts");
  // One no other program depends on, so the rest of the pipeline stands.
  const removed = definition.programs.find(
    (x) => !definition.programs.some((y) => y.dependsOn?.includes(x.name)),
  )!;
  beforeAll(async () => {
    await copyOfRepository(copy);
    fs.writeFileSync(file, withoutProgram(fs.readFileSync(file, "utf8"), removed.name));
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("names npm run format as the step after the edit", () => {
    expect(section("### Remove a program")).toContain("`npm run format`");
    expect(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")).toMatch(
      /"format": "prettier --write \. && eslint --fix \."/,
    );
  });

  it("leaves prettier and eslint green once formatted", async () => {
    expect(fs.readFileSync(file, "utf8")).not.toContain(`name: "${removed.name}"`);
    // What `npm run format` does (prettier --write ., then eslint --fix .), to the one file the edit changed.
    await run(bin("prettier"), ["--write", "kargo/pipeline.ts"], { cwd: copy });
    // `eslint --fix` lints the file again once fixed and reports (and exits 1 on) whatever is left: what
    // `eslint` would say next. One run, as eslint builds the whole project's type information each time.
    const lint = await run(bin("eslint"), ["--fix", "kargo/pipeline.ts"], { cwd: copy }).then(
      ({ stdout }) => stdout,
      (err: { stdout: string }) => err.stdout || String(err),
    );
    expect(lint).toBe("");
    await expect(
      run(bin("prettier"), ["--check", "kargo/pipeline.ts"], { cwd: copy }),
    ).resolves.toBeDefined();
  });
});

describe("docs/make-it-yours.md's Go program", () => {
  const go = section("### Add a program in Go");

  it("names the image its workspaces run, and what pulumi install needs", () => {
    expect(go).toContain(`\`${WORKSPACE_IMAGES.go}\``);
    expect(go).toContain("`go.mod`");
    expect(go).toContain("`go.sum`");
  });

  it("pins in go.mod what the plugin cache reads as the providers it states", () => {
    const goMod = /```\n(module [\s\S]*?)```/.exec(go)?.[1];
    expect(goMod).toBeDefined();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "go-program-"));
    try {
      fs.writeFileSync(path.join(dir, "go.mod"), goMod!);
      const plugins = programPlugins(dir, "go");
      expect(plugins.length).toBeGreaterThan(0);
      for (const { name, version } of plugins) expect(go).toContain(`\`${name}\` ${version}`);
      // Pulumi's own SDK, pinned at the version the image carries, is no provider.
      const sdk = WORKSPACE_IMAGES.go!.split(":")[1];
      expect(goMod).toContain(`github.com/pulumi/pulumi/sdk/v3 v${sdk}`);
      expect(plugins.map((p) => p.name)).not.toContain("pulumi");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
