// @ts-check
// `npx stryker run stryker.verification.config.mjs`: mutation testing of the verification Job's decisions,
// the risk classifier and the comparison of an update with its preview (kargo/verification), against the
// in-process tests of those modules only (vitest.verification-mutation.config.mts). Not in `npm run
// test:mutation`'s scope: those modules are JavaScript the Job runs as is, and their tests are these.
import base from "./stryker.config.mjs";

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  ...base,
  vitest: { configFile: "vitest.verification-mutation.config.mts", related: false },
  mutate: [
    "kargo/verification/classify.mjs",
    "kargo/verification/rules.mjs",
    "kargo/verification/cost-rules.mjs",
    "kargo/verification/values.mjs",
    "kargo/verification/compare.mjs",
  ],
  incrementalFile: "reports/stryker-verification-incremental.json",
  htmlReporter: { fileName: "reports/mutation-verification/mutation.html" },
  jsonReporter: { fileName: "reports/mutation-verification/mutation.json" },
  tempDirName: ".stryker-tmp",
};
