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
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
