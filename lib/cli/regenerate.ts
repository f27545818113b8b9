// `npm run regenerate`: `npm run stacks` and `npm run docs` in one process (one start of the SDKs instead of
// two), for personalize. `npm run regenerate -- --check`, for upgrade pull requests (.github/workflows/
// regenerate.yml): runs everything a version bump must regenerate, one command after the other, and fails
// naming each command that changed a file, so the committed files are never stale for the pins.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { pipeline as definition } from "../../kargo/pipeline";
import { PipelineError } from "../pipeline/schema";
import { validatePipeline } from "../pipeline/validate";
import { writeStacks } from "../pipeline/stacks";
import { CODEOWNERS, writeCodeowners } from "../codeowners";
import { ProgramError } from "./plan/harness";
import { repoRoot } from "./plan/projects";
import { writeDocs } from "./docs";

/**
 * What a version bump regenerates, in the order a person runs it: the typed CRDs and validation data from the
 * upstream files at the pinned tags, the stack templates, the documentation's tables, the reach table and
 * the examples of what stops, made by Pulumi's engine (Go).
 */
export const regenerators = [
  "npm run crds -- --fetch",
  "npm run stacks",
  "npm run docs",
  "npm run docs:reach",
  "npm run docs:engine",
] as const;

/** Each file that differs from HEAD (modified, deleted or new), with a hash of what it holds now. */
function changedFiles(cwd: string): Map<string, string> {
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd, encoding: "utf8", maxBuffer: 64 << 20 })
      .split("\0")
      .filter(Boolean);
  const files = [
    ...git("diff", "--name-only", "-z", "HEAD"),
    ...git("ls-files", "-z", "-o", "--exclude-standard"),
  ];
  return new Map(
    files.map((file) => {
      const at = path.join(cwd, file);
      const content = fs.existsSync(at) ? fs.readFileSync(at) : Buffer.from("\0deleted");
      return [file, createHash("sha256").update(content).digest("hex")];
    }),
  );
}

/** A command that changed files when it ran, or failed. */
export interface Stale {
  command: string;
  files: string[];
  failed?: string;
}

/** Runs each command in `cwd` (through the shell, as CI does) and returns those that changed a file or failed. */
export function staleCommands(commands: readonly string[], cwd: string): Stale[] {
  const stale: Stale[] = [];
  let before = changedFiles(cwd);
  for (const command of commands) {
    console.log(`$ ${command}`);
    const run = spawnSync(command, { cwd, shell: true, stdio: ["ignore", "inherit", "inherit"] });
    const after = changedFiles(cwd);
    const files = [...new Set([...before.keys(), ...after.keys()])].filter(
      (f) => before.get(f) !== after.get(f),
    );
    const failed = run.status === 0 ? undefined : `exit status ${run.status ?? run.signal}`;
    if (files.length || failed) stale.push({ command, files: files.sort(), ...(failed ? { failed } : {}) });
    before = after;
  }
  return stale;
}

/** One line per stale command: what changed, and the command to run and commit. */
export function staleReport(stale: Stale[]): string[] {
  return stale.map((s) =>
    s.failed
      ? `\`${s.command}\` failed (${s.failed}): run it on this branch and fix what it reports`
      : `\`${s.command}\` changed ${s.files.join(", ")}: run \`${s.command}\` on this branch and commit the result`,
  );
}

function check(): void {
  const stale = staleCommands(regenerators, repoRoot);
  const error = process.env.GITHUB_ACTIONS ? "::error::" : "";
  for (const line of staleReport(stale)) console.error(`${error}${line}`);
  if (stale.length) process.exitCode = 1;
  else console.log(`regenerate: the committed files are what ${regenerators.join(", ")} make of these pins`);
}

async function main(): Promise<void> {
  const pipeline = validatePipeline(definition);
  const { written, removed } = writeStacks(pipeline);
  console.log(
    `stacks: wrote ${written.length} templates${removed.length ? `, removed ${removed.join(", ")}` : ""}`,
  );
  if (writeCodeowners(repoRoot, pipeline.stacks.dir)) console.log(`stacks: redrew ${CODEOWNERS}`);
  console.log((await writeDocs()).join("\n"));
}

if (require.main === module) {
  if (process.argv.includes("--check")) check();
  else
    main().catch((err: unknown) => {
      if (!(err instanceof PipelineError) && !(err instanceof ProgramError)) throw err;
      const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
      console.error(`${where}${err.message}`);
      process.exitCode = 1;
    });
}
