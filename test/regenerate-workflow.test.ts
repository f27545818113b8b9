// Upgrade pull requests regenerate what a bump changes: the required CI job (ci.yml, called by preview.yml on
// every pull request) runs lib/cli/regenerate.ts --check on each branch Renovate opens (its branchPrefix in
// renovate.json5), its `if` evaluated by GitHub's own expression engine (@actions/expressions); the check
// names each command that changed a committed file, run here against a real git repository.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Evaluator, Lexer, Parser, data } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";
import JSON5 from "json5";
import YAML from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { regenerators, staleCommands, staleReport } from "../lib/cli/regenerate";
import { repoRoot } from "../lib/cli/plan/projects";

type Step = { uses?: string; run?: string; if?: string };
const ci = YAML.parse(fs.readFileSync(path.join(repoRoot, ".github", "workflows", "ci.yml"), "utf8")) as {
  jobs: Record<string, { steps: Step[] }>;
};
const renovate = JSON5.parse(fs.readFileSync(path.join(repoRoot, "renovate.json5"), "utf8")) as {
  branchPrefix?: string;
};
const scripts = (
  JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts;

/** A step's `if` as GitHub evaluates it, for a run whose github.head_ref is `headRef` ("" on a push). */
function runsFor(step: Step, headRef: string): boolean {
  if (step.if === undefined) return true;
  const condition = step.if.replace(/^\$\{\{\s*|\s*\}\}$/g, "");
  const expr = new Parser(new Lexer(condition).lex().tokens, ["github"], []).parse();
  const context = new data.Dictionary({
    key: "github",
    value: JSON.parse(
      JSON.stringify({ head_ref: headRef, event_name: headRef ? "pull_request" : "push" }),
      data.reviver,
    ),
  });
  return truthy(new Evaluator(expr, context, new Map()).evaluate());
}

describe("the regeneration check in CI", () => {
  // Renovate's default branchPrefix (docs.renovatebot.com configuration-options, branchPrefix).
  const prefix = renovate.branchPrefix ?? "renovate/";
  const [job] = Object.values(ci.jobs);
  const steps = job!.steps;
  const check = steps.findIndex((s) => s.run === "npm run regenerate -- --check");

  it("runs on every branch Renovate opens, and on no other pull request or push", () => {
    expect(check, "ci.yml runs npm run regenerate -- --check").toBeGreaterThanOrEqual(0);
    for (const branch of [`${prefix}kargo`, `${prefix}major-argo-cd`, `${prefix}github.com-akuity-kargo-1.x`])
      expect(runsFor(steps[check]!, branch), branch).toBe(true);
    for (const branch of ["", "feature/renovate", "renovate", "fix-renovate/x"])
      expect(runsFor(steps[check]!, branch), branch || "a push").toBe(false);
  });

  it("runs after Node, Go and the packages are installed, and before the tests", () => {
    expect(scripts.regenerate).toBe("tsx lib/cli/regenerate.ts");
    const at = (predicate: (s: Step) => boolean) => steps.findIndex(predicate);
    for (const before of [
      at((s) => !!s.uses?.startsWith("actions/checkout@")),
      at((s) => !!s.uses?.startsWith("actions/setup-node@")),
      at((s) => !!s.uses?.startsWith("actions/setup-go@")),
      at((s) => s.run === "npm ci"),
    ]) {
      expect(before).toBeGreaterThanOrEqual(0);
      expect(before).toBeLessThan(check);
    }
    expect(check).toBeLessThan(at((s) => s.run === "npm test"));
  });

  it("regenerates with commands that exist: each names an npm script of package.json", () => {
    for (const command of regenerators) {
      const script = /^npm run ([\w:-]+)/.exec(command)?.[1];
      expect(script && scripts[script], command).toBeTruthy();
    }
  });
});

describe("npm run regenerate -- --check", () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), "regenerate-"));
  afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));
  const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });
  git("init", "-q");
  fs.writeFileSync(path.join(repo, "types.ts"), "old\n");
  fs.writeFileSync(path.join(repo, "table.md"), "same\n");
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base");
  const write = (file: string, text: string) =>
    `node -e "require('fs').writeFileSync('${file}', '${text}\\n')"`;

  it("names each command that changed a committed file or made a new one, and the files", () => {
    const stale = staleCommands(
      [
        write("types.ts", "new"),
        write("table.md", "same"),
        write("stacks.yaml", "x"),
        write("types.ts", "new"),
      ],
      repo,
    );
    expect(stale).toEqual([
      { command: write("types.ts", "new"), files: ["types.ts"] },
      { command: write("stacks.yaml", "x"), files: ["stacks.yaml"] },
    ]);
    expect(staleReport(stale)[0]).toBe(
      `\`${write("types.ts", "new")}\` changed types.ts: run \`${write("types.ts", "new")}\` on this branch and commit the result`,
    );
  });

  it("is quiet when every command leaves the files as committed, and names a command that fails", () => {
    git("checkout", "-q", "--", ".");
    git("clean", "-qfd");
    expect(staleCommands([write("table.md", "same"), "true"], repo)).toEqual([]);
    const failed = staleCommands(["exit 3"], repo);
    expect(failed).toEqual([{ command: "exit 3", files: [], failed: "exit status 3" }]);
    expect(staleReport(failed)).toEqual([
      "`exit 3` failed (exit status 3): run it on this branch and fix what it reports",
    ]);
  });
});
