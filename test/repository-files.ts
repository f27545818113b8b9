// Every text file of the repository as a fresh clone would have it, with the work not yet committed: what git
// tracks, and what it would track (untracked files not ignored), binary files left out.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { repoRoot } from "../lib/cli/plan/projects";

export function repositoryTextFiles(): { file: string; text: string }[] {
  return execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoRoot,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  })
    .split("\0")
    .filter((file) => file && fs.statSync(path.join(repoRoot, file), { throwIfNoEntry: false })?.isFile())
    .map((file) => ({ file, raw: fs.readFileSync(path.join(repoRoot, file)) }))
    .filter(({ raw }) => !raw.includes(0))
    .map(({ file, raw }) => ({ file, text: raw.toString("utf8") }));
}
