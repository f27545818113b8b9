// `npm run rollback`'s arguments and what it needs first: bad arguments refused with the reason and the usage,
// exit 2 and no stack trace; a missing `kargo` named with what to install, only `kargo` and `git` needed, and `kargo` without a
// session with what to run, before anything is promoted. Against the stand-ins of test/rollback-standins.ts
// (Kargo's API server cannot run here), with only git and them on PATH.
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { repoRoot } from "../lib/cli/plan/projects";
import { validatePipeline } from "../lib/pipeline/validate";
import { rollback } from "../lib/rollback";
import { parseRollbackArgs, UsageError } from "../lib/rollback-args";
import { standins } from "./rollback-standins";

const example = validatePipeline(definition);
const { bin, repo, promoted, state, setUp, request, reset, onlyOnPath, restorePath } = standins(example);
const environment = Object.keys(example.environments)[0]!;

describe("npm run rollback's command line", () => {
  const cli = (args: string[], pathDirs: string[]) =>
    spawnSync(
      process.execPath,
      [path.join(repoRoot, "node_modules/tsx/dist/cli.mjs"), "lib/cli/rollback.ts", ...args],
      {
        cwd: repoRoot,
        encoding: "utf8",
        env: { ...process.env, PATH: pathDirs.join(path.delimiter) },
      },
    );
  const gitOnly = [onlyOnPath()];

  it.each([
    [[environment], "give exactly one of --to, --reconcile, --resume"],
    [[environment, "--to", "x"], '--message "<why>" is required'],
    [[environment, "--to", "", "--message", "m"], "--to: name the Freight"],
    [[environment, "--resume", "--program", example.programs[0]!.name], "--resume takes no --program"],
    [[environment, "--to", "x", "--continue", "--message", "m"], "--continue takes no --message"],
    [[environment, "--reconcile", "--to", "x", "--message", "m"], "give exactly one of"],
    [[environment, "--to", "x", "--message", "m", "--sideways"], "Unknown option '--sideways'"],
    [[environment, "qa", "--resume"], "name one environment"],
  ])("refuses the arguments %j, saying what is wrong", (args, said) => {
    expect(() => parseRollbackArgs(args)).toThrow(UsageError);
    expect(() => parseRollbackArgs(args)).toThrow(said);
  });

  it("exits 2 for a bad argument with the reason and its usage, no stack trace", () => {
    const r = cli(["nowhere", "--to", "x", "--message", "m"], gitOnly);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('environment "nowhere" is not in kargo/pipeline.ts; allowed:');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("needs only kargo and git on PATH: no kubectl, nothing of the cluster's API server", () => {
    setUp(example, environment);
    process.env.PATH = onlyOnPath("kargo");
    try {
      expect(rollback(example, request(environment), { out: () => undefined })).toBe(0);
    } finally {
      restorePath();
    }
    expect(promoted().length).toBeGreaterThan(0);
  });

  it("says what to install when kargo is missing, and what to run when it has no session", () => {
    const missing = cli([environment, "--to", "x", "--message", "m"], gitOnly);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("kargo is not on PATH: install the Kargo CLI");
    setUp(example, environment);
    reset({ ...state(), loggedOut: true });
    const loggedOut = cli([environment, "--to", "x", "--message", "m"], [bin, ...gitOnly]);
    expect(loggedOut.status).toBe(2);
    expect(loggedOut.stderr).toContain("run kargo login");
    reset({ ...state(), loggedOut: false, anonymous: true });
    const nobody = cli(
      [environment, "--to", "older", "--message", "m", "--repository", repo.root],
      [bin, ...gitOnly],
    );
    expect(nobody.status).toBe(2);
    expect(nobody.stderr).toContain("kargo's session names nobody");
    for (const r of [missing, loggedOut, nobody]) expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(promoted()).toEqual([]);
  });
});
