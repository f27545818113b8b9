// A vitest reporter for `npm run test:mutation` only (vitest.mutation.config.mts): a test file that fails
// to load (a mutant made a module throw on import, such as a zod schema that refuses to build) collects no
// test, and Stryker's vitest runner builds a mutant's result from collected tests alone, so it scored such a
// mutant Survived although no program could even start with it. Upstream: stryker-mutator/stryker-js#6150
// (open; @stryker-mutator/vitest-runner 9.6.1 dist/src/vitest-test-runner.js reads state.getFiles() and
// collectTestsFromSuite). Each such file gets one failed test carrying its load error.
import type { RunnerTestCase, RunnerTestFile } from "vitest";
import type { Reporter, Vitest } from "vitest/node";

export default class LoadFailuresAsFailedTests implements Reporter {
  private vitest?: Vitest;

  onInit(vitest: Vitest) {
    this.vitest = vitest;
  }

  onTestRunEnd() {
    for (const file of this.vitest?.state.getFiles() ?? []) {
      if (file.result?.state !== "fail" || file.tasks.length > 0) continue;
      file.tasks.push(loadFailure(file));
    }
  }
}

function loadFailure(file: RunnerTestFile): RunnerTestCase {
  return {
    type: "test",
    id: `${file.id}_load`,
    name: "loads",
    fullName: `${file.name} loads`,
    fullTestName: "loads",
    mode: "run",
    file,
    suite: file,
    context: undefined as unknown as RunnerTestCase["context"], // nothing runs it; the run has ended
    timeout: 0,
    annotations: [],
    artifacts: [],
    meta: {},
    result: { state: "fail", errors: file.result?.errors ?? [] },
  } as RunnerTestCase;
}
