import { defineConfig } from "vitest/config";
import base from "./vitest.config.mts";

// The tests `npm run test:mutation` (stryker.config.mjs) runs against each mutant: those that exercise the
// pipeline library and the config modules in this process, planning the programs in memory. Tests that spawn
// a CLI, tsx or Go (stack-config, plan-cli, plan-diff, policy, fork, docs-and-ci, review and deploy
// workflows, layout), or read only rendering and the CRD tooling, would slow every mutant and cannot see it:
// a mutant lives in this process only. pipeline-names runs `git check-ref-format`, milliseconds each, and
// is the test that holds source.branch to what git accepts.
// Spread, not mergeConfig, which would append this list to the base one.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      "test/pipeline-*.test.ts",
      "test/verification.test.ts",
      "test/approvers.test.ts",
      "test/risk-stops.test.ts",
      "test/risk-deciders.test.ts",
      "test/promoted-program.test.ts",
      "test/kargo.test.ts",
      "test/kargo-*.test.ts",
      "test/webhook.test.ts",
      "test/hostile-config.test.ts",
      "test/cluster-config.test.ts",
      "test/cluster-setup-config.test.ts",
      "test/cluster-setup-rbac.test.ts",
      "test/cluster-setup-fork-identity.test.ts",
      "test/config-fields.test.ts",
      "test/load-config.test.ts",
      "test/config-declarations.test.ts",
      "test/notifications.test.ts",
    ],
    // A test file that fails to load counts as a failed test (test/mutation-load-failures.ts says why).
    reporters: ["default", "./test/mutation-load-failures.ts"],
  },
});
