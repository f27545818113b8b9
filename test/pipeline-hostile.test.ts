// Hostile and careless pipeline definitions: each is refused with a message naming the stage or field and
// what is allowed, and `npm run stacks` never writes or deletes a file that is not its own.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline as defaultPipeline } from "../kargo/pipeline";
import { branchProblems } from "../lib/pipeline/check-values";
import { parsePathSelector, selectorMatches } from "../lib/pipeline/selectors";
import { names } from "../lib/pipeline/names";
import { PipelineError, type EnvironmentStage, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { isGenerated, writeStacks } from "../lib/pipeline/stacks";

type StageInput = PipelineInput["stages"][number];
const base = defaultPipeline;
// Names taken from kargo/pipeline.ts, so that these rules hold whatever environments it declares.
const basePipeline = validatePipeline(base);
const environmentStages = basePipeline.stages.filter((s): s is EnvironmentStage => s.kind !== "gate");
const stackFiles = environmentStages.map((s) => `${s.name}.yaml`);
const [firstEnv, { pulumiStack: firstStack }] = Object.entries(basePipeline.environments)[0]!;
const lastStack = Object.values(basePipeline.environments).at(-1)!.pulumiStack;
const firstUpdate = environmentStages.find((s) => s.kind === "update")!;
const previewOfFirstUpdate = environmentStages.find(
  (s) => s.kind === "preview" && s.environment === firstUpdate.environment,
)!;
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** A message written for environment "dev" (stack dev), for the pipeline's first environment. */
const forFirstEnvironment = (message: RegExp) =>
  new RegExp(
    message.source
      .replaceAll("Pulumi\\.dev\\.yaml", escaped(`Pulumi.${firstStack}.yaml`))
      .replace("environments\\.dev:", `environments\\.${escaped(firstEnv)}:`),
  );

const withSource = (source: Partial<PipelineInput["source"]>): PipelineInput => ({
  ...base,
  source: { ...base.source, ...source },
});
const withStacks = (stacks: Partial<PipelineInput["stacks"]>): PipelineInput => ({
  ...base,
  stacks: { ...base.stacks, ...stacks },
});
const withVerification = (verification: PipelineInput["verification"]): PipelineInput => ({
  ...base,
  verification: { ...base.verification, ...verification },
});
const withEnvironments = (environments: PipelineInput["environments"]): PipelineInput => ({
  ...base,
  environments: { ...base.environments, ...environments },
});
/** The default stages with one replaced (by name) or appended. */
const withStage = (stage: StageInput, replacing = stage.name): PipelineInput => ({
  ...base,
  stages: base.stages.some((s) => s.name === replacing)
    ? base.stages.map((s) => (s.name === replacing ? stage : s))
    : [...base.stages, stage],
});

const problemsOf = (input: unknown, repoRoot?: string): string => {
  try {
    validatePipeline(input, { repoRoot });
  } catch (err) {
    // A PipelineError is a RunError: `pulumi up` prints its message alone, never a stack trace.
    expect(err).toBeInstanceOf(PipelineError);
    return (err as Error).message;
  }
  throw new Error("the pipeline was accepted");
};

const tempDirs: string[] = [];
const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A repository checkout with the promoted program at its root and the platform's project folders. */
function tempRepo(at?: string): string {
  const root = at ?? tempDir("pipeline-repo-");
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(root, "Pulumi.yaml"), "name: infra-program\nruntime: yaml\n");
  for (const project of ["cluster", "cluster-setup", "kargo"]) {
    fs.mkdirSync(path.join(root, project));
    fs.writeFileSync(path.join(root, project, "Pulumi.yaml"), `name: ${project}\nruntime: nodejs\n`);
  }
  for (const env of Object.values(base.environments)) {
    fs.writeFileSync(path.join(root, `Pulumi.${env.pulumiStack}.yaml`), "config:\n  aws:region: us-west-2\n");
  }
  return root;
}

describe("hostile pipeline definitions", () => {
  const digest = "a".repeat(64);
  const cases: [string, PipelineInput, RegExp][] = [
    // Verification timing.
    [
      "an interval of 0s (count: Infinity)",
      withVerification({ interval: "0s" }),
      /verification\.interval: "0s" is out of range; allowed: 1s to 1h/,
    ],
    [
      "an interval of days",
      withVerification({ interval: "48h" }),
      /verification\.interval: "48h" is out of range; allowed: 1s to 1h/,
    ],
    [
      "an unbounded update timeout",
      withVerification({ updateTimeout: "99999999999h" }),
      /verification\.updateTimeout: "99999999999h" is out of range; allowed: 1s to 24h/,
    ],
    [
      "a preview timeout of 0s",
      withVerification({ previewTimeout: "0s" }),
      /verification\.previewTimeout: "0s" is out of range; allowed: 1s to 24h/,
    ],
    [
      "a timeout shorter than the interval",
      withVerification({ interval: "5m", previewTimeout: "1m" }),
      /verification\.previewTimeout: "1m" is shorter than verification\.interval "5m"; it must be at least one interval/,
    ],
    // Pulumi Cloud address: the token travels to it on every measurement.
    [
      "another host as Pulumi Cloud's API",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "https://api.pulumi.example.com" } },
      /pulumi\.apiUrl: "https:\/\/api\.pulumi\.example\.com" is not Pulumi Cloud's API, and the Pulumi access token is sent to it on every verification measurement; allowed: https:\/\/api\.pulumi\.com \(the default\)\. For a self-hosted Pulumi Cloud, leave pulumi\.apiUrl out and set pulumi\.selfHostedApiUrl/,
    ],
    [
      "Pulumi Cloud's console as its API",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "https://app.pulumi.com" } },
      /pulumi\.apiUrl: "https:\/\/app\.pulumi\.com" is not Pulumi Cloud's API/,
    ],
    [
      "Pulumi Cloud's API over http",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "http://api.pulumi.com" } },
      /pulumi\.apiUrl: "http:\/\/api\.pulumi\.com" is not Pulumi Cloud's API/,
    ],
    [
      "a Pulumi API address that is no URL",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "api.pulumi.com" } },
      /pulumi\.apiUrl: (?:"api\.pulumi\.com" is not|must be) a URL; allowed: https:\/\/api\.pulumi\.com/,
    ],
    [
      "an http self-hosted Pulumi API",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "http://pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: "http:\/\/pulumi\.example\.com" is not HTTPS; the Pulumi token would travel in clear\. allowed: the https:\/\/host\[\/path\] address/,
    ],
    [
      "a self-hosted Pulumi API that is no URL",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: "pulumi\.example\.com" is not a URL; allowed: the https:\/\/host\[\/path\] address/,
    ],
    [
      "a self-hosted Pulumi API address with credentials",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://user:pw@pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: must not hold credentials/,
    ],
    [
      "a self-hosted Pulumi API address ending in /",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://pulumi.example.com/" } },
      /pulumi\.selfHostedApiUrl: must not end with "\/"/,
    ],
    [
      "Pulumi Cloud's own API named as self-hosted",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://api.pulumi.com" } },
      /pulumi\.selfHostedApiUrl: "https:\/\/api\.pulumi\.com" is Pulumi Cloud's own API; leave pulumi\.selfHostedApiUrl out to use it/,
    ],
    // Environments.
    [
      "two environments sharing one Pulumi stack",
      withEnvironments({ copy: { pulumiStack: firstStack } }),
      new RegExp(
        `environments\\.copy\\.pulumiStack: "${escaped(firstStack)}" is also environment "${escaped(firstEnv)}"'s stack; each environment needs its own Pulumi stack`,
      ),
    ],
    [
      "an environment no stage uses",
      withEnvironments({ prod: { pulumiStack: "prod" } }),
      new RegExp(
        `environments\\.prod: no stage uses it; add stages for it or remove it \\(environments in use: ${escaped(Object.keys(basePipeline.environments).join(", "))}\\)`,
      ),
    ],
    // Stages.
    [
      "requireAll with the same upstream twice",
      withStage({
        ...firstUpdate,
        from: [previewOfFirstUpdate.name, previewOfFirstUpdate.name],
        requireAll: true,
      }),
      new RegExp(
        `stage "${firstUpdate.name}": lists upstream stage "${previewOfFirstUpdate.name}" more than once; list each once`,
      ),
    ],
    [
      "a preview after its update",
      withStage({
        name: "check",
        kind: "preview",
        environment: firstUpdate.environment,
        from: [firstUpdate.name],
      }),
      new RegExp(
        `stage "check": previews environment "${firstUpdate.environment}" after its update stage "${firstUpdate.name}" has applied; a preview must come before its update`,
      ),
    ],
    [
      "a stage named like the Warehouse",
      withStage({ name: names.warehouse, kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      /stage "program": the name is the Warehouse's name; choose another \(reserved: warehouse, program, promote-stack/,
    ],
    [
      'a stage named "warehouse"',
      withStage({ name: "warehouse", kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      /stage "warehouse": the name is the word "from" uses for the Warehouse; choose another/,
    ],
    [
      "a stage named like the PromotionTask",
      withStage({ name: names.promotionTask, kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      /stage "promote-stack": the name is the PromotionTask's name; choose another/,
    ],
    [
      "a stage named like an AnalysisTemplate",
      withStage({
        name: names.analysis.update,
        kind: "gate",
        from: "warehouse",
        approvers: ["dev-approvers"],
      }),
      /stage "pulumi-update": the name is the update AnalysisTemplate's name; choose another/,
    ],
    // The Warehouse's branch.
    [
      "a branch Kargo's schema rejects",
      withSource({ branch: "-main" }),
      /source\.branch: "-main" is not a branch name Kargo's Warehouse accepts; allowed: letters, digits/,
    ],
    [
      "a branch with a space",
      withSource({ branch: "my branch" }),
      /source\.branch: "my branch" is not a branch name Kargo's Warehouse accepts/,
    ],
    [
      "a branch git refuses (..)",
      withSource({ branch: "release..1" }),
      /source\.branch: "release\.\.1" is not a valid git branch name \(no "\.\."/,
    ],
    [
      "a branch git refuses (.lock)",
      withSource({ branch: "main.lock" }),
      /source\.branch: "main\.lock" is not a valid git branch name/,
    ],
    [
      "a branch of 256 characters",
      withSource({ branch: "b".repeat(256) }),
      /source\.branch: "b+" is not a branch name Kargo's Warehouse accepts; .*at most 255 characters/,
    ],
    [
      "an empty branch",
      withSource({ branch: "" }),
      /source\.branch: must name the branch people merge to, such as "main"/,
    ],
    [
      "a branch promotions write to",
      withSource({ branch: "stage/dev" }),
      /source\.branch: "stage\/dev" is a branch promotions push to \(stage\/<stage>\); the Warehouse must watch the branch people merge to/,
    ],
    // Include and exclude paths.
    [
      "an exclude that hides the stages' Stack templates",
      withSource({ excludePaths: ["glob:stacks/**"] }),
      new RegExp(
        `source\\.excludePaths\\[0\\]: "glob:stacks\\/\\*\\*" excludes stacks\\/${escaped(stackFiles[0]!)}, which a stage runs: a change to it would reach the stages without passing the gates`,
      ),
    ],
    [
      "an exclude regex that hides an environment's config",
      withSource({ excludePaths: [`regexp:^Pulumi\\.${escaped(lastStack)}\\.`] }),
      new RegExp(`excludes Pulumi\\.${escaped(lastStack)}\\.yaml, which a stage runs`),
    ],
    [
      "an exclude glob that hides the program",
      withSource({ excludePaths: ["glob:*.yaml"] }),
      /source\.excludePaths\[0\]: "glob:\*\.yaml" excludes Pulumi\.yaml, which a stage runs/,
    ],
    [
      "a regex that does not compile",
      withSource({ includePaths: ["regex:Pulumi.(yaml"] }),
      /source\.includePaths\[0\]: "regex:Pulumi\.\(yaml" is not a regular expression Go accepts: error parsing regexp: missing closing \).*; allowed: a path .*"glob:<doublestar glob>" or "regex:<Go regular expression>"/,
    ],
    [
      "a regex with a lookahead (not RE2)",
      withSource({ excludePaths: ["regex:^(?!Pulumi).*"] }),
      /source\.excludePaths\[0\]: "regex:\^\(\?!Pulumi\)\.\*" is not a regular expression Go accepts: error parsing regexp: invalid or unsupported Perl syntax: `\(\?!`/,
    ],
    [
      "a glob doublestar refuses",
      withSource({ excludePaths: ["glob:stacks/[*.yaml"] }),
      /source\.excludePaths\[0\]: "glob:stacks\/\[\*\.yaml" is not a valid glob \(unclosed "\[" or "\{"/,
    ],
    [
      "an include path leaving the repository",
      withSource({ includePaths: ["../other/Pulumi.yaml"] }),
      /source\.includePaths\[0\]: "\.\.\/other\/Pulumi\.yaml" must be a path relative to the repository root without "\.\."/,
    ],
    // The workspace image.
    [
      "a workspace image tagged latest",
      withStacks({ workspaceImage: "pulumi/pulumi:latest" }),
      /stacks\.workspaceImage: must be an image with a pinned tag or digest; "latest" moves with every release; allowed: .*pulumi\/pulumi@sha256:<64 hex>/,
    ],
    [
      "a workspace image with a registry and no tag",
      withStacks({ workspaceImage: "ghcr.io:443/pulumi/pulumi" }),
      /stacks\.workspaceImage: must be an image with a pinned tag or digest; "ghcr\.io:443\/pulumi\/pulumi" has neither/,
    ],
    [
      "a workspace image with a short digest",
      withStacks({ workspaceImage: `pulumi/pulumi@sha256:${digest.slice(1)}` }),
      /stacks\.workspaceImage: must be an image with a pinned tag or digest; "pulumi\/pulumi@sha256:a{63}" is not an image reference/,
    ],
    // Where the generator writes and the program lives.
    [
      "an absolute stacks directory",
      withStacks({ dir: "/etc" }),
      /stacks\.dir: "\/etc" is not a relative path; allowed: a folder of the repository such as "stacks"/,
    ],
    [
      "a stacks directory above the repository",
      withStacks({ dir: "../stacks" }),
      /stacks\.dir: "\.\.\/stacks" leaves the repository; allowed: a folder of the repository without "\.\."/,
    ],
    [
      "a project folder as the stacks directory",
      withStacks({ dir: "cluster" }),
      /stacks\.dir: "cluster" is the repository's cluster\/ folder; allowed: a folder of its own such as "stacks" \(not cluster, cluster-setup, kargo, lib, test, \.github/,
    ],
    [
      "a stacks directory inside a project folder",
      withStacks({ dir: "kargo/stacks" }),
      /stacks\.dir: "kargo\/stacks" is inside the repository's kargo\/ folder/,
    ],
    [
      "node_modules as the stacks directory",
      withStacks({ dir: "node_modules/x" }),
      /stacks\.dir: "node_modules\/x" is inside the repository's node_modules\/ folder/,
    ],
    [
      "a stacks directory with Kargo expression syntax",
      withStacks({ dir: "stacks${{ vars.repoURL }}" }),
      /stacks\.dir: "stacks\$\{\{ vars\.repoURL \}\}" has characters other than letters, digits, "\.", "_", "-" and "\/"/,
    ],
    [
      "the repository root as the stacks directory",
      withStacks({ dir: "." }),
      /stacks\.dir: must be a folder of its own, not the repository root/,
    ],
    [
      "an absolute program directory",
      withSource({ programDir: "/srv/program" }),
      /source\.programDir: "\/srv\/program" is not a relative path/,
    ],
    [
      "a program directory above the repository",
      withSource({ programDir: ".." }),
      /source\.programDir: "\.\." leaves the repository; allowed: a folder of the repository without "\.\."/,
    ],
    [
      "a program directory without a Pulumi.yaml",
      withSource({ programDir: "stacks" }),
      /source\.programDir: "stacks" holds no Pulumi\.yaml; allowed: the repository folder of the promoted program/,
    ],
  ];

  it.each(cases)("rejects %s, naming the field or stage and what is allowed", (_, input, message) => {
    const problems = problemsOf(input);
    expect(problems).toMatch(/^Invalid pipeline definition:\n {2}- /);
    expect(problems).toMatch(message);
    expect(problems).not.toMatch(/\n\s+at /); // no stack trace in the message
  });

  const valid: [string, PipelineInput][] = [
    ["the default pipeline", base],
    ["a workspace image pinned by digest", withStacks({ workspaceImage: `pulumi/pulumi@sha256:${digest}` })],
    ["a tag and a digest", withStacks({ workspaceImage: `pulumi/pulumi:3.270.0-nonroot@sha256:${digest}` })],
    [
      "a private registry with a port",
      withStacks({ workspaceImage: "registry.example.com:5000/pulumi/pulumi:3.270.0" }),
    ],
    [
      "a self-hosted Pulumi API",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://pulumi.example.com:8443/api-root" } },
    ],
    ["a release branch", withSource({ branch: "release/2026.11_x" })],
    ["Go-only regex syntax", withSource({ includePaths: ["regex:^(?P<file>Pulumi)\\.ya?ml\\z"] })],
    ["a glob of the program's files", withSource({ includePaths: ["glob:{Pulumi.yaml,Pulumi.*.yaml}"] })],
    ["an include of the whole repository", withSource({ includePaths: ["."] })],
    ["an exclude of files no stage uses", withSource({ excludePaths: ["glob:docs/**", "README.md"] })],
    [
      "an initial delay of 0s and long timeouts",
      withVerification({ initialDelay: "0s", previewTimeout: "24h", updateTimeout: "2h" }),
    ],
    ["a nested stacks directory", withStacks({ dir: "deploy/stacks" })],
  ];
  it.each(valid)("accepts %s", (_, input) => {
    expect(() => validatePipeline(input)).not.toThrow();
  });
});

describe("what Kargo and git accept, checked against the real engines", () => {
  // Each case: our verdict must be git's (`git check-ref-format --branch`), wherever Kargo's schema agrees.
  const branches = [
    "a./b",
    "a.b.lock/c",
    "main",
    "release/1.x",
    "a..b",
    "a/.b",
    "x.lock",
    "a//b",
    "HEAD",
    "feat/x_y-z",
    "v1.2",
    "a/b.lock/c",
  ];
  it.each(branches)("judges branch %j as git does", (branch) => {
    const git = spawnSync("git", ["check-ref-format", "--branch", branch], { cwd: os.tmpdir() });
    const ours = branchProblems(branch);
    expect(ours.length === 0, ours.join("; ")).toBe(git.status === 0);
  });

  // Go's regexp.Compile and Kargo's own matchers judge thousands of generated selectors in the Go harness
  // (test/differential); these are the cases a reader looks for.
  // Kargo's path selectors (pkg/pattern/matcher.go): a bare path is a base directory, glob: is doublestar.
  const matches: [string, string, boolean][] = [
    ["Pulumi.yaml", "Pulumi.yaml", true],
    ["stacks", "stacks/dev.yaml", true],
    ["stacks", "stacksx/dev.yaml", false],
    [".", "stacks/dev.yaml", true],
    ["glob:stacks/**", "stacks", true],
    ["glob:stacks/*", "stacks/sub/dev.yaml", false],
    ["glob:**/dev.yaml", "stacks/dev.yaml", true],
    ["glob:stacks/[!d]*.yaml", "stacks/dev.yaml", false],
    ["glob:{stacks,other}/*.yaml", "stacks/qa.yaml", true],
    ["regex:^stacks/", "stacks/dev.yaml", true],
    ["regex:(?i)^STACKS/", "stacks/dev.yaml", true],
    ["glob:**/*.{yaml,yml}", "stacks/sub/dev.yml", true],
  ];
  it.each([
    ["glob:stacks*/**", "an ending two ways to match nothing"],
    ["glob:stacks/a**", "a ** glued to other characters"],
    ["glob:stacks/", "a trailing slash"],
  ])("refuses %j (%s): Kargo would decide it by doublestar's corner cases", (selector) => {
    expect(parsePathSelector(selector)).toMatch(
      /uses glob syntax this platform does not check .*regexp: selector/,
    );
  });
  it.each(matches)("selector %j matches %j: %s", (selector, file, expected) => {
    const parsed = parsePathSelector(selector);
    if (typeof parsed === "string") throw new Error(parsed);
    expect(selectorMatches(parsed, file)).toBe(expected);
  });
});

describe("each environment's config file beside the promoted program", () => {
  const withDevConfig = (text: string | undefined) => {
    const repo = tempRepo();
    const file = path.join(repo, `Pulumi.${firstStack}.yaml`);
    if (text === undefined) fs.rmSync(file);
    else fs.writeFileSync(file, text);
    return repo;
  };
  it.each([
    [
      "a missing file",
      undefined,
      /environments\.dev: Pulumi\.dev\.yaml is missing; each environment's stack config lives beside the promoted program/,
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
  ])("rejects %s, naming the file and what is allowed", (_, text, message) => {
    expect(problemsOf(base, withDevConfig(text))).toMatch(forFirstEnvironment(message));
  });

  it("accepts structured values, encrypted secrets and an empty file", () => {
    const structured =
      "config:\n  aws:region: eu-central-1\n  aws:defaultTags:\n    tags:\n      team: infra\n  infra-program:n: 3\n" +
      "  infra-program:token:\n    secure: AAABAG==\nencryptionsalt: v1:abc\n";
    for (const text of [structured, ""]) {
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
  it("refuses a stacks directory that holds a Pulumi project", () => {
    const repo = tempRepo();
    fs.mkdirSync(path.join(repo, "app"));
    fs.writeFileSync(path.join(repo, "app", "Pulumi.yaml"), "name: app\n");
    expect(problemsOf(withStacks({ dir: "app" }), repo)).toMatch(
      /stacks\.dir: "app" is a Pulumi project \(app\/Pulumi\.yaml\); allowed: a folder that holds only the generated Stack manifests/,
    );
  });
  it("refuses the program's folder as the stacks directory", () => {
    const repo = tempRepo();
    fs.mkdirSync(path.join(repo, "program"));
    fs.writeFileSync(path.join(repo, "program", "Pulumi.yaml"), "name: infra-program\n");
    const input = withSource({ programDir: "program", includePaths: ["program"] });
    expect(problemsOf({ ...input, stacks: { ...input.stacks, dir: "program" } }, repo)).toMatch(
      /stacks\.dir: "program" is the promoted program's folder \(source\.programDir\); allowed: a folder of its own/,
    );
  });
  it("refuses a stacks directory through a looping symlink, which mkdir would trip over", () => {
    const repo = tempRepo();
    fs.symlinkSync(path.join(repo, "stacks"), path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(
      /stacks\.dir: "stacks" goes through a broken or looping symlink; allowed: a real folder of the repository/,
    );
  });
  it("refuses a stacks directory through a dangling symlink out of the repository", () => {
    const repo = tempRepo();
    fs.symlinkSync(path.join(tempDir("outside-"), "not-yet"), path.join(repo, "stacks"));
    expect(problemsOf(base, repo)).toMatch(/stacks\.dir: "stacks" goes through a broken or looping symlink/);
  });
  it("refuses a program directory that is a symlink out of the repository", () => {
    const repo = tempRepo();
    const outside = tempDir("outside-");
    fs.writeFileSync(path.join(outside, "Pulumi.yaml"), "name: elsewhere\n");
    fs.symlinkSync(outside, path.join(repo, "program"));
    expect(problemsOf(withSource({ programDir: "program", includePaths: ["program"] }), repo)).toMatch(
      /source\.programDir: "program" resolves to .*, outside the repository \(through a symlink\)/,
    );
  });
});

describe("npm run stacks", () => {
  const pipeline = (dir = "stacks") => validatePipeline(withStacks({ dir }));

  it("writes one generated manifest per environment stage into its own folder", () => {
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
    const stacksDir = dir === "ABSOLUTE" ? path.join(outer, "escaped") : dir;
    const input = { ...pipeline(), stacks: { ...pipeline().stacks, dir: stacksDir } };
    expect(() => writeStacks(input, repo)).toThrow(
      /stacks\.dir: .*(not a relative path|leaves the repository)/,
    );
    expect(fs.readdirSync(outer)).toEqual(["repo"]);
    expect(fs.readdirSync(repo).sort()).toEqual(
      [
        ...Object.values(basePipeline.environments).map((e) => `Pulumi.${e.pulumiStack}.yaml`),
        "Pulumi.yaml",
        "cluster",
        "cluster-setup",
        "kargo",
      ].sort(),
    );
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

describe("names every JavaScript object already has", () => {
  // A pipeline read from JSON (or built with computed keys) has these as its own keys.
  const withRawEnvironment = (name: string): unknown => {
    const input = JSON.parse(JSON.stringify(base)) as { environments: Record<string, unknown> };
    Object.defineProperty(input.environments, name, {
      value: { pulumiStack: "extra", destructiveChangeApprovers: ["dev-approvers"] },
      enumerable: true,
      configurable: true,
      writable: true,
    });
    return input;
  };

  it.each(["__proto__", "toString", "hasOwnProperty", "valueOf"])(
    "refuses an environment named %s, which no Kubernetes name can hold",
    (name) => {
      const message = problemsOf(withRawEnvironment(name));
      expect(message).toContain(`environments.${name}: "${name}" is not a DNS label; allowed:`);
    },
  );

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])(
    "refuses a stage of environment %s when no such environment is defined",
    (name) => {
      const message = problemsOf(
        withStage({ name: "devpreview", kind: "preview", environment: name, from: ["approvalgatedev"] }),
      );
      expect(message).toContain(`stage "devpreview": environment "${name}" is not defined`);
    },
  );

  it("accepts an environment and stages named constructor, and writes Stack manifests without undefined", () => {
    const input: PipelineInput = {
      ...base,
      environments: {
        ...base.environments,
        constructor: { pulumiStack: "constructor", destructiveChangeApprovers: ["dev-approvers"] },
      },
      stages: [
        ...base.stages,
        {
          name: "constructorpreview",
          kind: "preview",
          environment: "constructor",
          from: ["approvalgatedev"],
        },
        { name: "constructor", kind: "update", environment: "constructor", from: ["constructorpreview"] },
      ],
    };
    const repo = tempRepo();
    fs.writeFileSync(path.join(repo, "Pulumi.constructor.yaml"), "config:\n  aws:region: us-west-2\n");
    const pipeline = validatePipeline(input, { repoRoot: repo });
    const { written } = writeStacks(pipeline, repo);
    expect(written).toEqual(
      expect.arrayContaining(["stacks/constructor.yaml", "stacks/constructorpreview.yaml"]),
    );
    for (const file of ["constructor.yaml", "constructorpreview.yaml"]) {
      const text = fs.readFileSync(path.join(repo, "stacks", file), "utf8");
      expect(text, file).not.toContain("undefined");
      expect(text, file).toContain(`stack: ${base.pulumi.organization}/${base.pulumi.project}/constructor`);
    }
  });
});

describe("the pipeline's namespaces", () => {
  it.each([
    "default",
    "kube-system",
    "kube-anything",
    "argocd",
    "cert-manager",
    "kargo",
    "pulumi-kubernetes-operator",
    "argo-rollouts",
  ])("refuses %s as the Kargo project", (ns) => {
    const message = problemsOf({ ...base, project: ns });
    expect(message).toContain(`project: "${ns}" is a namespace the platform or Kubernetes reserves`);
    expect(message).toContain("allowed: a namespace of its own");
  });

  it("refuses the stacks namespace as the Kargo project", () => {
    expect(problemsOf({ ...base, project: base.stacks.namespace })).toContain(
      `project: "${base.stacks.namespace}" is also stacks.namespace`,
    );
  });

  it.each(["default", "kube-system", "argocd"])("refuses %s as the stacks namespace", (ns) => {
    expect(problemsOf(withStacks({ namespace: ns }))).toContain(
      `stacks.namespace: "${ns}" is a namespace the platform or Kubernetes reserves`,
    );
  });
});
