import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PassThrough } from "node:stream";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { accountRoleName, namedAccounts, roleArn } from "../lib/pipeline/accounts";
import { AWS_REGIONS } from "../lib/pipeline/check-accounts";
import { validatePipeline } from "../lib/pipeline/validate";
import { plannedRoles, type PlanLike } from "../lib/cli/plan/iam-roles";
import { PLAN_ACCOUNT_ID } from "../lib/cli/plan/mocks";
import { askIdentity, applyIdentity, personalize, type PersonalizeIO } from "../lib/cli/personalize";
import { fork } from "../lib/fork";
import { identityFields, renderFork } from "../lib/forkIdentity";
import { repoRoot } from "../lib/cli/plan/projects";

const exec = promisify(execFile);

/** The files personalize rewrites itself, copied to a folder of their own. */
const identityFiles = ["lib/fork.ts", "cluster-setup/Pulumi.example.yaml", "kargo/Pulumi.example.yaml"];
function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "personalize-"));
  for (const f of identityFiles) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(path.join(repoRoot, f), path.join(dir, f));
  }
  return dir;
}
const contents = (dir: string) => identityFiles.map((f) => fs.readFileSync(path.join(dir, f), "utf8"));

/** Runs personalize in `root` with text streams, returning its exit code and what it printed. */
async function run(root: string, args: string[], interactive = false, answers?: string) {
  const output = new PassThrough();
  const errors = new PassThrough();
  const input = new PassThrough();
  if (answers !== undefined) input.end(answers);
  const chunks = { out: "", err: "" };
  output.on("data", (c) => (chunks.out += c));
  errors.on("data", (c) => (chunks.err += c));
  const io: PersonalizeIO = { args, input, output, errors, interactive, root };
  const code = await personalize(io);
  return { code, ...chunks };
}

/** Another fork's identity: whatever this one's is, these values differ from it. */
const other = fork.pulumiOrg === "acme" || fork.githubRepo.includes("/acme/") ? "umbrella" : "acme";
const acme = { githubRepo: `https://github.com/${other}/platform.git`, pulumiOrg: other };

describe("npm run personalize", () => {
  it("lib/fork.ts is what personalize writes for its values", () => {
    expect(fs.readFileSync(path.join(repoRoot, "lib/fork.ts"), "utf8")).toBe(renderFork(fork));
  });

  it("writes the identity and the example configs' organization, and changes nothing the second time", () => {
    const dir = scratch();
    const before = contents(dir);
    expect(applyIdentity(dir, acme).sort()).toEqual([...identityFiles].sort());
    expect(applyIdentity(dir, acme)).toEqual([]);
    const [forkTs, setup, kargo] = contents(dir);
    expect(forkTs).toBe(renderFork(acme));
    expect(setup).toMatch(new RegExp(`^ {2}cluster-setup:clusterStack: ${other}/cluster/\\S+$`, "m"));
    expect(kargo).toMatch(new RegExp(`^ {2}kargo:clusterSetupStack: ${other}/cluster-setup/\\S+$`, "m"));
    // Only those lines: comments and layout stay.
    for (const [i, text] of [setup, kargo].entries()) {
      const old = before[i + 1]!.split("\n");
      expect(text!.split("\n").filter((l, n) => l !== old[n])).toHaveLength(1);
    }
  });

  const refused: [string, string[], RegExp][] = [
    [
      "an SSH URL",
      ["--github-repo", "git@github.com:acme/platform.git"],
      /--github-repo: "git@github.com:acme\/platform.git" must be an HTTPS git URL/,
    ],
    [
      "a repository not on GitHub",
      ["--github-repo", "https://gitlab.com/acme/platform.git"],
      /--github-repo: "https:\/\/gitlab.com\/acme\/platform.git" is not a GitHub repository/,
    ],
    [
      "an organization with a space",
      ["--pulumi-org", "acme corp"],
      /--pulumi-org: "acme corp" must be a Pulumi organization name/,
    ],
  ];
  it.each(refused)("refuses %s with exit status 2, writing nothing", async (_, args, message) => {
    const dir = scratch();
    const before = contents(dir);
    const result = await run(dir, args);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(message);
    expect(result.err).toContain("nothing written");
    expect(contents(dir)).toEqual(before);
  });

  it("says what it needs when given no option outside a terminal, and refuses unknown options", async () => {
    const dir = scratch();
    const none = await run(dir, []);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/give at least one option[\s\S]*--github-repo <value> --pulumi-org <value>/);
    const unknown = await run(dir, ["--github", acme.githubRepo]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/Unknown option '--github'[\s\S]*usage: npm run personalize/);
    expect(contents(dir)).toEqual(identityFiles.map((f) => fs.readFileSync(path.join(repoRoot, f), "utf8")));
  });

  it("asks for each value showing the current one; empty keeps it, a bad one is asked again", async () => {
    const output = new PassThrough();
    let shown = "";
    output.on("data", (c) => (shown += c));
    const input = new PassThrough();
    input.end(`git@github.com:acme/platform.git\n${acme.githubRepo}\n\n`);
    const answers = await askIdentity({ input, output }, fork);
    expect(answers).toEqual({ githubRepo: acme.githubRepo, pulumiOrg: fork.pulumiOrg });
    for (const f of identityFields) expect(shown).toContain(`${f.label}\n  [${fork[f.key]}]: `);
    expect(shown).toContain('"git@github.com:acme/platform.git" must be an HTTPS git URL');
    expect(shown.match(/\[https:/g)).toHaveLength(2);
  });

  it("writes nothing when the answers end before every value is given", async () => {
    const dir = scratch();
    const before = contents(dir);
    const result = await run(dir, [], true, `${acme.githubRepo}\n`);
    expect(result.code).toBe(2);
    expect(result.err).toContain("input ended before every value was given; nothing written");
    expect(contents(dir)).toEqual(before);
  });
});

// `--account`: an environment in an AWS account of its own, written into a copy of this repository's
// kargo/pipeline.ts by the CLI itself, then planned as test/accounts-fork.test.ts plans such a fork.
describe("npm run personalize -- --account", () => {
  const envs = Object.keys(definition.environments);
  const last = envs.at(-1)!;
  // An account no environment names yet, so its roles are the moved environment's and its previews' only.
  const account = ["210987654321", "310987654321", "410987654321"].find(
    (a) => a !== PLAN_ACCOUNT_ID && !namedAccounts(definition.environments).includes(a),
  )!;
  const region = AWS_REGIONS.find((r) => r !== definition.environments[last]!.aws?.region)!;
  const base = validatePipeline(definition).stacks.serviceAccountName;
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "personalize-account-"));
  const node = (args: string[]) => exec(process.execPath, ["--import", "tsx", ...args], { cwd: copy });
  const cli = (...args: string[]) => node(["lib/cli/personalize.ts", ...args]);
  /** The files under `dir` of the copy, but node_modules and the plan: not walked into (a recursive readdir
   * follows the node_modules link, fifty thousand entries). */
  const filesOf = (dir: string): string[] =>
    fs.readdirSync(path.join(copy, dir), { withFileTypes: true }).flatMap((e) => {
      const file = path.join(dir, e.name);
      if (/^(node_modules|plan-out)\b/.test(file)) return [];
      if (e.isDirectory()) return filesOf(file);
      return fs.statSync(path.join(copy, file)).isFile() ? [file] : [];
    });
  /** Every file of the copy but node_modules and the plan, with what it holds. */
  const tree = () =>
    Object.fromEntries(filesOf("").map((f) => [f, fs.readFileSync(path.join(copy, f), "utf8")]));
  let first: { stdout: string };
  let afterFirst: Record<string, string>;
  let second: { stdout: string };
  let afterSecond: Record<string, string>;
  let plans: PlanLike[];

  beforeAll(async () => {
    const { stdout } = await exec("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: repoRoot,
    });
    for (const file of stdout
      .split("\0")
      .filter((f) => f && fs.statSync(path.join(repoRoot, f), { throwIfNoEntry: false })?.isFile())) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      fs.copyFileSync(path.join(repoRoot, file), path.join(copy, file));
    }
    fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(copy, "node_modules"));
    first = await cli("--account", `${last}=${account}:${region}`);
    afterFirst = tree();
    second = await cli("--account", `${last}=${account}:${region}`);
    afterSecond = tree();
    await node(["lib/cli/plan.ts", "--out", path.join(copy, "plan-out")]);
    plans = ["cluster", "cluster-setup", "kargo"].map((project) =>
      JSON.parse(fs.readFileSync(path.join(copy, "plan-out", project, "resources.json"), "utf8")),
    );
  }, 240_000);
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

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
      exec(process.execPath, ["node_modules/prettier/bin/prettier.cjs", "--check", "kargo/pipeline.ts"], {
        cwd: copy,
      }),
    ).resolves.toBeDefined();
    await expect(
      exec(process.execPath, ["node_modules/eslint/bin/eslint.js", "kargo/pipeline.ts"], { cwd: copy }),
    ).resolves.toBeDefined();
  }, 120_000);

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
      const result = await run(copy, ["--account", value(envs[0]!)]);
      expect(result.code).toBe(2);
      expect(result.err).toMatch(message(envs[0]!));
      expect(result.err).toContain("nothing written");
      expect(tree()).toEqual(afterSecond);
    },
  );
});
