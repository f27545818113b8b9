import { programsReport } from "../lib/cli/programs";
import { validateAction, validateWorkflow } from "@action-validator/core";
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { suiteSteps } from "./suite";
import { README, withDiagram } from "../lib/pipeline/diagram";
import { docPages } from "../lib/markdown";
import { programStages } from "../lib/pipeline/graph";
import { validatePipeline } from "../lib/pipeline/validate";
import { projectOrder, repoRoot } from "../lib/cli/plan/projects";

const run = promisify(execFile);
const validator = path.join(repoRoot, "node_modules", ".bin", "action-validator");
const github = path.join(repoRoot, ".github");
const workflow = (name: string) => YAML.parse(fs.readFileSync(path.join(github, "workflows", name), "utf8"));

/**
 * A copy of what the command-line tools read (lib/, kargo/, the programs, node_modules linked) whose
 * pipeline names an upstream stage that does not exist. The definition holds code (each program's access),
 * so the copy overrides its stages in TypeScript.
 */
function copyWithBrokenStage(prefix: string) {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  for (const dir of ["lib", "kargo", ...validatePipeline(definition).programs.map((x) => x.dir)])
    fs.cpSync(path.join(repoRoot, dir), path.join(copy, dir), { recursive: true });
  fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(copy, "node_modules"));
  const first = definition.stages.find((s) => s.from !== "warehouse")!;
  const file = path.join(copy, "kargo", "pipeline.ts");
  const declaration = "export const pipeline: PipelineInput = {";
  const ours = fs.readFileSync(file, "utf8");
  expect(ours).toContain(declaration);
  fs.writeFileSync(
    file,
    `${ours.replace(declaration, "const ours: PipelineInput = {")}\n` +
      `export const pipeline: PipelineInput = { ...ours, stages: ours.stages.map((s) => s.name === ${JSON.stringify(first.name)} ? { ...s, from: ["nowhere"] } : s) };\n`,
  );
  return { copy, first };
}

describe("README", () => {
  it("draws the pipeline diagram from kargo/pipeline.ts (run `npm run docs` after editing it)", () => {
    const readme = fs.readFileSync(README, "utf8");
    expect(readme).toBe(withDiagram(readme, validatePipeline(definition)));
  });

  it("npm run docs reports a pipeline mistake as npm run plan does, without a stack trace, leaving the README", async () => {
    // A copy of what the docs command reads, with a stage that names an upstream that does not exist.
    const { copy, first } = copyWithBrokenStage("docs-");
    fs.copyFileSync(README, path.join(copy, "README.md"));
    const failed = await run(process.execPath, ["--import", "tsx", "lib/cli/docs.ts"], { cwd: copy }).then(
      () => undefined,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr).toMatch(/^docs failed: Invalid pipeline definition:/);
    expect(failed?.stderr).toContain(`stage "${first.name}": upstream stage "nowhere" does not exist`);
    expect(failed?.stderr).not.toMatch(/\n\s+at /);
    expect(fs.readFileSync(path.join(copy, "README.md"), "utf8")).toBe(fs.readFileSync(README, "utf8"));
  });

  it("gives the test command CI runs", () => {
    expect(fs.readFileSync(README, "utf8")).toContain("npm test");
    expect(fs.readFileSync(path.join(repoRoot, ".ci", "run"), "utf8")).toMatch(/npm ci\nnpm test/);
  });
});

describe("the supported Node.js", () => {
  const pinned = fs.readFileSync(path.join(repoRoot, ".nvmrc"), "utf8").trim();
  const major = pinned.split(".")[0]!;
  const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8"));

  it("is what @pulumi/pulumi declares, and package.json, .nvmrc and the Node typings agree on it", () => {
    const sdk = JSON.parse(
      fs.readFileSync(path.join(repoRoot, "node_modules", "@pulumi", "pulumi", "package.json"), "utf8"),
    );
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(pkg.engines.node).toBe(sdk.engines.node);
    expect(pkg.engines.node).toBe(`>=${major}`);
    expect(pkg.devDependencies["@types/node"]).toMatch(new RegExp(`^\\^${major}\\.`));
  });

  it("is what CI, every workflow and the README use", () => {
    const ciRun = fs.readFileSync(path.join(repoRoot, ".ci", "run"), "utf8");
    expect(ciRun).toContain("cat .nvmrc");
    expect(ciRun).toContain("engines.node");
    const setupNode = [
      ...fs.readdirSync(path.join(github, "workflows")).map((f) => path.join(github, "workflows", f)),
      path.join(github, "actions", "pulumi", "action.yml"),
    ].flatMap((file) =>
      [
        ...fs
          .readFileSync(file, "utf8")
          .matchAll(/uses: actions\/setup-node@[^\n]+\n\s+with:\n((?:\s+\S.*\n)+)/g),
      ].map((m) => [path.basename(file), m[1]!] as const),
    );
    expect(setupNode.length).toBeGreaterThanOrEqual(2);
    for (const [file, inputs] of setupNode) {
      expect(inputs, `${file} sets up Node from .nvmrc`).toContain("node-version-file: .nvmrc");
    }
    expect(fs.readFileSync(README, "utf8")).toContain(`Node.js ${major} or newer`);
  });
});

describe("GitHub workflows", () => {
  const files = [
    ...fs.readdirSync(path.join(github, "workflows")).map((f) => path.join(github, "workflows", f)),
    path.join(github, "actions", "pulumi", "action.yml"),
  ];

  // What the action-validator command runs on a file (@action-validator/cli's cli.mjs: an action.yml is an
  // action, anything else a workflow), in-process: its wasm loads once, not once per file.
  const validate = (file: string) => {
    const text = fs.readFileSync(file, "utf8");
    return /action\.ya?ml$/.test(file) ? validateAction(text) : validateWorkflow(text);
  };

  it.each(files.map((f) => [path.relative(repoRoot, f), f]))("%s passes action-validator", (_, file) => {
    expect(validate(file).errors).toEqual([]);
  });

  it("are rejected by the validator when malformed, by the command as by its library", async () => {
    const broken = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "wf-")), "broken.yml");
    fs.writeFileSync(broken, "name: x\non: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    stepz: []\n");
    await expect(run(validator, [broken])).rejects.toMatchObject({ code: 1 });
    expect(validate(broken).errors.length).toBeGreaterThan(0);
  });

  it("preview every changed project and every changed promoted program on pull requests, with OIDC and PR comments", () => {
    const preview = workflow("preview.yml");
    expect(Object.keys(preview.on)).toEqual(["pull_request"]);
    expect(preview.jobs.tests.uses).toBe("./.github/workflows/ci.yml");
    const matrix = preview.jobs.preview.strategy.matrix.include as { project: string; dir: string }[];
    expect(matrix.map((m) => m.dir)).toEqual([...projectOrder]);
    const step = preview.jobs.preview.steps.find(
      (s: { uses?: string }) => s.uses === "./.github/actions/pulumi",
    );
    expect(step.with).toMatchObject({
      command: "preview",
      "comment-on-pr": "true",
      "stack-name": "${{ vars[matrix.stackVariable] }}",
    });
    // The programs: one job per program the changes job lists, in its folder, with its stack and runtime.
    const programs = preview.jobs.programs;
    expect(programs.needs).toBe("changes");
    expect(programs.strategy.matrix.program).toBe("${{ fromJSON(needs.changes.outputs.programs) }}");
    expect(programs.if).toBe("needs.changes.outputs.programs != '[]'");
    expect(preview.jobs.changes.outputs.programs).toBe("${{ steps.programs.outputs.programs }}");
    const programStep = programs.steps.find((s: { uses?: string }) => s.uses === "./.github/actions/pulumi");
    expect(programStep.with).toMatchObject({
      command: "preview",
      "comment-on-pr": "true",
      "work-dir": "${{ matrix.program.dir }}",
      "stack-name": "${{ matrix.program.stack }}",
      "program-runtime": "${{ matrix.program.runtime }}",
    });
    expect(JSON.stringify(preview)).not.toContain("PROGRAM_STACK");
    const paths = YAML.parse(fs.readFileSync(path.join(github, "project-paths.yml"), "utf8"));
    for (const project of projectOrder) {
      expect(paths[project]).toEqual(expect.arrayContaining([`${project}/**`]));
      expect(paths[project].flat()).toContain("lib/**");
    }
    // Only the platform's projects (and what they share): the programs come from the pipeline definition.
    expect(Object.keys(paths).sort()).toEqual(["shared", ...projectOrder].sort());
    const action = YAML.parse(fs.readFileSync(path.join(github, "actions", "pulumi", "action.yml"), "utf8"));
    const uses = action.runs.steps.map((s: { uses?: string }) => s.uses).filter(Boolean);
    expect(uses.map((u: string) => u.split("@")[0])).toEqual(
      expect.arrayContaining([
        "pulumi/auth-actions",
        "aws-actions/configure-aws-credentials",
        "pulumi/actions",
      ]),
    );
    expect(JSON.stringify(action)).not.toMatch(/PULUMI_ACCESS_TOKEN|AWS_SECRET_ACCESS_KEY/);
  });

  it("preview the programs a pull request changes, each against its stack in the environment the repository variable names", async () => {
    const pipeline = validatePipeline(definition);
    const changes = workflow("preview.yml").jobs.changes;
    const step = changes.steps.find((s: { id?: string }) => s.id === "programs");
    expect(step.env).toEqual({
      BASE_SHA: "${{ github.event.pull_request.base.sha }}",
      ENVIRONMENT: "${{ vars.PROGRAM_PREVIEW_ENVIRONMENT }}",
    });
    expect(
      changes.steps.find((s: { uses?: string }) => s.uses?.startsWith("actions/checkout@")).with,
    ).toMatchObject({ "fetch-depth": 0 });
    // The step as written, in this checkout, with a git that reports `changed` as the pull request's files.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "preview-programs-"));
    fs.writeFileSync(
      path.join(bin, "git"),
      `#!/bin/sh\necho "$*" > "${bin}/args"\nprintf '%s\\n' $CHANGED\n`,
      { mode: 0o755 },
    );
    const programsFor = async (changed: string[], environment: string) => {
      const out = path.join(bin, "out");
      fs.writeFileSync(out, "");
      await run("bash", ["-e", "-c", step.run], {
        cwd: repoRoot,
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH}`,
          CHANGED: changed.join(" "),
          BASE_SHA: "0123abc",
          ENVIRONMENT: environment,
          GITHUB_OUTPUT: out,
        },
      });
      expect(fs.readFileSync(path.join(bin, "args"), "utf8").trim()).toBe("diff --name-only 0123abc...HEAD");
      const [key, value] = fs.readFileSync(out, "utf8").trim().split(/=(.*)/s);
      expect(key).toBe("programs");
      return JSON.parse(value!) as { name: string; dir: string; runtime: string; stack: string }[];
    };
    const stackIn = (environment: string) => (x: (typeof pipeline.programs)[number]) =>
      `${pipeline.pulumi.organization}/${x.project}/${pipeline.environments[environment]!.pulumiStack}`;
    // Unset, the environment Freight reaches first.
    const first = programStages(pipeline).find((s) => s.kind === "update")!.environment;
    const everyProgram = pipeline.programs.map((x) => `${x.dir}/Pulumi.yaml`);
    expect(await programsFor([...everyProgram, "README.md"], "")).toEqual(
      pipeline.programs.map((x) => ({
        name: x.name,
        dir: x.dir,
        project: x.project,
        runtime: x.runtime,
        environment: first,
        stack: stackIn(first)(x),
      })),
    );
    // The other cases in-process, through the function the command prints (each spawn costs seconds).
    const report = (changed: string[], environment: string) =>
      programsReport(pipeline, { changed, environment }).programs;
    const [one] = pipeline.programs.slice(-1);
    const last = Object.keys(pipeline.environments).at(-1)!;
    const config = `${one!.dir}/Pulumi.${pipeline.environments[last]!.pulumiStack}.yaml`;
    expect(report([config], last).map((x) => [x.name, x.stack])).toEqual([[one!.name, stackIn(last)(one!)]]);
    expect(report(["README.md", "lib/fork.ts"], last)).toEqual([]);
    const unknown = ["nowhere", "nowhere-else"].find((e) => !(e in pipeline.environments))!;
    expect(() => report(everyProgram, unknown)).toThrow(`--environment: "${unknown}" is not an environment`);
    fs.rmSync(bin, { recursive: true, force: true });
  });

  it("npm run programs reports a pipeline mistake without a stack trace, with exit status 1", async () => {
    // A copy of what the command reads, with a stage that names an upstream that does not exist.
    const { copy, first } = copyWithBrokenStage("programs-");
    const failed = await run(process.execPath, ["--import", "tsx", "lib/cli/programs.ts"], {
      cwd: copy,
    }).then(
      () => undefined,
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toBe("");
    expect(failed?.stderr).toMatch(/^Invalid pipeline definition:/);
    expect(failed?.stderr).toContain(`stage "${first.name}": upstream stage "nowhere" does not exist`);
    expect(failed?.stderr).not.toMatch(/\n\s+at /);
    fs.rmSync(copy, { recursive: true, force: true });
  });

  const rawFiles = () =>
    [
      ...fs.readdirSync(path.join(github, "workflows")).map((f) => path.join(github, "workflows", f)),
      path.join(github, "actions", "pulumi", "action.yml"),
    ].map((f) => [path.relative(repoRoot, f), fs.readFileSync(f, "utf8")] as const);

  it("pin every third-party action by full commit SHA, with its version beside it", () => {
    const pinned: Record<string, string> = {};
    for (const [file, text] of rawFiles()) {
      for (const [, action, ref, version] of text.matchAll(/uses:\s*([^\s@]+)@(\S+)(?:\s+#\s*(\S+))?/g)) {
        if (action!.startsWith("./")) continue;
        expect(ref, `${file}: ${action}`).toMatch(/^[0-9a-f]{40}$/);
        expect(version, `${file}: ${action} names its version`).toMatch(/^v\d+\.\d+\.\d+$/);
        pinned[action!] ??= ref!;
        expect(pinned[action!], `${action} is pinned to one commit everywhere`).toBe(ref);
      }
    }
    expect(Object.keys(pinned).sort()).toEqual([
      "actions/cache",
      "actions/checkout",
      "actions/download-artifact",
      "actions/github-script",
      "actions/setup-go",
      "actions/setup-node",
      "actions/upload-artifact",
      "astral-sh/setup-uv",
      "aws-actions/configure-aws-credentials",
      "dorny/paths-filter",
      "pulumi/actions",
      "pulumi/auth-actions",
    ]);
  });

  it("run the Go harness with the Go that test/go.mod names, in npm test and so in every CI", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8"));
    expect(pkg.scripts.test).toBe("tsx test/suite.ts");
    expect(suiteSteps.at(-1)).toBe("test:engines");
    for (const script of suiteSteps) expect(pkg.scripts[script], script).toBeTruthy();
    const steps = workflow("ci.yml").jobs.test.steps as {
      uses?: string;
      with?: Record<string, string>;
      run?: string;
    }[];
    const setupGo = steps.findIndex((s) => s.uses?.startsWith("actions/setup-go@"));
    expect(steps[setupGo]?.with).toMatchObject({ "go-version-file": "test/go.mod" });
    expect(setupGo).toBeLessThan(steps.findIndex((s) => s.run === "npm test"));
    // The tripwire's upstream snapshots are there before the harness runs, so it compares rather than skips.
    const upstream = steps.findIndex((s) => s.run === "npm run upstream");
    expect(upstream).toBeGreaterThanOrEqual(0);
    expect(upstream).toBeLessThan(steps.findIndex((s) => s.run === "npm test"));
  });

  it("fail the Go harness, naming the Go to install, where there is no Go", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "test/go-harness.ts"], {
      cwd: repoRoot,
      encoding: "utf8",
      env: { ...process.env, PATH: "/nonexistent" },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /test:engines: no Go toolchain on PATH; the harness needs Go \d+\.\d+ or newer/,
    );
  });

  it("grant id-token: write only to the jobs that log in with OIDC", () => {
    for (const name of ["preview.yml", "deploy.yml", "drift.yml", "ci.yml"]) {
      const wf = workflow(name);
      expect(wf.permissions, `${name} workflow-level permissions`).toEqual({ contents: "read" });
      for (const [jobName, job] of Object.entries<any>(wf.jobs)) {
        const logsIn = JSON.stringify(job.steps ?? []).includes("./.github/actions/pulumi");
        expect(job.permissions?.["id-token"], `${name} job ${jobName}`).toBe(logsIn ? "write" : undefined);
      }
    }
  });

  it("give pull-request previews their credentials only in the approved preview environment", () => {
    const preview = workflow("preview.yml");
    // Every job that logs in runs in the environment; the tests and the path filter need no credential.
    const loggingIn: any[] = [];
    for (const [name, job] of Object.entries<any>(preview.jobs)) {
      const logsIn = JSON.stringify(job.steps ?? []).includes("./.github/actions/pulumi");
      expect(job.environment, `preview.yml job ${name}`).toBe(logsIn ? "preview" : undefined);
      if (logsIn) loggingIn.push(job);
    }
    expect(loggingIn.length).toBeGreaterThan(1);
    for (const job of loggingIn) {
      const step = job.steps.find((s: { uses?: string }) => s.uses === "./.github/actions/pulumi");
      expect(step.with).toMatchObject({
        "aws-role-arn": "${{ vars.AWS_PREVIEW_ROLE_ARN }}",
        "pulumi-token-type":
          "${{ vars.PULUMI_PREVIEW_TOKEN_TYPE || 'urn:pulumi:token-type:access_token:team' }}",
        "pulumi-scope": "${{ vars.PULUMI_PREVIEW_SCOPE || format('team:{0}', vars.PULUMI_PREVIEW_TEAM) }}",
      });
    }
    // The roles' trust policies in the deploy page accept exactly these environments' tokens.
    const readme = fs.readFileSync(docPages.deploy, "utf8");
    expect(readme).toContain(
      '"token.actions.githubusercontent.com:sub": "repo:<you>/<your-fork>:environment:production"',
    );
    expect(readme).toContain(
      '"token.actions.githubusercontent.com:sub": "repo:<you>/<your-fork>:environment:preview"',
    );
    expect(readme).not.toMatch(/:sub": "repo:<you>\/<your-fork>:pull_request"/);
    for (const job of ["cluster", "cluster-setup", "kargo"]) {
      const deployStep = workflow("deploy.yml").jobs[job].steps.at(-1);
      expect(deployStep.with["aws-role-arn"]).toBe("${{ vars.AWS_DEPLOY_ROLE_ARN }}");
      expect(deployStep.with).not.toHaveProperty("pulumi-scope");
    }
    const action = YAML.parse(fs.readFileSync(path.join(github, "actions", "pulumi", "action.yml"), "utf8"));
    const auth = action.runs.steps.find((s: { uses?: string }) => s.uses?.startsWith("pulumi/auth-actions@"));
    expect(auth.with).toEqual({
      organization: "${{ inputs.pulumi-organization }}",
      "requested-token-type": "${{ inputs.pulumi-token-type }}",
      scope: "${{ inputs.pulumi-scope }}",
    });
  });

  it("deploy cluster, then cluster-setup, then kargo, behind a protected environment", () => {
    const deploy = workflow("deploy.yml");
    expect(deploy.on).toHaveProperty("workflow_dispatch");
    expect(deploy.on.push.branches).toEqual(["main"]);
    expect(deploy.jobs["cluster-setup"].needs).toContain("cluster");
    expect(deploy.jobs.kargo.needs).toContain("cluster-setup");
    for (const project of projectOrder) {
      const job = deploy.jobs[project];
      expect(job.environment, project).toBe("production");
      expect(job.steps.at(-1).with).toMatchObject({ command: "up", "work-dir": project });
    }
  });
});
