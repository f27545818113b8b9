// The deploy workflow never skips a change on main and never deploys on a base that failed: the rule in
// lib/cli/deploy.ts against a real git repository, and the jobs' `if` conditions evaluated by GitHub's own
// expression engine (@actions/expressions, from actions/languageservices) for every outcome of the jobs before.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Evaluator, Lexer, Parser, data } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";
import YAML from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { pipeline } from "../kargo/pipeline";
import { deployPlan, deployProjects, gitIn, projectPaths, type DeployProject } from "../lib/cli/deploy";
import { repoRoot } from "../lib/cli/plan/projects";
import { programStages } from "../lib/pipeline/graph";
import { stackConfigFile, stackManifestFile } from "../lib/pipeline/names";
import { validatePipeline } from "../lib/pipeline/validate";
import { gitEnv } from "./git-support";

const paths = projectPaths(path.join(repoRoot, ".github", "project-paths.yml"));
const deploy = YAML.parse(fs.readFileSync(path.join(repoRoot, ".github", "workflows", "deploy.yml"), "utf8"));

const repo = fs.mkdtempSync(path.join(os.tmpdir(), "deploy-rule-"));
afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));
const git = (...args: string[]) =>
  execFileSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: gitEnv(),
  }).trim();
/** Commits a change to each file and returns the commit. */
const commit = (...files: string[]) => {
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(repo, file)), { recursive: true });
    fs.appendFileSync(path.join(repo, file), `${Math.random()}\n`);
  }
  git("add", "-A");
  git("commit", "-q", "-m", files.join(" "));
  return git("rev-parse", "HEAD");
};
git("init", "-q", "-b", "main");
// One file of each project, as project-paths.yml names them.
const fileOf: Record<DeployProject, string> = {
  cluster: "cluster/index.ts",
  "cluster-setup": "cluster-setup/index.ts",
  kargo: "kargo/pipeline.ts",
};
const first = commit(...Object.values(fileOf), "lib/config.ts", "README.md");

const planAt = (head: string, successfulRuns: string[], event = "push") =>
  deployPlan({ event, head, successfulRuns, paths, git: gitIn(repo) });
const deployed = (plan: ReturnType<typeof planAt>) => deployProjects.filter((p) => plan.deploy[p]);

describe("which projects a deploy run deploys", () => {
  it("deploys a change whose own run was cancelled or failed, though the next push does not touch it", () => {
    const clusterChange = commit(fileOf.cluster); // its run is cancelled (a newer run joined the group) or fails
    const docsOnly = commit("README.md"); // event.before is clusterChange: its diff holds no project file
    const plan = planAt(docsOnly, [first]);
    expect(plan.base).toBe(first);
    expect(deployed(plan)).toEqual(["cluster"]);
    expect(git("diff", "--name-only", clusterChange, docsOnly)).toBe("README.md");
  });

  it("deploys nothing when nothing a project uses changed since the last successful run", () => {
    const head = commit("README.md", "stacks/dev.yaml");
    const last = git("rev-parse", "HEAD~1");
    expect(deployed(planAt(head, [last, first]))).toEqual([]);
  });

  // Kargo promotes the programs; the kargo project reads only each one's project name and runtime.
  const validated = validatePipeline(pipeline);
  it("deploys nothing for a promoted program's code, stack config or Stack manifest template", () => {
    for (const x of validated.programs) {
      const base = git("rev-parse", "HEAD");
      const stage = programStages(validated).find((s) => s.program === x.name)!;
      const head = commit(
        `${x.dir}/index.ts`,
        stackConfigFile(validated, x, stage.environment),
        `${validated.stacks.dir}/${stackManifestFile(stage.name)}`,
      );
      expect(deployed(planAt(head, [base])), x.name).toEqual([]);
    }
  });

  it("deploys kargo when a promoted program's Pulumi.yaml changes (its project name and runtime)", () => {
    for (const x of validated.programs) {
      const base = git("rev-parse", "HEAD");
      expect(deployed(planAt(commit(`${x.dir}/Pulumi.yaml`), [base])), x.name).toEqual(["kargo"]);
    }
  });

  it("deploys kargo when a promoted program's lock file changes (the provider versions its plugin cache seeds)", () => {
    for (const x of validated.programs) {
      for (const lock of ["package-lock.json", "uv.lock", "go.mod"]) {
        const base = git("rev-parse", "HEAD");
        expect(deployed(planAt(commit(`${x.dir}/${lock}`), [base])), `${x.name} ${lock}`).toEqual(["kargo"]);
      }
    }
  });

  it("deploys every project when shared code changed", () => {
    const base = git("rev-parse", "HEAD");
    const head = commit("lib/pipeline/schema.ts");
    expect(deployed(planAt(head, [base]))).toEqual([...deployProjects]);
  });

  it("diffs against the newest successful run in HEAD's history", () => {
    const old = git("rev-parse", "HEAD");
    const kargoChange = commit(fileOf.kargo);
    const newer = commit("README.md");
    const head = commit(fileOf["cluster-setup"]);
    expect(planAt(head, [newer, kargoChange, old]).base).toBe(newer);
    expect(deployed(planAt(head, [newer, kargoChange, old]))).toEqual(["cluster-setup"]);
  });

  it("deploys everything when no successful run is in HEAD's history (first run, or history rewritten)", () => {
    const head = git("rev-parse", "HEAD");
    git("checkout", "-q", "-b", "elsewhere", first);
    const elsewhere = commit("README.md");
    git("checkout", "-q", "main");
    expect(deployed(planAt(head, []))).toEqual([...deployProjects]);
    expect(deployed(planAt(head, [elsewhere, "0".repeat(40)]))).toEqual([...deployProjects]);
  });

  it("deploys everything on a manual run", () => {
    const head = git("rev-parse", "HEAD");
    expect(deployed(planAt(head, [head], "workflow_dispatch"))).toEqual([...deployProjects]);
  });

  it("is what the workflow runs, with history, instead of diffing since the push's before", () => {
    const changes = deploy.jobs.changes;
    const checkout = changes.steps.find((s: { uses?: string }) => s.uses?.startsWith("actions/checkout@"));
    expect(checkout.with["fetch-depth"]).toBe(0);
    expect(changes.steps.map((s: { run?: string }) => s.run)).toContain("npx tsx lib/cli/deploy.ts");
    expect(changes.permissions).toEqual({ contents: "read", actions: "read" });
    for (const project of deployProjects)
      expect(changes.outputs[project]).toBe(`\${{ steps.plan.outputs.${project} }}`);
    expect(JSON.stringify(deploy)).not.toContain("event.before");
    expect(deploy.concurrency["cancel-in-progress"]).toBe(false);
  });
});

type Result = "success" | "failure" | "cancelled" | "skipped";
const results: Result[] = ["success", "failure", "cancelled", "skipped"];

/** Evaluates a job's `if` as GitHub does, with the results and outputs of the jobs it needs. */
function runs(
  job: string,
  needs: Record<string, { result: Result; outputs?: Record<string, string> }>,
): boolean {
  const condition = String(deploy.jobs[job].if).replace(/^\$\{\{\s*|\s*\}\}$/g, "");
  // Without a status function GitHub adds success(), which skips the job when any job it needs was skipped.
  expect(condition, `${job} decides on its own when a job before it was skipped`).toMatch(/!cancelled\(\)/);
  const lexed = new Lexer(condition).lex();
  const expr = new Parser(lexed.tokens, ["needs"], [{ name: "cancelled", minArgs: 0, maxArgs: 0 }]).parse();
  const context = new data.Dictionary({
    key: "needs",
    value: JSON.parse(
      JSON.stringify(
        Object.fromEntries(
          Object.entries(needs).map(([k, v]) => [k, { result: v.result, outputs: v.outputs ?? {} }]),
        ),
      ),
      data.reviver,
    ),
  });
  const functions = new Map([
    ["cancelled", { name: "cancelled", minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(false) }],
  ]);
  const value = new Evaluator(expr, context, functions).evaluate();
  return truthy(value);
}

describe("the deploy jobs' conditions", () => {
  const changed = (outputs: Partial<Record<DeployProject, boolean>>) =>
    Object.fromEntries(deployProjects.map((p) => [p, String(outputs[p] ?? false)]));

  it("need every job before them, so each sees the result of its whole base", () => {
    expect(deploy.jobs.cluster.needs).toEqual("changes");
    expect(deploy.jobs["cluster-setup"].needs).toEqual(["changes", "cluster"]);
    expect(deploy.jobs.kargo.needs).toEqual(["changes", "cluster", "cluster-setup"]);
  });

  // The rule: a project deploys when its files changed or the project before it was just deployed, and
  // never when a project before it failed or was cancelled.
  for (const cluster of results) {
    for (const ownChange of [true, false]) {
      it(`cluster-setup after a ${cluster} cluster job, its own files ${ownChange ? "" : "un"}changed`, () => {
        const expected = !["failure", "cancelled"].includes(cluster) && (ownChange || cluster === "success");
        expect(
          runs("cluster-setup", {
            changes: { result: "success", outputs: changed({ "cluster-setup": ownChange }) },
            cluster: { result: cluster },
          }),
        ).toBe(expected);
      });
    }
  }

  for (const cluster of results) {
    for (const setup of results) {
      for (const ownChange of [true, false]) {
        it(`kargo after a ${cluster} cluster job and a ${setup} cluster-setup job, its own files ${ownChange ? "" : "un"}changed`, () => {
          const failed = [cluster, setup].some((r) => r === "failure" || r === "cancelled");
          const expected = !failed && (ownChange || setup === "success");
          expect(
            runs("kargo", {
              changes: { result: "success", outputs: changed({ kargo: ownChange }) },
              cluster: { result: cluster },
              "cluster-setup": { result: setup },
            }),
          ).toBe(expected);
        });
      }
    }
  }

  it("deploy nothing when the changes job did not succeed (the tests failed)", () => {
    for (const job of ["cluster-setup", "kargo"]) {
      expect(
        runs(job, {
          changes: { result: "skipped", outputs: changed({ "cluster-setup": true, kargo: true }) },
          cluster: { result: "skipped" },
          "cluster-setup": { result: "skipped" },
        }),
      ).toBe(false);
    }
  });
});
