// A copy of this repository as a fresh clone of the working tree has it (tracked and new files, none ignored),
// sharing node_modules: where a test makes a fork's edits and runs the commands as the fork would.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { repoRoot } from "../lib/cli/plan/projects";

const run = promisify(execFile);

export async function copyOfRepository(copy: string): Promise<void> {
  const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoRoot,
  });
  const files = stdout
    .split("\0")
    .filter((f) => f && fs.lstatSync(path.join(repoRoot, f), { throwIfNoEntry: false })?.isFile());
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    fs.copyFileSync(path.join(repoRoot, file), path.join(copy, file));
  }
  fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(copy, "node_modules"));
}

/** The source of the copy's kargo/pipeline.ts: ours, with `definition` (an expression over `ours`) exported. */
export function pipelineSourceOver(definition: string): string {
  const ours = fs.readFileSync(path.join(repoRoot, "kargo/pipeline.ts"), "utf8");
  const declaration = "export const pipeline: PipelineInput = {";
  if (!ours.includes(declaration)) throw new Error(`kargo/pipeline.ts no longer declares "${declaration}"`);
  return `${ours.replace(declaration, "const ours: PipelineInput = {")}\nexport const pipeline: PipelineInput = ${definition};\n`;
}
