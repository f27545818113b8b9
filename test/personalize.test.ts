// `npm run personalize`: the identity, in-process over copies of the files it rewrites. Its `--account` option,
// which writes into a copy of the whole repository, is in test/documented-edits.test.ts, linted with the
// other documented edits in one ESLint run.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { askIdentity, applyIdentity } from "../lib/cli/personalize";
import { fork } from "../lib/fork";
import { identityFields, renderFork } from "../lib/forkIdentity";
import { repoRoot } from "../lib/cli/plan/projects";
import { runPersonalize as run } from "./personalize-support";

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
