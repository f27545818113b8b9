// `npm run plan [-- --out DIR] [--project NAME] [--config FILE] [--resource NAME]`: the three programs under
// the mock runtime. `--diff REF [--format text|markdown|json]`: what changes from REF (lib/cli/plan/diff-run.ts).
// The arguments are checked in lib/cli/plan/command.ts, the plan made in lib/cli/plan/execute.ts.
import { withoutSourceMaps } from "./plan/fast-start";
import { exitAfterOutput, planArguments, type PlanCommandIO } from "./plan/command";

withoutSourceMaps();

const io: PlanCommandIO = { log: (text) => console.log(text), error: (text) => console.error(text) };

async function main(): Promise<number> {
  const args = planArguments(process.argv.slice(2), io);
  if (typeof args === "number") return args;
  // The SDKs and the programs load only once the arguments are known to be good. (`require`, as the tools
  // run as CommonJS: tsx hands an `import()` to Node's ES module loader, which transforms each file again.)
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { executePlan } = require("./plan/execute") as typeof import("./plan/execute");
  return executePlan(args, io);
}

// Exit once standard output and error have taken everything: a diff runs to megabytes, and a pipe may still
// hold some.
main().then(exitAfterOutput);
