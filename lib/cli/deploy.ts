// `npx tsx lib/cli/deploy.ts` in .github/workflows/deploy.yml: which projects a run on main must deploy.
//
// A run compares HEAD with the commit of the last deploy run that succeeded, not with the push's
// `github.event.before`: GitHub cancels a pending run when a newer one joins the concurrency group
// (docs.github.com/actions/writing-workflows/choosing-what-your-workflow-does/control-the-concurrency-of-workflows-and-jobs),
// and a run can fail, so the commit before a push is not always deployed. A run succeeds only when every
// job it needed succeeded, so everything up to its commit reached its project; changes since then are the
// ones still to deploy, however many runs were cancelled or failed in between.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";

/** The platform's projects, in deploy order. */
export const deployProjects = ["cluster", "cluster-setup", "kargo"] as const;
export type DeployProject = (typeof deployProjects)[number];

/** Which files each project depends on, from `.github/project-paths.yml` (the file the preview filter reads). */
export function projectPaths(file: string): Record<DeployProject, string[]> {
  const doc = YAML.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  const paths = {} as Record<DeployProject, string[]>;
  for (const project of deployProjects) {
    const list = Object.hasOwn(doc, project) ? doc[project] : undefined;
    if (!Array.isArray(list))
      throw new Error(`${file}: ${project} must list the paths the project depends on`);
    paths[project] = (list as unknown[]).flat().map(String);
  }
  return paths;
}

/** The git operations the rule needs, run in a checkout with full history. */
export interface Git {
  /** Whether `commit` is `head` or one of its ancestors. */
  isAncestor(commit: string, head: string): boolean;
  /** Files changed between two commits that match any of the globs (paths-filter's syntax: `**`, `*`). */
  changed(base: string, head: string, globs: string[]): string[];
}

export const gitIn = (dir: string): Git => ({
  isAncestor(commit, head) {
    try {
      execFileSync("git", ["merge-base", "--is-ancestor", commit, head], { cwd: dir, stdio: "ignore" });
      return true;
    } catch {
      return false; // not an ancestor, or a commit this clone does not have
    }
  },
  changed(base, head, globs) {
    // git's own glob pathspecs: `*` stays within a folder, `**/` and `/**` span folders, as in the filter.
    const out = execFileSync(
      "git",
      ["diff", "--name-only", base, head, "--", ...globs.map((g) => `:(glob)${g}`)],
      { cwd: dir, encoding: "utf8" },
    );
    return out.split("\n").filter(Boolean);
  },
});

export interface DeployPlan {
  /** The commit everything was last deployed at; undefined when none is known (everything deploys). */
  base: string | undefined;
  deploy: Record<DeployProject, boolean>;
  /** One line per project: why it deploys or not. */
  reasons: string[];
}

export interface DeployInput {
  /** `push` or `workflow_dispatch` (which deploys everything). */
  event: string;
  head: string;
  /** Commits of this workflow's successful runs on the branch, the most recently started first. */
  successfulRuns: string[];
  paths: Record<DeployProject, string[]>;
  git: Git;
}

/**
 * What to deploy: every project whose files changed since the newest successful run whose commit is in
 * HEAD's history. With none (the first run, or history rewritten under it), and on a manual run, all of
 * them. A project downstream of one that deploys is deployed by the workflow as well (its jobs' `if`).
 */
export function deployPlan(input: DeployInput): DeployPlan {
  const all = (reason: string): DeployPlan => ({
    base: undefined,
    deploy: { cluster: true, "cluster-setup": true, kargo: true },
    reasons: deployProjects.map((p) => `${p}: deploys (${reason})`),
  });
  if (input.event === "workflow_dispatch") return all("a manual run deploys every project");
  const base = input.successfulRuns.find((sha) => input.git.isAncestor(sha, input.head));
  if (!base) return all("no successful deploy run of a commit in HEAD's history");
  const deploy = {} as Record<DeployProject, boolean>;
  const reasons: string[] = [];
  for (const project of deployProjects) {
    const files = input.git.changed(base, input.head, input.paths[project]);
    deploy[project] = files.length > 0;
    reasons.push(
      files.length > 0
        ? `${project}: deploys (${files.length} file(s) changed since ${base.slice(0, 12)}, e.g. ${files[0]})`
        : `${project}: nothing changed since ${base.slice(0, 12)}`,
    );
  }
  return { base, deploy, reasons };
}

/**
 * Commits of the workflow's successful runs on `branch`, through GitHub's REST API, the most recently started
 * first: a re-run of an old run deploys its old commit again, so it is the last deployed state from then on,
 * and diffing from its commit deploys everything since once more.
 */
async function successfulRuns(repository: string, workflow: string, branch: string, token: string) {
  const url = `https://api.github.com/repos/${repository}/actions/workflows/${workflow}/runs?branch=${encodeURIComponent(branch)}&status=success&per_page=100`;
  const response = await fetch(url, {
    headers: { Authorization: `Bearer ${token}`, Accept: "application/vnd.github+json" },
  });
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { workflow_runs: { head_sha: string; run_started_at: string }[] };
  return body.workflow_runs
    .sort((a, b) => b.run_started_at.localeCompare(a.run_started_at))
    .map((run) => run.head_sha);
}

async function main() {
  const env = (name: string) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is not set`);
    return value;
  };
  const root = path.resolve(__dirname, "..", "..");
  const plan = deployPlan({
    event: env("GITHUB_EVENT_NAME"),
    head: env("GITHUB_SHA"),
    successfulRuns: await successfulRuns(
      env("GITHUB_REPOSITORY"),
      "deploy.yml",
      env("GITHUB_REF_NAME"),
      env("GITHUB_TOKEN"),
    ),
    paths: projectPaths(path.join(root, ".github", "project-paths.yml")),
    git: gitIn(root),
  });
  for (const reason of plan.reasons) console.log(reason);
  const lines = [`base=${plan.base ?? ""}`, ...deployProjects.map((p) => `${p}=${plan.deploy[p]}`)];
  fs.appendFileSync(env("GITHUB_OUTPUT"), `${lines.join("\n")}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
