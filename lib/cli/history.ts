// `npm run history -- <environment> [--repository DIR] [--ref-prefix PREFIX]`: every promotion into the
// environment's stages, with its Freight, commit, approvals, preview and links, read from the stage branches
// with git alone (lib/history.ts). Run `git fetch origin` first: it reads refs/remotes/origin/stage/* by default,
// and exits 2 with what to run when git, the repository, the remote or the fetched stage branches are missing.
import { parseArgs } from "node:util";
import { pipeline as definition } from "../../kargo/pipeline";
import { environmentHistory, formatHistory, gitLog } from "../history";
import { validatePipeline } from "../pipeline/validate";

const usage =
  "usage: npm run history -- <environment> [--repository DIR] [--ref-prefix refs/remotes/origin/]";

try {
  const { values, positionals } = parseArgs({
    options: { repository: { type: "string" }, "ref-prefix": { type: "string" } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new Error(`name one environment\n${usage}`);
  const environment = positionals[0]!;
  const entries = environmentHistory(
    validatePipeline(definition),
    environment,
    gitLog(values.repository ?? ".", values["ref-prefix"] ?? "refs/remotes/origin/"),
  );
  process.stdout.write(formatHistory(environment, entries));
} catch (err) {
  console.error(`history: ${(err as Error).message}`);
  process.exitCode = 2;
}
