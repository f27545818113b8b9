// A fork's documented edits leave the linter green, each in a copy of the repository: removing a program as
// docs/make-it-yours.md says (its entry in kargo/pipeline.ts and the import of its access, then `npm run
// format`), and `npm run personalize -- --account` (docs/accounts.md), which writes kargo/pipeline.ts itself.
// One ESLint process lints both copies: each run builds the whole project's type information (about ten
// seconds), and a second copy in the same process reuses the libraries' declarations the first parsed. And
// docs/make-it-yours.md's section on a Go program says what the code does: the image, what `pulumi install`
// needs, what the plugin cache reads of go.mod.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { accountRoleName, namedAccounts, roleArn } from "../lib/pipeline/accounts";
import { AWS_REGIONS } from "../lib/pipeline/check-accounts";
import { validatePipeline } from "../lib/pipeline/validate";
import { plannedRoles, type PlanLike } from "../lib/cli/plan/iam-roles";
import { PLAN_ACCOUNT_ID } from "../lib/cli/plan/mocks";
import { repoRoot } from "../lib/cli/plan/projects";
import { programPlugins } from "../lib/pipeline/program-plugins";
import { WORKSPACE_IMAGES } from "../lib/pipeline/schema";
import { runPersonalize as runInProcess } from "./personalize-support";
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

/** What `eslint [--fix] <file>` run in a copy prints (stylish, nothing when the file is clean), and its errors. */
interface Linted {
  output: string;
  errors: number;
}

/**
 * Lints one file of each copy in one process, as `eslint [--fix] <file>` run in that copy does: ESLint's API
 * with the copy as its working directory (so the copy's eslint.config.mjs and tsconfig.json), fixes written
 * where asked, the remaining problems formatted as the command prints them.
 */
async function eslintOnce(jobs: { cwd: string; file: string; fix: boolean }[]): Promise<Linted[]> {
  const script = `
const { ESLint } = require(${JSON.stringify(require.resolve("eslint", { paths: [repoRoot] }))});
(async () => {
  const linted = [];
  for (const job of JSON.parse(process.argv[1])) {
    const eslint = new ESLint({ cwd: job.cwd, fix: job.fix });
    const results = await eslint.lintFiles([job.file]);
    if (job.fix) await ESLint.outputFixes(results);
    const output = await (await eslint.loadFormatter("stylish")).format(results);
    linted.push({ output, errors: results.reduce((n, r) => n + r.errorCount, 0) });
  }
  process.stdout.write(JSON.stringify(linted));
})();`;
  const { stdout } = await run(process.execPath, ["-e", script, JSON.stringify(jobs)], {
    maxBuffer: 64 << 20,
  });
  return JSON.parse(stdout);
}

// Removing a program, in a copy of its own.
const removal = fs.mkdtempSync(path.join(os.tmpdir(), "documented-edits-"));
const removalFile = path.join(removal, "kargo/pipeline.ts");
// One no other program depends on, so the rest of the pipeline stands.
const removed = definition.programs.find(
  (x) => !definition.programs.some((y) => y.dependsOn?.includes(x.name)),
)!;
let removedBeforeFormat: string;

async function removeProgram(): Promise<void> {
  await copyOfRepository(removal);
  fs.writeFileSync(removalFile, withoutProgram(fs.readFileSync(removalFile, "utf8"), removed.name));
  removedBeforeFormat = fs.readFileSync(removalFile, "utf8");
  // What `npm run format` does (prettier --write ., then eslint --fix .), to the one file the edit changed:
  // prettier here, eslint --fix in the suite's one ESLint run (below).
  await run(bin("prettier"), ["--write", "kargo/pipeline.ts"], { cwd: removal });
}

// `npm run personalize -- --account`: an environment in an AWS account of its own, written into a copy of this
// repository's kargo/pipeline.ts by the CLI itself, then planned as test/accounts-fork.test.ts plans such a fork.
const envs = Object.keys(definition.environments);
const last = envs.at(-1)!;
// An account no environment names yet, so its roles are the moved environment's and its previews' only.
const account = ["210987654321", "310987654321", "410987654321"].find(
  (a) => a !== PLAN_ACCOUNT_ID && !namedAccounts(definition.environments).includes(a),
)!;
const region = AWS_REGIONS.find((r) => r !== definition.environments[last]!.aws?.region)!;
const base = validatePipeline(definition).stacks.serviceAccountName;
const accountCopy = fs.mkdtempSync(path.join(os.tmpdir(), "personalize-account-"));
const node = (args: string[]) => run(process.execPath, ["--import", "tsx", ...args], { cwd: accountCopy });
const cli = (...args: string[]) => node(["lib/cli/personalize.ts", ...args]);
/** The files under `dir` of the account copy, but node_modules and the plan: not walked into (a recursive readdir
 * follows the node_modules link, fifty thousand entries). */
const filesOf = (dir: string): string[] =>
  fs.readdirSync(path.join(accountCopy, dir), { withFileTypes: true }).flatMap((e) => {
    const file = path.join(dir, e.name);
    if (/^(node_modules|plan-out)\b/.test(file)) return [];
    if (e.isDirectory()) return filesOf(file);
    return fs.statSync(path.join(accountCopy, file)).isFile() ? [file] : [];
  });
/** Every file of the account copy but node_modules and the plan, with what it holds. */
const tree = () =>
  Object.fromEntries(filesOf("").map((f) => [f, fs.readFileSync(path.join(accountCopy, f), "utf8")]));
let first: { stdout: string };
let afterFirst: Record<string, string>;
let second: { stdout: string };
let afterSecond: Record<string, string>;
let plans: PlanLike[];

async function personalizeAccount(): Promise<void> {
  await copyOfRepository(accountCopy);
  first = await cli("--account", `${last}=${account}:${region}`);
  afterFirst = tree();
  second = await cli("--account", `${last}=${account}:${region}`);
  afterSecond = tree();
  await node(["lib/cli/plan.ts", "--out", path.join(accountCopy, "plan-out")]);
  plans = ["cluster", "cluster-setup", "kargo"].map((project) =>
    JSON.parse(fs.readFileSync(path.join(accountCopy, "plan-out", project, "resources.json"), "utf8")),
  );
}

/** Both copies made, then linted in one process: the removal fixed (`npm run format`), personalize's checked. */
let linted: { removal: Linted; account: Linted };
beforeAll(async () => {
  await Promise.all([removeProgram(), personalizeAccount()]);
  const [removalLint, accountLint] = await eslintOnce([
    { cwd: removal, file: "kargo/pipeline.ts", fix: true },
    { cwd: accountCopy, file: "kargo/pipeline.ts", fix: false },
  ]);
  linted = { removal: removalLint!, account: accountLint! };
});
afterAll(() => {
  fs.rmSync(removal, { recursive: true, force: true });
  fs.rmSync(accountCopy, { recursive: true, force: true });
});

describe("removing a program as docs/make-it-yours.md says", () => {
  it("names npm run format as the step after the edit", () => {
    expect(section("### Remove a program")).toContain("`npm run format`");
    expect(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8")).toMatch(
      /"format": "prettier --write \. && eslint --fix \."/,
    );
  });

  it("leaves prettier and eslint green once formatted", async () => {
    expect(removedBeforeFormat).not.toContain(`name: "${removed.name}"`);
    // `eslint --fix` lints the file again once fixed and reports (and exits 1 on) whatever is left: what
    // `eslint` would say next.
    expect(linted.removal.output).toBe("");
    await expect(
      run(bin("prettier"), ["--check", "kargo/pipeline.ts"], { cwd: removal }),
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

describe("npm run personalize -- --account", () => {
  it("writes the environment's aws, and only that, into kargo/pipeline.ts; the pipeline validates it", async () => {
    const { stdout } = await node([
      "-e",
      'console.log(JSON.stringify(require("./kargo/pipeline.ts").pipeline.environments))',
    ]);
    const written = JSON.parse(stdout);
    const wanted = {
      ...definition.environments,
      [last]: { ...definition.environments[last]!, aws: { accountId: account, region } },
    };
    expect(written).toEqual(JSON.parse(JSON.stringify(wanted)));
    expect(validatePipeline({ ...definition, environments: written }).environments[last]!.aws).toEqual({
      accountId: account,
      region,
    });
    expect(first.stdout).toContain(`environments.${last}.aws: `);
    expect(first.stdout).toContain(`-> ${account} (${region})`);
    expect(first.stdout).toMatch(/changed: .*kargo\/pipeline\.ts/);
    expect(first.stdout).toContain(`npm run account -- --environment ${last} --deployer`);
  });

  it("writes it formatted: prettier and eslint pass on the written file", async () => {
    await expect(
      run(process.execPath, ["node_modules/prettier/bin/prettier.cjs", "--check", "kargo/pipeline.ts"], {
        cwd: accountCopy,
      }),
    ).resolves.toBeDefined();
    // `eslint kargo/pipeline.ts` in the copy, in the suite's one ESLint run (above): it exits 0 without errors.
    expect(linted.account.errors, linted.account.output).toBe(0);
  });

  it("changes nothing given the same value again", () => {
    expect(second.stdout).toContain("nothing changed");
    expect(second.stdout).not.toContain("npm run account");
    expect(afterSecond).toEqual(afterFirst);
  });

  it("plans the environment's roles in that account, the others' in the cluster's", () => {
    const roles = plannedRoles(plans, PLAN_ACCOUNT_ID);
    const inAccount = roles
      .filter((r) => r.account === account)
      .map((r) => r.name)
      .sort();
    expect(inAccount).toEqual([accountRoleName(base), accountRoleName(base, last)].sort());
    const setup = plans.find((p) => p.project === "cluster-setup")!;
    expect(JSON.stringify(setup.resources)).toContain(roleArn("aws", account, accountRoleName(base, last)));
  });

  const refusals: [string, (env: string) => string, (env: string) => RegExp][] = [
    [
      "an account ID of eleven digits",
      (e) => `${e}=21098765432`,
      (e) =>
        new RegExp(`--account "${e}=21098765432": environments\\.${e}\\.aws\\.accountId: .*twelve digits`),
    ],
    [
      "a region AWS does not have",
      (e) => `${e}=${"2".repeat(12)}:mars-north-1`,
      (e) => new RegExp(`environments\\.${e}\\.aws\\.region: "mars-north-1" is not an AWS region`),
    ],
    [
      "no account at all",
      (e) => e,
      () => /--account ".*": expected <environment>=<12-digit account ID>\[:<region>\]/,
    ],
    [
      "an unknown environment",
      () => "nowhere=210987654321",
      () =>
        new RegExp(
          `"nowhere" is not an environment of kargo/pipeline.ts; its environments: ${envs.join(", ")}`,
        ),
    ],
  ];
  it.each(refusals)(
    "refuses %s with exit status 2, naming the option, writing nothing",
    async (_, value, message) => {
      const result = await runInProcess(accountCopy, ["--account", value(envs[0]!)]);
      expect(result.code).toBe(2);
      expect(result.err).toMatch(message(envs[0]!));
      expect(result.err).toContain("nothing written");
      expect(tree()).toEqual(afterSecond);
    },
  );
});
