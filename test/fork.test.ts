// A fork, made as docs/make-it-yours.md says, in a copy of this repository: other identity, an
// environment added behind a gate of its own (its stack config in every program's folder), one removed. Its
// plan holds nothing of this repository's identity and the pipeline's tests pass there. And a fork that adds
// a program of its own gets its stages, Stack manifests, stacks and Warehouse path.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { fork } from "../lib/fork";
import type { ProgramsReport } from "../lib/cli/programs";
import type { Pipeline, PipelineInput } from "../lib/pipeline/schema";
import { programStageName, topologicalOrder } from "../lib/pipeline/graph";
import { stackConfigFile, stackManifestFile } from "../lib/pipeline/names";
import { unexpectedStderr } from "./helpers";
import { withoutEnvironment } from "./capacity-support";
import { copyOfRepository } from "./repo-copy";
import { validatePipeline } from "../lib/pipeline/validate";
import { repoRoot } from "../lib/cli/plan/projects";

const run = promisify(execFile);

/** What the fork runs of this repository's tests: the ones that follow the pipeline's shape. */
export const forkTests = [
  "test/kargo.test.ts",
  "test/kargo-access.test.ts",
  "test/capacity.test.ts",
  "test/cluster-setup.test.ts",
  "test/pipeline-validation.test.ts",
];

/** Values unlike this repository's. */
const other = fork.pulumiOrg.includes("acme")
  ? { githubRepo: "https://github.com/globex/change-platform.git", pulumiOrg: "globex-cloud" }
  : { githubRepo: "https://github.com/acme-infra/change-platform.git", pulumiOrg: "acme-cloud" };

/**
 * The pipeline with environment `name`: a gate of its own after the last stage, then its preview and update.
 * Listed first, in `environments` and in `stages`, though it runs last: nothing may depend on the order a
 * valid pipeline lists them in (docs/make-it-yours.md adds `prod` as the first key).
 */
export function withEnvironment(p: PipelineInput, name: string, approvers: string): PipelineInput {
  const last = topologicalOrder(validatePipeline(p).stages).at(-1)!.name;
  return {
    ...p,
    environments: {
      [name]: { pulumiStack: name, destructiveChangeApprovers: [approvers] },
      ...p.environments,
    },
    stages: [
      { name: `approvalgate${name}`, kind: "gate", from: [last], approvers: [approvers] },
      { name: `${name}preview`, kind: "preview", environment: name, from: [`approvalgate${name}`] },
      { name, kind: "update", environment: name, from: [`${name}preview`] },
      ...p.stages,
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

/**
 * kargo/pipeline.ts of the fork: ours (its identity from lib/fork.ts, its programs' AWS access, which is
 * code), with the fork's environments and stages and the programs it adds after ours.
 */
function pipelineSource(p: PipelineInput): string {
  const ours = fs.readFileSync(path.join(repoRoot, "kargo/pipeline.ts"), "utf8");
  const declaration = "export const pipeline: PipelineInput = {";
  expect(ours).toContain(declaration);
  // Everything else is ours as it is, programs included.
  for (const key of Object.keys(definition) as (keyof PipelineInput)[])
    if (!["programs", "environments", "stages"].includes(key)) expect(p[key], key).toBe(definition[key]);
  expect(p.programs.slice(0, definition.programs.length)).toEqual(definition.programs);
  const added = p.programs.slice(definition.programs.length);
  const json = (v: unknown) => JSON.stringify(v, null, 2).replace(/\n/g, "\n  ");
  const body = `{
  ...ours,
  programs: [...ours.programs, ...${json(added)}],
  environments: ${json(p.environments)},
  stages: ${json(p.stages)},
};`;
  expect(body).not.toContain(fork.githubRepo);
  return `${ours.replace(declaration, "const ours: PipelineInput = {")}\nexport const pipeline: PipelineInput = ${body}\n`;
}

/** A program's stack config file for an environment of a definition (validated or not). */
const configFile = (p: PipelineInput, program: { dir: string }, environment: string) =>
  stackConfigFile(p as unknown as Pick<Pipeline, "environments">, program, environment);

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
  const programs = validatePipeline(definition).programs;
  /** The Kargo stages of `env`'s declared stages in a definition: one per program. */
  const programStagesOf = (p: PipelineInput, env: string) =>
    p.stages
      .filter((s) => s.kind !== "gate" && s.environment === env)
      .flatMap((s) => programs.map((x) => programStageName(s.name, x.name)));
  const node = (args: string[]) => run(process.execPath, ["--import", "tsx", ...args], { cwd: copy });
  let personalized: { stdout: string; stderr: string };

  beforeAll(async () => {
    // The repository as a fresh clone has it, sharing node_modules.
    await copyOfRepository(copy);

    // docs/make-it-yours.md's steps: the pipeline, the new environment's stack config in every program's folder (a
    // copy of another environment's), its approver group in cluster-setup.
    fs.writeFileSync(path.join(copy, "kargo/pipeline.ts"), pipelineSource(forked));
    // A copy of an environment the repository has (whatever the order the fork lists them in).
    const template = Object.keys(forked.environments).find((env) => env in definition.environments)!;
    for (const x of programs) {
      fs.copyFileSync(
        path.join(copy, configFile(definition, x, template)),
        path.join(copy, configFile(forked, x, added)),
      );
      fs.rmSync(path.join(copy, configFile(definition, x, removed)));
    }
    const setupExample = path.join(copy, "cluster-setup/Pulumi.example.yaml");
    const doc = YAML.parseDocument(fs.readFileSync(setupExample, "utf8"));
    doc.addIn(["config", "cluster-setup:cognitoApproverGroups"], group);
    fs.writeFileSync(setupExample, doc.toString({ flowCollectionPadding: false }));

    personalized = await node([
      "lib/cli/personalize.ts",
      "--github-repo",
      other.githubRepo,
      "--pulumi-org",
      other.pulumiOrg,
    ]);
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("personalizes with other values, saying what changed", () => {
    expect(unexpectedStderr(personalized.stderr)).toEqual([]);
    expect(personalized.stdout).toContain(`githubRepo: ${fork.githubRepo} -> ${other.githubRepo}`);
    expect(personalized.stdout).toContain(`pulumiOrg: ${fork.pulumiOrg} -> ${other.pulumiOrg}`);
    const changed = personalized.stdout.split("\n").find((l) => l.startsWith("changed: "));
    const addedStages = programStagesOf(forked, added);
    expect(addedStages.length).toBeGreaterThan(0);
    for (const stage of addedStages)
      expect(changed?.split(/, |: /), stage).toContain(
        `${definition.stacks.dir ?? "stacks"}/${stackManifestFile(stage)}`,
      );
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
    for (const x of programs) expect(kargo).toContain(`${other.pulumiOrg}/${x.project}/${added}`);
    expect(kargo).toContain(`"approvalgate${added}"`);
    for (const stage of programStagesOf(forked, added)) expect(kargo).toContain(`stage/${stage}"`);
    const gone = programStagesOf(definition, removed);
    expect(gone.length).toBeGreaterThan(0);
    for (const stage of gone) expect(kargo).not.toContain(`stage/${stage}"`);
  });

  it("passes the pipeline's tests", async () => {
    const vitest = path.join(copy, "node_modules", ".bin", "vitest");
    // One worker: it plans the chain once for every file (isolate: false), beside this suite's own two.
    const result = await run(vitest, ["run", "--maxWorkers=1", ...forkTests], { cwd: copy }).catch(
      (err: { stdout: string; stderr: string }) => ({ ...err, failed: true }),
    );
    expect("failed" in result ? `${result.stdout}\n${result.stderr}` : "", "the fork's tests").toBe("");
    expect(result.stdout).not.toMatch(/skipped/);
  });
});

describe("a fork adding a program", () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "fork-program-"));
  const validated = validatePipeline(definition);
  const node = (args: string[]) => run(process.execPath, ["--import", "tsx", ...args], { cwd: copy });
  // A made-up YAML program beside ours, reading the last of ours; names no fork's program, folder or project has.
  const dependency = validated.programs.at(-1)!;
  const name = ["extra", "extra2", "extra3"].find((n) => !validated.programs.some((x) => x.name === n))!;
  const dir = [`${path.posix.dirname(dependency.dir)}/${name}`, `programs/${name}-made-up`].find(
    (d) => !fs.existsSync(path.join(repoRoot, d)),
  )!;
  const project = [`${definition.project}-${name}`, `${name}-made-up`].find(
    (p) => !validated.programs.some((x) => x.project === p),
  )!;
  const stackOf = (env: string) =>
    `${validated.pulumi.organization}/${project}/${validated.environments[env]!.pulumiStack}`;
  const environmentStages = validated.stages.filter((s) => s.kind !== "gate");
  let report: ProgramsReport;
  let kargo: { type: string; inputs: any }[];

  beforeAll(async () => {
    await copyOfRepository(copy);
    fs.mkdirSync(path.join(copy, dir), { recursive: true });
    fs.writeFileSync(
      path.join(copy, dir, "Pulumi.yaml"),
      YAML.stringify({
        name: project,
        runtime: "yaml",
        description: "Made up by test/fork.test.ts.",
        resources: {
          upstream: {
            type: "pulumi:pulumi:StackReference",
            properties: { name: `\${pulumi.organization}/${dependency.project}/\${pulumi.stack}` },
          },
        },
      }),
    );
    for (const env of Object.keys(validated.environments))
      fs.writeFileSync(path.join(copy, configFile(definition, { dir }, env)), "config: {}\n");
    fs.writeFileSync(
      path.join(copy, "kargo/pipeline.ts"),
      pipelineSource({
        ...definition,
        programs: [...definition.programs, { name, dir, dependsOn: [dependency.name] }],
      }),
    );
    await node(["lib/cli/stacks.ts"]);
    report = JSON.parse((await node(["lib/cli/programs.ts"])).stdout);
    const out = path.join(copy, "plan-out");
    await node(["lib/cli/plan.ts", "--project", "kargo", "--out", out]);
    kargo = JSON.parse(fs.readFileSync(path.join(out, "kargo", "resources.json"), "utf8")).resources;
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("gets a Stack manifest per environment stage, running its folder on its stack there", () => {
    expect(environmentStages.length).toBeGreaterThan(0);
    for (const s of environmentStages) {
      const file = path.join(copy, validated.stacks.dir, stackManifestFile(programStageName(s.name, name)));
      const manifest = YAML.parse(fs.readFileSync(file, "utf8"));
      expect(manifest.spec, s.name).toMatchObject({ stack: stackOf(s.environment), repoDir: dir });
    }
  });

  it("is listed for the workflows, with an update stage and its stack in every environment", () => {
    expect(report.programs.find((x) => x.name === name)).toEqual({ name, dir, project, runtime: "yaml" });
    // Compared whatever order each lists them in: the tool lists them in dependency order.
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(report.stages.filter((s) => s.program === name).sort(byName)).toEqual(
      environmentStages
        .filter((s) => s.kind === "update")
        .map((s) => ({
          name: programStageName(s.name, name),
          program: name,
          environment: s.environment,
          stack: stackOf(s.environment),
          dir,
          runtime: "yaml",
        }))
        .sort(byName),
    );
  });

  it("becomes Freight when its folder changes, and previews after its dependency's update in each environment", () => {
    const warehouse = kargo.find((r) => r.type === "kubernetes:kargo.akuity.io/v1alpha1:Warehouse")!;
    expect(warehouse.inputs.spec.subscriptions[0].git.includePaths).toContain(dir);
    const stages = kargo.filter((r) => r.type === "kubernetes:kargo.akuity.io/v1alpha1:Stage");
    for (const s of environmentStages.filter((s) => s.kind === "preview")) {
      const update = environmentStages.find((u) => u.kind === "update" && u.environment === s.environment)!;
      const stage = stages.find((r) => r.inputs.metadata.name === programStageName(s.name, name));
      expect(stage?.inputs.spec.requestedFreight[0].sources.stages, s.name).toContain(
        programStageName(update.name, dependency.name),
      );
    }
  });
});
