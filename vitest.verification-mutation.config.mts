import { defineConfig } from "vitest/config";
import base from "./vitest.config.mts";

// The tests stryker.verification.config.mjs runs against each mutant of kargo/verification's classifier and
// comparison: the in-process tests of those modules (the Go harness runs them too, but in node processes a
// mutant never reaches).
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      "test/verification-classify.test.ts",
      "test/verification-exposure-cost.test.ts",
      "test/verification-compare.test.ts",
      "test/verification-events.test.ts",
      "test/verification-precision.test.ts",
    ],
    reporters: ["default", "./test/mutation-load-failures.ts"],
  },
});
