import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // A promoted program's own tests live in its folder (programs/<name>/*.test.ts) and go with it.
    include: ["test/**/*.test.ts", "programs/**/*.test.ts"],
    // Two workers match the CI machine. Test files share their worker's module state (isolate: false): the
    // Pulumi SDKs load once per worker instead of once per file, and each project's example plan is made once
    // per worker (lib/cli/plan/projects.ts), which takes the suite from about 60 s to under 30 s. Programs are
    // still loaded fresh for every plan (lib/cli/plan/harness.ts requireFresh), and no test changes shared state.
    pool: "forks",
    maxWorkers: 2,
    isolate: false,
    // Where the suite's one `npm run plan -- --out` goes: the tests that read the whole plan as the command
    // writes and prints it share that one run, made by the first that asks (test/shared-plan.ts).
    globalSetup: ["test/shared-plan-setup.ts"],
    // No time limit: a test is as slow as its work on a machine shared with other work, and never fails for
    // that. A test that hangs is stopped by CI's job limit.
    testTimeout: 0,
    hookTimeout: 0,
  },
});
