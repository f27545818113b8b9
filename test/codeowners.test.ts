// The path's owners (lib/codeowners.ts, kargo:githubPathOwners): .github/CODEOWNERS gives every file that
// defines the path to them, the reviews ruleset requires their approval, and the deploy refuses a CODEOWNERS
// that is not what the config makes it. The files are read from the pipeline definition's own imports, as
// TypeScript reads them, so a fork's new program access file is owned too.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { codeownersFor } from "../lib/cli/codeowners";
import { repoRoot } from "../lib/cli/plan/projects";
import { CODEOWNERS, codeownersFile, ownersIn, pathPatterns } from "../lib/codeowners";
import { validatePipeline } from "../lib/pipeline/validate";
import { planError } from "./helpers";

const run = promisify(execFile);
const pipeline = validatePipeline(definition);
const secrets = ["kargo:githubAdminToken"];
const on = { "kargo:githubRulesets": true, "kargo:githubAdminToken": "ghp_admin0123" };
const OWNERS = ["@zz-org/platform", "@zz-owner"];

/** The repository files `file` imports, transitively, as TypeScript's preprocessor reads them. */
function imported(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const text = fs.readFileSync(path.join(repoRoot, file), "utf8");
  for (const { fileName } of ts.preProcessFile(text, true, true).importedFiles) {
    if (!fileName.startsWith(".")) continue;
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), fileName));
    const found = [`${base}.ts`, `${base}/index.ts`].find((f) => fs.existsSync(path.join(repoRoot, f)));
    if (found) imported(found, seen);
  }
  return seen;
}

/** The owners CODEOWNERS gives `file`: the last matching rule's, as GitHub reads it (anchored patterns). */
function ownersOf(codeowners: string, file: string): string[] {
  let owners: string[] = [];
  for (const line of codeowners.split("\n")) {
    if (!line.trim() || line.startsWith("#")) continue;
    const [pattern, ...who] = line.trim().split(/\s+/);
    const p = pattern!.replace(/^\//, "");
    if (p.endsWith("/") ? file.startsWith(p) : file === p) owners = who;
  }
  return owners;
}

describe("the path's owners", () => {
  it("are given every file of the path in the committed CODEOWNERS (`npm run stacks` redraws it), and are the example stack's", () => {
    const committed = fs.readFileSync(path.join(repoRoot, CODEOWNERS), "utf8");
    const owners = ownersIn(repoRoot);
    expect(committed, "run npm run stacks").toBe(
      codeownersFile(pathPatterns(repoRoot, pipeline.stacks.dir), owners),
    );
    // The example names none; a fork's owners come from its own stack (npm run codeowners -- --stack NAME).
    const example = codeownersFor("example");
    expect("owners" in example && example.owners).toEqual([]);
  });

  it("own the pipeline definition, every file it imports, lib/pipeline/, what renders it and decides the stops, stacks/, the rules and CODEOWNERS itself", () => {
    const text = codeownersFile(pathPatterns(repoRoot, pipeline.stacks.dir), OWNERS);
    const stacks = fs
      .readdirSync(path.join(repoRoot, pipeline.stacks.dir))
      .map((f) => `${pipeline.stacks.dir}/${f}`);
    const files = [
      ...imported("kargo/pipeline.ts"),
      ...fs.readdirSync(path.join(repoRoot, "lib/pipeline")).map((f) => `lib/pipeline/${f}`),
      ...stacks,
      ...fs.readdirSync(path.join(repoRoot, "kargo/verification")).map((f) => `kargo/verification/${f}`),
      "kargo/promotionPipeline.ts",
      "kargo/accounts.ts",
      "kargo/repositoryRules.ts",
      CODEOWNERS,
    ];
    // Each program's access, whatever programs the fork has: the pipeline imports it.
    expect(files.filter((f) => f.startsWith("programs/")).length).toBeGreaterThan(0);
    for (const file of files) expect(ownersOf(text, file), file).toEqual(OWNERS);
    expect(ownersOf(text, "README.md")).toEqual([]);
    expect(
      ownersOf(codeownersFile(pathPatterns(repoRoot, pipeline.stacks.dir), []), "kargo/pipeline.ts"),
    ).toEqual([]);
  });

  it("refuse owners that cannot hold, naming the key", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { ...on, "kargo:githubPathOwners": ["alice"] },
        /kargo:githubPathOwners.*: must be a GitHub user or team/,
      ],
      [
        { ...on, "kargo:githubPathOwners": "@alice" },
        /kargo:githubPathOwners: must be a list of GitHub users or teams/,
      ],
      [
        { ...on, "kargo:githubPathOwners": ["@alice", "@Alice"] },
        /kargo:githubPathOwners: names an owner twice/,
      ],
      [{ "kargo:githubPathOwners": ["@alice"] }, /kargo:githubPathOwners: needs kargo:githubRulesets true/],
      [
        {
          ...on,
          "kargo:githubPathOwners": ["@alice"],
          "kargo:githubRequiredReviews": 0,
          "kargo:githubRequireLastPushApproval": false,
        },
        /kargo:githubPathOwners: needs kargo:githubRequiredReviews of at least 1/,
      ],
      // The committed CODEOWNERS names no owner: a deploy that requires some refuses until it does.
      [
        { ...on, "kargo:githubPathOwners": OWNERS },
        /kargo:githubPathOwners: \.github\/CODEOWNERS is not what .*npm run codeowners -- --stack example/,
      ],
    ];
    for (const [config, message] of cases)
      expect((await planError("kargo", config, secrets)).message).toMatch(message);
  });
});

describe("a fork that names the path's owners", () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "codeowners-"));
  const node = (args: string[]) => run(process.execPath, ["--import", "tsx", ...args], { cwd: copy });
  let reviews: { rules: { pullRequest: Record<string, unknown> } } | undefined;
  let written: string;

  beforeAll(async () => {
    const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: repoRoot,
    });
    for (const file of stdout.split("\0").filter((f) => f && fs.existsSync(path.join(repoRoot, f)))) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      fs.copyFileSync(path.join(repoRoot, file), path.join(copy, file));
    }
    fs.symlinkSync(fs.realpathSync(path.join(repoRoot, "node_modules")), path.join(copy, "node_modules"));
    // The fork's stack: the example with the rulesets on and the owners named (docs/deploy.md).
    const example = YAML.parse(fs.readFileSync(path.join(copy, "kargo/Pulumi.example.yaml"), "utf8"));
    example.config = {
      ...example.config,
      "kargo:githubRulesets": true,
      "kargo:githubAdminToken": { secure: "AAABAG==" },
      "kargo:githubPathOwners": OWNERS,
    };
    fs.writeFileSync(path.join(copy, "kargo/Pulumi.zz.yaml"), YAML.stringify(example));
    await node(["lib/cli/codeowners.ts", "--stack", "zz"]);
    written = fs.readFileSync(path.join(copy, CODEOWNERS), "utf8");
    const out = path.join(copy, "plan-out");
    await node(["lib/cli/plan.ts", "--project", "kargo", "--config", "kargo/Pulumi.zz.yaml", "--out", out]);
    const { resources } = JSON.parse(fs.readFileSync(path.join(out, "kargo", "resources.json"), "utf8")) as {
      resources: {
        type: string;
        inputs: { rules: { pullRequest?: Record<string, unknown>; requiredStatusChecks?: unknown } };
      }[];
    };
    reviews = resources
      .filter((r) => r.type === "github:index/repositoryRuleset:RepositoryRuleset")
      .map(
        (r) =>
          r.inputs as { rules: { pullRequest: Record<string, unknown>; requiredStatusChecks?: unknown } },
      )
      .find((r) => r.rules.pullRequest && r.rules.requiredStatusChecks === undefined);
  }, 180_000);
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("gets a CODEOWNERS that gives the pipeline definition to them", () => {
    expect(ownersOf(written, "kargo/pipeline.ts")).toEqual(OWNERS);
  });

  it("plans a reviews ruleset that requires a code owner's approval", () => {
    expect(reviews?.rules.pullRequest).toMatchObject({
      requireCodeOwnerReview: true,
      requiredApprovingReviewCount: 1,
    });
  });
});
