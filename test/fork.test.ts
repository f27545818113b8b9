// A fork, made as the README's "Make it yours" says, in a copy of this repository: other identity, an
// environment added behind a gate of its own, one removed. Its plan holds nothing of this repository's identity
// and the pipeline's tests pass there.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import type { PipelineInput } from "../lib/pipeline/schema";
import { topologicalOrder } from "../lib/pipeline/graph";
import { validatePipeline } from "../lib/pipeline/validate";
import { repoRoot } from "../lib/cli/plan/projects";

const run = promisify(execFile);
type StageInput = PipelineInput["stages"][number];

/** What the fork runs of this repository's tests: the ones that follow the pipeline's shape. */
export const forkTests = [
  "test/kargo.test.ts",
  "test/capacity.test.ts",
  "test/cluster-setup.test.ts",
  "test/pipeline-validation.test.ts",
];

/** Values unlike this repository's. */
const other = fork.pulumiOrg.includes("acme")
  ? { githubRepo: "https://github.com/globex/change-platform.git", pulumiOrg: "globex-cloud" }
  : { githubRepo: "https://github.com/acme-infra/change-platform.git", pulumiOrg: "acme-cloud" };

/** The pipeline without `env`: its stages go, and whatever came from them comes from what they came from. */
export function withoutEnvironment(p: PipelineInput, env: string): PipelineInput {
  const gone = new Map(
    p.stages.filter((s) => s.kind !== "gate" && s.environment === env).map((s) => [s.name, s]),
  );
  const resolve = (from: StageInput["from"]): string[] =>
    from === "warehouse" ? [] : from.flatMap((up) => (gone.has(up) ? resolve(gone.get(up)!.from) : [up]));
  const stages = p.stages
    .filter((s) => !gone.has(s.name))
    .map((s): StageInput => {
      if (s.from === "warehouse") return s;
      const from = [...new Set(resolve(s.from))];
      const { requireAll, ...rest } = s;
      return {
        ...rest,
        from: from.length > 0 ? from : "warehouse",
        ...(from.length > 1 && requireAll ? { requireAll } : {}),
      };
    });
  const { [env]: _removed, ...environments } = p.environments;
  return { ...p, environments, stages };
}

/** The pipeline with environment `name`: a gate of its own after the last stage, then its preview and update. */
export function withEnvironment(p: PipelineInput, name: string, approvers: string): PipelineInput {
  const last = topologicalOrder(validatePipeline(p).stages).at(-1)!.name;
  return {
    ...p,
    environments: {
      ...p.environments,
      [name]: { pulumiStack: name, destructiveChangeApprovers: [approvers] },
    },
    stages: [
      ...p.stages,
      { name: `approvalgate${name}`, kind: "gate", from: [last], approvers: [approvers] },
      { name: `${name}preview`, kind: "preview", environment: name, from: [`approvalgate${name}`] },
      { name, kind: "update", environment: name, from: [`${name}preview`] },
    ],
  };
}

/** The first environment whose removal leaves a valid pipeline with another environment. */
function removable(p: PipelineInput): string {
  const found = Object.keys(p.environments)
    .reverse()
    .find((env) => {
      try {
        validatePipeline(withoutEnvironment(p, env));
        return true;
      } catch {
        return false;
      }
    });
  expect(found, "an environment the fork can remove").toBeDefined();
  return found!;
}

/** kargo/pipeline.ts of the fork, reading its identity from lib/fork.ts as ours does. */
function pipelineSource(p: PipelineInput): string {
  const body = JSON.stringify(p, null, 2)
    .replace(`"repoURL": ${JSON.stringify(fork.githubRepo)}`, '"repoURL": fork.githubRepo')
    .replace(`"organization": ${JSON.stringify(fork.pulumiOrg)}`, '"organization": fork.pulumiOrg');
  expect(body).not.toContain(fork.githubRepo);
  return `import { fork } from "../lib/fork";\nimport type { PipelineInput } from "../lib/pipeline/schema";\n\nexport const pipeline: PipelineInput = ${body};\n`;
}

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): string[] =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));

describe("a fork", () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "fork-"));
  const added = ["staging", "stage", "preprod"].find((n) => !(n in definition.environments))!;
  const group = `${added}-approvers`;
  const removed = removable(definition);
  const forked = withEnvironment(withoutEnvironment(definition, removed), added, group);
  const node = (args: string[]) => run(process.execPath, ["--import", "tsx", ...args], { cwd: copy });
  let personalized: { stdout: string; stderr: string };
  let personalizeSeconds: number;

  beforeAll(async () => {
    // The repository as a fresh clone has it (tracked and new files, none ignored), sharing node_modules.
    const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: repoRoot,
    });
    const files = stdout
      .split("\0")
      .filter((f) => f && fs.lstatSync(path.join(repoRoot, f), { throwIfNoEntry: false })?.isFile());
    for (const file of files) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      fs.copyFileSync(path.join(repoRoot, file), path.join(copy, file));
    }
    fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(copy, "node_modules"));

    // The README's steps: the pipeline, the new environment's stack config, its approver group in cluster-setup.
    fs.writeFileSync(path.join(copy, "kargo/pipeline.ts"), pipelineSource(forked));
    const template = definition.environments[Object.keys(forked.environments)[0]!]!.pulumiStack;
    fs.copyFileSync(path.join(copy, `Pulumi.${template}.yaml`), path.join(copy, `Pulumi.${added}.yaml`));
    fs.rmSync(path.join(copy, `Pulumi.${definition.environments[removed]!.pulumiStack}.yaml`));
    const setupExample = path.join(copy, "cluster-setup/Pulumi.example.yaml");
    const doc = YAML.parseDocument(fs.readFileSync(setupExample, "utf8"));
    doc.addIn(["config", "cluster-setup:cognitoApproverGroups"], group);
    fs.writeFileSync(setupExample, doc.toString({ flowCollectionPadding: false }));

    const started = Date.now();
    personalized = await node([
      "lib/cli/personalize.ts",
      "--github-repo",
      other.githubRepo,
      "--pulumi-org",
      other.pulumiOrg,
    ]);
    personalizeSeconds = (Date.now() - started) / 1000;
  }, 120_000);
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("personalizes with other values, saying what changed", () => {
    expect(personalized.stderr).toBe("");
    expect(personalized.stdout).toContain(`githubRepo: ${fork.githubRepo} -> ${other.githubRepo}`);
    expect(personalized.stdout).toContain(`pulumiOrg: ${fork.pulumiOrg} -> ${other.pulumiOrg}`);
    expect(personalized.stdout).toMatch(new RegExp(`changed: .*stacks/${added}\\.yaml`));
    expect(personalizeSeconds, "personalize takes").toBeLessThan(60);
  });

  it("plans with nothing of this repository's identity left, and its own everywhere", async () => {
    const out = path.join(copy, "plan-out");
    await node(["lib/cli/plan.ts", "--out", out]);
    const planned = filesUnder(out).map((f) => fs.readFileSync(f, "utf8"));
    const stacks = filesUnder(path.join(copy, "stacks")).map((f) => fs.readFileSync(f, "utf8"));
    for (const text of [...planned, ...stacks]) {
      expect(text).not.toContain(fork.githubRepo.replace(/\.git$/, ""));
      expect(text).not.toMatch(new RegExp(`\\b${fork.pulumiOrg}/`));
    }
    const kargo = planned.join("\n");
    expect(kargo).toContain(other.githubRepo);
    expect(kargo).toContain(`${other.pulumiOrg}/infra-program/${added}`);
    expect(kargo).toContain(`"approvalgate${added}"`);
    expect(kargo).not.toContain(`stage/${removed}"`);
  }, 60_000);

  it("passes the pipeline's tests", async () => {
    const vitest = path.join(copy, "node_modules", ".bin", "vitest");
    // One worker: it plans the chain once for every file (isolate: false), beside this suite's own two.
    const result = await run(vitest, ["run", "--maxWorkers=1", ...forkTests], { cwd: copy }).catch(
      (err: { stdout: string; stderr: string }) => ({ ...err, failed: true }),
    );
    expect("failed" in result ? `${result.stdout}\n${result.stderr}` : "", "the fork's tests").toBe("");
    expect(result.stdout).not.toMatch(/skipped/);
  }, 120_000);
});
