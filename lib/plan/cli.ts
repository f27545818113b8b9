// `npm run plan [-- --out DIR] [--project NAME] [--config FILE]`: the three programs under the mock runtime.
import * as path from "node:path";
import { parseArgs } from "node:util";
import { ProgramError } from "./harness";
import { summarize, writePlan } from "./output";
import { planChain, projectOrder, type ProjectName } from "./projects";

const usage = `usage: npm run plan -- [--out DIR] [--project ${projectOrder.join("|")}] [--config FILE]`;

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: { out: { type: "string" }, project: { type: "string" }, config: { type: "string" } },
      strict: true,
    }).values;
  } catch (err) {
    console.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  const project = args.project as ProjectName | undefined;
  if (project !== undefined && !projectOrder.includes(project)) {
    console.error(`--project must be one of ${projectOrder.join(", ")} (got "${project}")\n${usage}`);
    return 2;
  }
  try {
    const plans = await planChain({ project, configFile: args.config && path.resolve(args.config) });
    for (const plan of plans) {
      console.log(summarize(plan) + "\n");
      if (args.out) writePlan(path.resolve(args.out), plan);
    }
    if (args.out) console.log(`plan written to ${path.resolve(args.out)}`);
    return 0;
  } catch (err) {
    const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
    console.error(`plan failed: ${where}${(err as Error).message}`);
    return 1;
  }
}

main().then((code) => process.exit(code));
