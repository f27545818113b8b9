// The review workflows, offline: the plan diff of a pull request (computed without secrets, posted by a
// workflow that runs none of the pull request's code, one comment edited on re-runs), the policy pack in
// every preview and deploy, each promoted program's toolchain in the composite action, and the drift report
// (a refresh preview with the read-only identity of every platform stack; the programs' stacks are checked in
// the cluster: test/drift.test.ts). Scripts run as they are written.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Evaluator, Lexer, Parser, data } from "@actions/expressions";
import { truthy } from "@actions/expressions/result";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { WORKSPACE_IMAGES } from "../lib/pipeline/schema";
import { projectOrder, repoRoot } from "../lib/cli/plan/projects";

const github = path.join(repoRoot, ".github");
const text = (name: string) => fs.readFileSync(path.join(github, "workflows", name), "utf8");
const workflow = (name: string) => YAML.parse(text(name));
type Step = {
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
  id?: string;
  "working-directory"?: string;
};
const action = YAML.parse(fs.readFileSync(path.join(github, "actions", "pulumi", "action.yml"), "utf8"));
const pulumiStep = action.runs.steps.find((s: Step) => s.uses?.startsWith("pulumi/actions@")) as Step;

describe("the plan-diff workflow", () => {
  const wf = workflow("plan-diff.yml");
  const steps = wf.jobs.diff.steps as Step[];

  it("runs on every pull request with a read-only token, no secrets and no cloud credentials", () => {
    expect(Object.keys(wf.on)).toEqual(["pull_request"]);
    expect(wf.permissions).toEqual({ contents: "read" });
    expect(wf.jobs.diff.permissions).toEqual({ contents: "read" });
    expect(text("plan-diff.yml")).not.toMatch(/secrets\.|id-token|\.\/\.github\/actions\/pulumi/);
    expect(steps[0]!.with).toMatchObject({ "fetch-depth": 0, "persist-credentials": false });
  });

  it("diffs against the pull request's base commit and uploads the Markdown and the pull request's number", () => {
    const diff = steps.find((s) => s.id === "diff")!;
    expect(diff.env?.BASE_SHA).toBe("${{ github.event.pull_request.base.sha }}");
    expect(diff.run).toContain(
      'npm run --silent plan -- --diff "$BASE_SHA" --format markdown > plan-diff/comment.md',
    );
    const upload = steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"))!;
    expect(upload.with).toMatchObject({ name: "plan-diff", path: "plan-diff/" });
    // Uploaded before the check can fail, so a violation is still posted.
    expect(steps.indexOf(upload)).toBeLessThan(steps.length - 1);
    expect(steps.at(-1)!.run).toContain("violation(s): each blocks a deploy");
  });
});

describe("the plan-diff-comment workflow", () => {
  const wf = workflow("plan-diff-comment.yml");
  const job = wf.jobs.comment;
  const steps = job.steps as Step[];
  const script = steps.find((s) => s.uses?.startsWith("actions/github-script@"))!.with!.script!;

  it("runs after plan-diff, in the repository's context, without checking out any code", () => {
    expect(wf.on.workflow_run).toEqual({ workflows: [workflow("plan-diff.yml").name], types: ["completed"] });
    expect(job.permissions).toEqual({ actions: "read", "pull-requests": "write" });
    expect(steps.some((s) => s.uses?.startsWith("actions/checkout@"))).toBe(false);
    expect(steps[0]!.with).toMatchObject({
      name: "plan-diff",
      "run-id": "${{ github.event.workflow_run.id }}",
    });
  });

  /** Runs the step's script as actions/github-script does, against an in-memory pull request. */
  async function post(
    dir: string,
    prHead: string,
    comments: { id: number; body: string; user: { login: string } }[],
  ) {
    const api = {
      rest: {
        pulls: { get: async () => ({ data: { head: { sha: prHead } } }) },
        issues: {
          listComments: () => undefined,
          updateComment: async ({ comment_id, body }: { comment_id: number; body: string }) => {
            comments.find((c) => c.id === comment_id)!.body = body;
          },
          createComment: async ({ body }: { body: string }) => {
            comments.push({ id: comments.length + 1, body, user: { login: "github-actions[bot]" } });
          },
        },
      },
      paginate: async () => comments,
    };
    const cwd = process.cwd();
    process.env.HEAD_SHA = "abc";
    process.chdir(dir);
    try {
      const fn = new Function("github", "context", "require", `return (async () => {\n${script}\n})();`);
      await fn(api, { repo: { owner: "o", repo: "r" } }, require);
    } finally {
      process.chdir(cwd);
      delete process.env.HEAD_SHA;
    }
  }

  it("posts one comment and edits it on re-runs, leaving other comments alone", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "plan-diff-artifact-"));
    fs.mkdirSync(path.join(dir, "plan-diff"));
    fs.writeFileSync(path.join(dir, "plan-diff", "pr-number"), "7\n");
    const comments = [{ id: 1, body: "<!-- plan-diff --> forged by a person", user: { login: "someone" } }];
    fs.writeFileSync(path.join(dir, "plan-diff", "comment.md"), "first");
    await post(dir, "abc", comments);
    fs.writeFileSync(path.join(dir, "plan-diff", "comment.md"), "second");
    await post(dir, "abc", comments);
    expect(comments.map((c) => c.body)).toEqual([
      "<!-- plan-diff --> forged by a person",
      "<!-- plan-diff -->\nsecond",
    ]);
  });

  it("refuses an artifact naming a pull request that is not the one the run was for", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "plan-diff-artifact-"));
    fs.mkdirSync(path.join(dir, "plan-diff"));
    fs.writeFileSync(path.join(dir, "plan-diff", "comment.md"), "diff");
    fs.writeFileSync(path.join(dir, "plan-diff", "pr-number"), "8");
    await expect(post(dir, "other", [])).rejects.toThrow(/is at other, not at the run's abc/);
    fs.writeFileSync(path.join(dir, "plan-diff", "pr-number"), "8; rm -rf /");
    await expect(post(dir, "abc", [])).rejects.toThrow(/names no pull request/);
  });
});

describe("the policy pack in CI", () => {
  it("runs in every preview and deploy unless a caller opts out (only drift does)", () => {
    expect(action.inputs["policy-pack"].default).toBe("policy");
    expect(pulumiStep.with!.policyPacks).toContain("format('{0}/{1}', github.workspace, inputs.policy-pack)");
    for (const name of ["preview.yml", "deploy.yml"]) {
      const calls = Object.values<{ steps?: Step[] }>(workflow(name).jobs)
        .flatMap((j) => j.steps ?? [])
        .filter((s) => s.uses === "./.github/actions/pulumi");
      expect(calls.length, name).toBeGreaterThan(0);
      for (const call of calls) expect(call.with?.["policy-pack"], name).toBeUndefined();
    }
    // The pack is a Node.js program: its packages are installed for a promoted YAML program too.
    const install = action.runs.steps.find((s: Step) => s.run === "npm ci" && !s["working-directory"]);
    expect(install.if).toContain("inputs.policy-pack != ''");
    expect(runningSteps({ "policy-pack": "policy", "program-runtime": "yaml", node: "false" })).toContain(
      install,
    );
  });
});

/** The composite action's steps that run for `inputs` (its defaults for the rest), as GitHub evaluates each `if`. */
function runningSteps(inputs: Record<string, string>): Step[] {
  const all = {
    ...Object.fromEntries(
      Object.entries<{ default?: string }>(action.inputs).map(([k, v]) => [k, v.default ?? ""]),
    ),
    ...inputs,
  };
  const context = new data.Dictionary({
    key: "inputs",
    value: JSON.parse(JSON.stringify(all), data.reviver),
  });
  return (action.runs.steps as Step[]).filter((step) => {
    if (step.if === undefined) return true;
    const expr = new Parser(new Lexer(step.if).lex().tokens, ["inputs"], []).parse();
    return truthy(new Evaluator(expr, context, new Map()).evaluate());
  });
}

describe("a promoted program in the composite action", () => {
  const base = { command: "preview", "work-dir": "programs/x", node: "false", "policy-pack": "" };
  const programSteps = (runtime: string) => {
    const platform = runningSteps({ ...base, "program-runtime": "" });
    return runningSteps({ ...base, "program-runtime": runtime }).filter((s) => !platform.includes(s));
  };

  it("sets up nothing more for a platform project or a YAML program (the CLI runs YAML itself)", () => {
    expect(programSteps("yaml")).toEqual([]);
    expect(runningSteps({ ...base, "program-runtime": "" }).map((s) => s.uses?.split("@")[0])).toEqual([
      "pulumi/auth-actions",
      "aws-actions/configure-aws-credentials",
      "pulumi/actions",
    ]);
  });

  it("sets up every other runtime with a workspace image, and installs what its folder locks there", () => {
    const runtimes = Object.keys(WORKSPACE_IMAGES).filter((r) => r !== "yaml");
    expect(runtimes.length).toBeGreaterThan(0);
    for (const runtime of runtimes) {
      const steps = programSteps(runtime);
      expect(steps.length, runtime).toBeGreaterThan(0);
      // Whatever it installs, it installs in the program's folder, before the Pulumi command.
      for (const step of steps.filter((s) => s.run))
        expect(step["working-directory"], runtime).toBe("${{ inputs.work-dir }}");
      const all = runningSteps({ ...base, "program-runtime": runtime });
      expect(all.indexOf(steps.at(-1)!), runtime).toBeLessThan(
        all.findIndex((s) => s.uses?.startsWith("pulumi/actions@")),
      );
    }
    expect(programSteps("nodejs").map((s) => s.uses?.split("@")[0] ?? s.run)).toEqual([
      "actions/setup-node",
      "npm ci",
    ]);
    expect(programSteps("python").map((s) => s.uses?.split("@")[0] ?? s.run)).toEqual([
      "astral-sh/setup-uv",
      "uv sync --locked",
    ]);
    const [go] = programSteps("go");
    expect(go!.uses).toMatch(/^actions\/setup-go@/);
    expect(go!.with).toMatchObject({ "go-version-file": "${{ inputs.work-dir }}/go.mod" });
  });

  it("installs the root node_modules for the policy pack, and a Node.js program's own in its folder", () => {
    const steps = runningSteps({ ...base, "program-runtime": "nodejs", "policy-pack": "policy" });
    const installs = steps.filter((s) => s.run === "npm ci").map((s) => s["working-directory"] ?? ".");
    expect(installs).toEqual([".", "${{ inputs.work-dir }}"]);
    expect(steps.filter((s) => s.uses?.startsWith("actions/setup-node@"))).toHaveLength(1);
  });
});

describe("the drift workflow", () => {
  const wf = workflow("drift.yml");
  const jobs = Object.entries<{ permissions: object; environment: string; steps: Step[]; strategy: any }>(
    wf.jobs,
  );

  it("runs on a schedule and by hand", () => {
    expect(wf.on.schedule[0].cron).toMatch(/^\S+ \S+ \* \* \*$/);
    expect(wf.on).toHaveProperty("workflow_dispatch");
  });

  it("only previews, refreshed, failing on any difference, with the read-only identity", () => {
    expect(jobs.length).toBeGreaterThan(0);
    for (const [name, job] of jobs) {
      expect(job.environment, name).toBe("drift");
      expect(job.permissions, name).toEqual({ contents: "read", "id-token": "write" });
      const call = job.steps.find((s) => s.uses === "./.github/actions/pulumi")!;
      expect(call.with, name).toMatchObject({
        command: "preview",
        refresh: "true",
        "expect-no-changes": "true",
        "aws-role-arn": "${{ vars.AWS_PREVIEW_ROLE_ARN }}",
        "pulumi-token-type": "urn:pulumi:token-type:access_token:team",
        "pulumi-scope": "team:${{ vars.PULUMI_PREVIEW_TEAM }}",
      });
    }
    expect(pulumiStep.with).toMatchObject({
      refresh: "${{ inputs.refresh }}",
      "expect-no-changes": "${{ inputs.expect-no-changes }}",
    });
  });

  it("covers every platform project and no promoted program, which the cluster checks with each environment's own identity (test/drift.test.ts)", () => {
    expect(wf.jobs.platform.strategy.matrix.include.map((m: { project: string }) => m.project)).toEqual([
      ...projectOrder,
    ]);
    expect(Object.keys(wf.jobs)).toEqual(["platform"]);
    expect(JSON.stringify(wf)).not.toMatch(/stage\//);
  });
});
