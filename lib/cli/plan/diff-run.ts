// `npm run plan -- --diff <ref>`: plans the ref in a temporary git worktree (with that commit's own plan
// command, so the diff compares what each commit's code plans) while this process plans the working tree,
// then diffs, summarizes, runs the policy pack over the working tree's plan, and prints the report. The
// promoted programs are each commit's own too: the ref's as its `npm run programs` lists them.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import YAML from "yaml";
import { pipeline as definition } from "../../../kargo/pipeline";
import { checkResources } from "../../../policy/offline";
import { riskPolicy, type Pipeline } from "../../pipeline/schema";
import { validatePipeline } from "../../pipeline/validate";
import { programsReport } from "../programs";
import { diffPlans, type ProjectPlan } from "./diff";
import { renderDiff, type DiffReport, type Format } from "./diff-format";
import { oversightChanges } from "./diff-oversight";
import { programPlans, type PromotedProgram } from "./diff-program";
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

/** Runs a TypeScript command of a tree: Node with tsx's loader, as the plan itself runs (no tsx launcher). */
const tsx = (script: string, args: string[], cwd: string, signal: AbortSignal) =>
  run(process.execPath, ["--import", "tsx", script, ...args], { cwd, maxBuffer: 256 * 1024 * 1024, signal });

/** What each side of the diff plans: its projects' and programs' plans, and the programs it cannot plan. */
interface TreePlan {
  plans: ProjectPlan[];
  unplanned: PromotedProgram[];
  /** Its pipeline definition, validated as this tree reads one (old field names in their new meaning). */
  pipeline?: Pipeline;
  /** Why its pipeline could not be read. */
  unread?: string;
}

/**
 * The ref's pipeline definition (its kargo/pipeline.ts, with the programs' access it imports), validated by
 * this tree's rules against the ref's own files: what the path was before the change.
 */
async function refPipeline(tree: string, ref: string): Promise<Pick<TreePlan, "pipeline" | "unread">> {
  const file = path.join(tree, "kargo", "pipeline.ts");
  if (!fs.existsSync(file)) return { unread: `${ref} has no kargo/pipeline.ts` };
  try {
    const { pipeline } = (await import(pathToFileURL(file).href)) as { pipeline?: unknown };
    return { pipeline: validatePipeline(pipeline, { repoRoot: tree }) };
  } catch (err) {
    return { unread: `the pipeline of ${ref} does not read as one today: ${(err as Error).message}` };
  }
}

/**
 * The ref's promoted programs: as its own `npm run programs` lists them, or in a commit from before there
 * were several, the one program whose Pulumi.yaml is at the root (none without it).
 */
async function refPrograms(tree: string, ref: string, signal: AbortSignal): Promise<PromotedProgram[]> {
  const cli = path.join(tree, "lib", "cli", "programs.ts");
  if (fs.existsSync(cli)) {
    try {
      const { stdout } = await tsx(cli, [], tree, signal);
      return (JSON.parse(stdout) as { programs: PromotedProgram[] }).programs;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new BasePlanError(`programs of ${ref} failed: ${(e.stderr || e.message).trim()}`);
    }
  }
  const root = path.join(tree, "Pulumi.yaml");
  if (!fs.existsSync(root)) return [];
  const project = (YAML.parse(fs.readFileSync(root, "utf8")) ?? {}) as { name?: unknown };
  return [{ name: "program", dir: ".", project: String(project.name ?? "program"), runtime: "yaml" }];
}

/** Plans `sha` with its own `npm run plan -- --out` in a temporary worktree; returns its plans. */
async function planRef(
  sha: string,
  request: DiffRequest,
  scratch: string,
  signal: AbortSignal,
): Promise<TreePlan> {
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
    const args = ["--out", out];
    if (request.project) args.push("--project", request.project);
    if (request.configFile)
      args.push("--config", path.join(tree, path.relative(repoRoot, request.configFile)));
    const planned = tsx(cli, args, tree, signal).catch((err: { stderr?: string; message: string }) => {
      throw new BasePlanError(`plan of ${request.ref} failed: ${(err.stderr || err.message).trim()}`);
    });
    // Both run before the worktree goes, whichever fails; the plan's failure is the one to report.
    const [plan, listed, read] = await Promise.allSettled([
      planned,
      refPrograms(tree, request.ref, signal),
      refPipeline(tree, request.ref),
    ]);
    if (plan.status === "rejected") throw plan.reason;
    if (listed.status === "rejected") throw listed.reason;
    const { plans, unplanned } = programPlans(tree, listed.value);
    return {
      plans: [...readPlans(out), ...plans],
      unplanned,
      ...(read.status === "fulfilled" ? read.value : {}),
    };
  } finally {
    await git(["worktree", "remove", "--force", tree]).catch(() => undefined);
  }
}

/** The working tree's plan, written and read back through resources.json like the ref's. */
async function planWorkingTree(request: DiffRequest, scratch: string): Promise<TreePlan> {
  const out = path.join(scratch, "after");
  const programs = programsReport(validatePipeline(definition)).programs;
  const chain = await planChain({ project: request.project, configFile: request.configFile });
  for (const plan of chain) writePlan(out, plan);
  const { plans, unplanned } = programPlans(repoRoot, programs);
  return { plans: [...readPlans(out), ...plans], unplanned };
}

/** What stops each environment's previews of the promoted programs, from the working tree's pipeline. */
export function stopsOf(p: Pipeline): NonNullable<DiffReport["stops"]> {
  return {
    projects: p.programs.map((x) => x.project),
    environments: Object.entries(p.environments).map(([environment, env]) => ({
      environment,
      ...riskPolicy(env),
    })),
  };
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
    const [working, ref] = settled.map((s) => (s as PromiseFulfilledResult<TreePlan>).value) as [
      TreePlan,
      TreePlan,
    ];
    const [after, before] = [working.plans, ref.plans];
    const diff = diffPlans(before, after);
    const violations = await checkResources(after.flatMap((p) => p.resources));
    const pipeline = validatePipeline(definition);
    const oversight = await oversightChanges(
      { before, after },
      { before: ref.pipeline, after: pipeline, unread: ref.unread },
    );
    return renderDiff(
      {
        base: { ref: request.ref, commit: sha },
        oversight,
        diff,
        summary: reviewSummary(diff, before, after),
        violations,
        before,
        after,
        unplanned: working.unplanned,
        stops: stopsOf(pipeline),
      },
      request.format,
    );
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
