// The review workflows, offline: the plan diff of a pull request (computed without secrets, posted by a
// workflow that runs none of the pull request's code, one comment edited on re-runs), the policy pack in
// every preview and deploy, and the drift report (a refresh preview with the read-only identity of every
// platform stack and every environment at the commit it last ran). Scripts run as they are written.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline } from "../kargo/pipeline";
import { stackManifestFile } from "../lib/pipeline/names";
import { validatePipeline } from "../lib/pipeline/validate";
import { projectOrder, repoRoot } from "../lib/cli/plan/projects";

const run = promisify(execFile);
const github = path.join(repoRoot, ".github");
const text = (name: string) => fs.readFileSync(path.join(github, "workflows", name), "utf8");
const workflow = (name: string) => YAML.parse(text(name));
type Step = {
  uses?: string;
  run?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
  id?: string;
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
    // The pack is a Node.js program: its packages are installed for the promoted (YAML) program too.
    const install = action.runs.steps.find((s: Step) => s.run === "npm ci");
    expect(install.if).toContain("inputs.policy-pack != ''");
  });
});

describe("the drift workflow", () => {
  const wf = workflow("drift.yml");
  const jobs = Object.entries<{ permissions: object; environment: string; steps: Step[]; strategy: any }>(
    wf.jobs,
  );
  const updateStages = pipeline.stages.filter((s) => s.kind === "update").map((s) => s.name);

  it("runs on a schedule and by hand", () => {
    expect(wf.on.schedule[0].cron).toMatch(/^\S+ \S+ \* \* \*$/);
    expect(wf.on).toHaveProperty("workflow_dispatch");
  });

  it("only previews, refreshed, failing on any difference, with the read-only identity", () => {
    // The job listing the stages gets no identity at all.
    expect(wf.jobs.stages.permissions).toEqual({ contents: "read" });
    expect(wf.jobs.stages.environment).toBeUndefined();
    for (const [name, job] of jobs.filter(([name]) => name !== "stages")) {
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

  it("covers every platform project and every environment's update stage of kargo/pipeline.ts", () => {
    expect(wf.jobs.platform.strategy.matrix.include.map((m: { project: string }) => m.project)).toEqual([
      ...projectOrder,
    ]);
    expect(wf.jobs.environments.strategy.matrix.stage).toBe("${{ fromJSON(needs.stages.outputs.stages) }}");
    expect(wf.jobs.environments.needs).toBe("stages");
  });

  it("reads the update stages from kargo/pipeline.ts, so an environment a fork adds is covered", async () => {
    const step = wf.jobs.stages.steps.find((s: Step) => s.id === "update-stages") as Step;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "drift-stages-"));
    const out = path.join(dir, "out");
    fs.writeFileSync(out, "");
    await run("bash", ["-e", "-c", step.run!], {
      cwd: repoRoot,
      env: { ...process.env, GITHUB_OUTPUT: out },
    });
    const [key, value] = fs.readFileSync(out, "utf8").trim().split(/=(.*)/s);
    expect(key).toBe("stages");
    expect(JSON.parse(value!)).toEqual(updateStages);
  });

  it("previews each environment's stack at the commit its stage branch last promoted", async () => {
    const step = wf.jobs.environments.steps.find((s: Step) => s.id === "promoted") as Step;
    const branchCheckout = wf.jobs.environments.steps.find((s: Step) => s.with?.path === "stage") as Step;
    expect(branchCheckout.with!.ref).toBe("stage/${{ matrix.stage }}");
    const outputs = async (manifest: string) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "drift-"));
      fs.writeFileSync(path.join(dir, "manifest.yaml"), manifest);
      const out = path.join(dir, "out");
      fs.writeFileSync(out, "");
      const env = { ...process.env, MANIFEST: "manifest.yaml", STAGE: "x", GITHUB_OUTPUT: out };
      await run("bash", ["-e", "-c", step.run!], {
        cwd: dir,
        env: { ...env, GITHUB_STEP_SUMMARY: path.join(dir, "summary") },
      });
      return Object.fromEntries(
        fs
          .readFileSync(out, "utf8")
          .trim()
          .split("\n")
          .map((l) => l.split("=")),
      );
    };
    for (const stage of updateStages) {
      // The template as `npm run stacks` writes it, and as a promotion leaves it on the stage branch.
      const template = fs.readFileSync(
        path.join(repoRoot, validatePipeline(pipeline).stacks.dir, stackManifestFile(stage)),
        "utf8",
      );
      const stack = YAML.parse(template).spec.stack;
      expect(await outputs(template), stage).toEqual({ commit: "", stack });
      const promoted = YAML.parseDocument(template);
      const commit = "0123456789abcdef0123456789abcdef01234567";
      promoted.setIn(["spec", "commit"], commit);
      expect(await outputs(promoted.toString()), stage).toEqual({ commit, stack });
    }
    const program = wf.jobs.environments.steps.find(
      (s: Step) => s.uses === "./.github/actions/pulumi",
    ) as Step;
    expect(program.with).toMatchObject({
      "work-dir": "program",
      "stack-name": "${{ steps.promoted.outputs.stack }}",
    });
  });
});
