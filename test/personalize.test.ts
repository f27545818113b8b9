// `npm run personalize`: the identity, in-process over copies of the files it rewrites. Its `--account` option,
// which writes into a copy of the whole repository, is in test/documented-edits.test.ts, linted with the
// other documented edits in one ESLint run.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { askIdentity, applyIdentity, copiedConfigs, rewriteIdentity } from "../lib/cli/personalize";
import { fork } from "../lib/fork";
import { identityFields, renderFork } from "../lib/forkIdentity";
import { repoRoot } from "../lib/cli/plan/projects";
import { runPersonalize as run } from "./personalize-support";
import { repositoryTextFiles } from "./repository-files";
import { pipeline as definition } from "../kargo/pipeline";
import { normalDir } from "../lib/pipeline/names";

/** The files personalize rewrites itself (lib/fork.ts, every stack config a user copies), copied apart. */
const identityFiles = ["lib/fork.ts", ...copiedConfigs(repoRoot)];
function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "personalize-"));
  for (const f of identityFiles) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(path.join(repoRoot, f), path.join(dir, f));
  }
  return dir;
}
const contents = (dir: string) => identityFiles.map((f) => fs.readFileSync(path.join(dir, f), "utf8"));

/**
 * Each trace of `identity` in `text`, comments included: its repository (URL or owner/name) and each stack
 * reference `<organization>/<project>/<stack>` of its organization. Found the way a reader would, not with
 * personalize's own pattern.
 */
function traces(text: string, identity: typeof fork): string[] {
  const slug = new URL(identity.githubRepo).pathname.replace(/^\/|\.git$/g, "");
  return text
    .split("\n")
    .flatMap((line) =>
      line
        .split(/[\s"'`()[\],;=]+/)
        .filter(
          (word) =>
            word.includes(slug) || (word.split("/")[0] === identity.pulumiOrg && word.split("/").length >= 3),
        ),
    );
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
    const holding = identityFiles.filter(
      (f, i) => f === "lib/fork.ts" || traces(before[i]!, fork).length > 0,
    );
    expect(applyIdentity(dir, acme).sort()).toEqual(holding.sort());
    expect(applyIdentity(dir, acme, acme)).toEqual([]);
    const after = contents(dir);
    expect(after[0]).toBe(renderFork(acme));
    const config = (file: string) => after[identityFiles.indexOf(file)]!;
    expect(config("cluster-setup/Pulumi.example.yaml")).toMatch(
      new RegExp(`^ {2}cluster-setup:clusterStack: ${other}/cluster/\\S+$`, "m"),
    );
    expect(config("kargo/Pulumi.example.yaml")).toMatch(
      new RegExp(`^ {2}kargo:clusterSetupStack: ${other}/cluster-setup/\\S+$`, "m"),
    );
    for (const [i, file] of identityFiles.entries()) {
      if (file === "lib/fork.ts") continue;
      // Nothing of the old identity is left, comments included; only the lines that held it changed, so the
      // file keeps its comments and layout.
      expect(traces(after[i]!, fork), file).toEqual([]);
      const old = before[i]!.split("\n");
      const lines = after[i]!.split("\n");
      expect(lines).toHaveLength(old.length);
      expect(
        lines.flatMap((l, n) => (l === old[n] ? [] : [n])),
        file,
      ).toEqual(old.flatMap((l, n) => (traces(l, fork).length > 0 ? [n] : [])));
    }
  });

  it("rewrites the identity in one pass: a new value that holds the old one is not rewritten again", () => {
    const from = { githubRepo: "https://github.com/a/p.git", pulumiOrg: "a" };
    const to = { githubRepo: "https://github.com/a/p.git-x/p.git", pulumiOrg: "a/a" };
    expect(
      rewriteIdentity(
        "a/b/c https://github.com/a/p.git https://github.com/a/p/tree/x <a>/b/c a-b/c/d ab/c/d",
        from,
        to,
      ),
    ).toBe(
      "a/a/b/c https://github.com/a/p.git-x/p.git https://github.com/a/p.git-x/p/tree/x <a>/b/c a-b/c/d ab/c/d",
    );
  });

  // After personalize, the previous identity is left only where the table says why.
  const leftOnPurpose: [RegExp, string][] = [
    [/^lib\/fork\.ts$/, "rewritten whole by renderFork (tested above)"],
    [
      new RegExp(`^${normalDir(definition.stacks.dir ?? "stacks")}/`),
      "regenerated from lib/fork.ts by `npm run stacks`, which personalize runs next (test/kargo.test.ts holds them to it)",
    ],
    [
      /^test\//,
      "the tests' fixtures: the Pulumi Cloud and Kargo answers they stand in for name some organization",
    ],
  ];
  it("leaves the previous identity in no other file of the repository", () => {
    const copied = new Set(identityFiles);
    const holding = repositoryTextFiles()
      .filter(({ file, text }) => !copied.has(file) && traces(text, fork).length > 0)
      .map(({ file }) => file);
    expect(holding.filter((f) => !leftOnPurpose.some(([where]) => where.test(f)))).toEqual([]);
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
