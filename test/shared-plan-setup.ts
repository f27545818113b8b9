// vitest's globalSetup (vitest.config.mts): the folder the suite's one run of `npm run plan -- --out` goes to.
// The first test that asks for the plan makes it there and every other test file, in any worker, reads that
// one (test/shared-plan.ts); a run that asks for none plans nothing. SHARED_PLAN_DIR names the folder to use
// and keep; by default it is a temporary one, removed after the run.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";

export default function setup(project: TestProject): () => void {
  const keep = process.env.SHARED_PLAN_DIR;
  const dir = keep ? path.resolve(keep) : fs.mkdtempSync(path.join(os.tmpdir(), "shared-plan-"));
  project.provide("sharedPlanDir", dir);
  return () => {
    if (!keep) fs.rmSync(dir, { recursive: true, force: true });
  };
}
