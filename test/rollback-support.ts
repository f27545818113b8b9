// A throwaway git repository whose commits hold a pipeline's stacks/ templates, today's as `npm run stacks`
// renders them or changed, for the rollback's template check (test/rollback-template.test.ts,
// test/rollback-run.test.ts).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stackManifestFile } from "../lib/pipeline/names";
import type { Pipeline } from "../lib/pipeline/schema";
import { renderStacks } from "../lib/pipeline/stacks";
import { gitEnv } from "./git-support";

export function templateRepo(): {
  root: string;
  commit: (files: Map<string, string>, message: string) => string;
} {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "rollback-templates-"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", root, ...args], {
      encoding: "utf8",
      env: gitEnv(),
    }).trim();
  git("init", "-q", "-b", "main");
  return {
    root,
    commit(files, message) {
      for (const [file, text] of files) {
        fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
        fs.writeFileSync(path.join(root, file), text);
      }
      git("add", "-A");
      git("commit", "-q", "--allow-empty", "-m", message);
      return git("rev-parse", "HEAD");
    },
  };
}

/** Today's templates of a pipeline, at their paths in the repository. */
export const todaysTemplates = (p: Pipeline): Map<string, string> =>
  new Map([...renderStacks(p)].map(([file, text]) => [path.posix.join(p.stacks.dir, file), text]));

/** Today's templates with one stage's changed by `edit` (a text replacement). */
export function changedTemplate(
  p: Pipeline,
  stage: string,
  edit: (text: string) => string,
): Map<string, string> {
  const files = todaysTemplates(p);
  const file = path.posix.join(p.stacks.dir, stackManifestFile(stage));
  files.set(file, edit(files.get(file)!));
  return files;
}
