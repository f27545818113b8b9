// The example's whole plan as `npm run plan -- --out` writes and prints it, made once for the whole suite:
// the first test file that asks runs the command, into the folder vitest's globalSetup provides
// (test/shared-plan-setup.ts), and every other one, in any worker, waits for and reads that run. A test that
// reads the whole plan as the command leaves it reads this instead of running the command again; a test
// that needs a plan with other config plans it in-process (test/helpers.ts planProject).
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import YAML from "yaml";
import { inject } from "vitest";
import type { PlanResource, ProjectPlan } from "../lib/cli/plan/diff";
import type { ProjectName } from "../lib/cli/plan/options";

const repoRoot = path.resolve(__dirname, "..");

export interface PlanRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface SharedPlan extends PlanRun {
  /** The `--out` folder: `<project>/resources.json` and `<project>/manifests.yaml`. */
  dir: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    sharedPlanDir: string;
  }
}

/** Runs the plan command with `args` in `cwd`, as `npm run plan -- ARGS` runs it; resolves with how it ended. */
export function runPlan(args: string[], cwd = repoRoot): Promise<PlanRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "lib/cli/plan.ts", ...args],
      { cwd, maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Makes the plan in `dir` unless another process is making it (it holds `dir/lock`), then reads it. A process
 * that took the lock and died leaves it to the next one.
 */
async function makeOrWait(dir: string): Promise<SharedPlan> {
  const done = path.join(dir, "run.json");
  const lock = path.join(dir, "lock");
  for (;;) {
    if (fs.existsSync(done)) return { dir, ...(JSON.parse(fs.readFileSync(done, "utf8")) as PlanRun) };
    try {
      fs.mkdirSync(lock);
    } catch {
      const owner = Number(fs.readFileSync(path.join(lock, "pid"), { encoding: "utf8", flag: "a+" }));
      if (owner && !alive(owner) && !fs.existsSync(done)) fs.rmSync(lock, { recursive: true, force: true });
      await sleep(200);
      continue;
    }
    fs.writeFileSync(path.join(lock, "pid"), String(process.pid));
    const run = await runPlan(["--out", dir]);
    fs.writeFileSync(`${done}.tmp`, JSON.stringify(run));
    fs.renameSync(`${done}.tmp`, done);
  }
}

let made: Promise<SharedPlan> | undefined;

/** The suite's one run of `npm run plan -- --out`: how it ended, what it printed, and where it wrote. */
export function sharedPlan(): Promise<SharedPlan> {
  const dir = inject("sharedPlanDir");
  if (!dir)
    throw new Error(
      "no shared plan folder: vitest.config.mts's globalSetup (test/shared-plan-setup.ts) provides it; run the tests with that config",
    );
  return (made ??= makeOrWait(dir));
}

/** A project's resources.json of the shared plan. */
export async function sharedProjectPlan(project: ProjectName): Promise<ProjectPlan> {
  const { dir } = await sharedPlan();
  return JSON.parse(fs.readFileSync(path.join(dir, project, "resources.json"), "utf8"));
}

/** A project's planned resources, in the shared plan. */
export const sharedResources = async (project: ProjectName): Promise<PlanResource[]> =>
  (await sharedProjectPlan(project)).resources;

/** The Kubernetes objects of a project's shared plan (its manifests.yaml), one per document. */
export async function sharedManifests(project: ProjectName): Promise<Record<string, unknown>[]> {
  const { dir } = await sharedPlan();
  const text = fs.readFileSync(path.join(dir, project, "manifests.yaml"), "utf8");
  return YAML.parseAllDocuments(text).map((d) => d.toJSON() as Record<string, unknown>);
}
