// `npm run plan -- --diff <ref>`: plans the ref in a temporary git worktree (with that commit's own plan
// command, so the diff compares what each commit's code plans) while this process plans the working tree,
// then diffs, summarizes, runs the policy pack over the working tree's plan, and prints the report.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { checkResources } from "../../../policy/offline";
import { diffPlans, type ProjectPlan } from "./diff";
import { renderDiff, type Format } from "./diff-format";
import { yamlProgramPlan } from "./diff-program";
import { reviewSummary } from "./diff-summary";
import { writePlan } from "./output";
import { planChain, projectOrder, repoRoot, type ProjectName } from "./projects";

const run = promisify(execFile);

export interface DiffRequest {
  ref: string;
  format: Format;
  project?: ProjectName;
  /** Absolute path of a stack config file in the working tree; the ref uses its own copy of that path. */
  configFile?: string;
}

/** A ref that cannot be planned: a bad option (exit status 2). */
export class BadRefError extends Error {}

/** The ref's plan failed: the ref's own program refused its config (exit status 1, like `plan`). */
export class BasePlanError extends Error {}

async function git(args: string[], cwd = repoRoot): Promise<string> {
  return (await run("git", args, { cwd, maxBuffer: 64 * 1024 * 1024 })).stdout.trim();
}

function readPlans(dir: string): ProjectPlan[] {
  return projectOrder
    .map((p) => path.join(dir, p, "resources.json"))
    .filter((file) => fs.existsSync(file))
    .map((file) => JSON.parse(fs.readFileSync(file, "utf8")) as ProjectPlan);
}

/** The promoted program, when the tree has one. */
function programPlan(tree: string): ProjectPlan[] {
  const file = path.join(tree, "Pulumi.yaml");
  return fs.existsSync(file) ? [yamlProgramPlan(fs.readFileSync(file, "utf8"))] : [];
}

/** Plans `sha` with its own `npm run plan -- --out` in a temporary worktree; returns its plans. */
async function planRef(
  sha: string,
  request: DiffRequest,
  scratch: string,
  signal: AbortSignal,
): Promise<ProjectPlan[]> {
  const tree = path.join(scratch, "tree");
  const out = path.join(scratch, "before");
  await git(["worktree", "add", "--detach", "--quiet", tree, sha]);
  try {
    const modules = path.join(tree, "node_modules");
    if (!fs.existsSync(modules))
      fs.symlinkSync(fs.realpathSync(path.join(repoRoot, "node_modules")), modules);
    // The base plans with its own CLI: lib/cli/plan.ts, or lib/plan/cli.ts in commits from before it moved.
    const cli = [path.join(tree, "lib", "cli", "plan.ts"), path.join(tree, "lib", "plan", "cli.ts")].find(
      (f) => fs.existsSync(f),
    );
    if (!cli) throw new BasePlanError(`plan of ${request.ref} failed: it has no lib/cli/plan.ts`);
    const args = [cli, "--out", out];
    if (request.project) args.push("--project", request.project);
    if (request.configFile)
      args.push("--config", path.join(tree, path.relative(repoRoot, request.configFile)));
    const tsx = path.join(repoRoot, "node_modules", ".bin", "tsx");
    try {
      await run(tsx, args, { cwd: tree, maxBuffer: 256 * 1024 * 1024, signal });
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new BasePlanError(`plan of ${request.ref} failed: ${(e.stderr || e.message).trim()}`);
    }
    return [...readPlans(out), ...programPlan(tree)];
  } finally {
    await git(["worktree", "remove", "--force", tree]).catch(() => undefined);
  }
}

/** The working tree's plan, written and read back through resources.json like the ref's. */
async function planWorkingTree(request: DiffRequest, scratch: string): Promise<ProjectPlan[]> {
  const out = path.join(scratch, "after");
  const plans = await planChain({ project: request.project, configFile: request.configFile });
  for (const plan of plans) writePlan(out, plan);
  return [...readPlans(out), ...programPlan(repoRoot)];
}

/** The diff report of the working tree against `request.ref`, rendered in `request.format`. */
export async function planDiff(request: DiffRequest): Promise<string> {
  const sha = await git(["rev-parse", "--verify", "--quiet", `${request.ref}^{commit}`]).catch(() => "");
  if (!sha) throw new BadRefError(`--diff: "${request.ref}" is not a commit of this repository`);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "plan-diff-"));
  try {
    // The ref's plan runs in a child process while this one plans the working tree: two cores, half the time.
    // A working tree that cannot be planned stops the ref's plan: its error is the one to report.
    const abort = new AbortController();
    const settled = await Promise.allSettled([
      planWorkingTree(request, scratch).catch((err: unknown) => {
        abort.abort();
        throw err;
      }),
      planRef(sha, request, scratch, abort.signal),
    ]);
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    const [after, before] = settled.map((s) => (s as PromiseFulfilledResult<ProjectPlan[]>).value) as [
      ProjectPlan[],
      ProjectPlan[],
    ];
    const diff = diffPlans(before, after);
    const violations = await checkResources(after.flatMap((p) => p.resources));
    return renderDiff(
      {
        base: { ref: request.ref, commit: sha },
        diff,
        summary: reviewSummary(diff, before, after),
        violations,
        before,
        after,
      },
      request.format,
    );
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
