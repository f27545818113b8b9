// @ts-check
// `npm run test:mutation`: Stryker changes the code that validates and derives, one small change (a mutant)
// at a time, and runs the tests that reach it; a mutant no test notices is a rule that could break unseen.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.mts", related: false },
  // related: false because the programs' config modules are loaded by require (lib/cli/plan/harness.ts), which
  // vitest's module graph does not see; per-test coverage still runs only the tests that reach each mutant.
  coverageAnalysis: "perTest",
  mutate: [
    "lib/pipeline/**/*.ts",
    // The README's Mermaid drawing; `npm run docs` and its test compare it whole.
    "!lib/pipeline/diagram.ts",
    "lib/config.ts",
    "cluster/config.ts",
    "cluster-setup/config.ts",
    "kargo/config.ts",
  ],
  // Message wording is checked where it matters, by the tests that read messages.
  mutator: { excludedMutations: ["StringLiteral"] },
  incremental: true,
  incrementalFile: "reports/stryker-incremental.json",
  concurrency: 2,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  tempDirName: ".stryker-tmp",
  // The sandbox sits inside the repository, so packages resolve from its parent's node_modules; a symlink in
  // the sandbox would make "node_modules/x" resolve outside the repository and fail the stacks.dir tests.
  symlinkNodeModules: false,
  cleanTempDir: "always",
};
