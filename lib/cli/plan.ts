// `npm run plan [-- --out DIR] [--project NAME] [--config FILE] [--resource NAME]`: the three programs under
// the mock runtime. `--diff REF [--format text|markdown|json]`: what changes from REF (lib/cli/plan/diff-run.ts).
import { withoutSourceMaps } from "./plan/fast-start";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { formats, projectOrder, type Format, type ProjectName } from "./plan/options";

withoutSourceMaps();

const usage = `usage: npm run plan -- [--out DIR] [--project ${projectOrder.join("|")}] [--config FILE] [--resource NAME] [--diff REF [--format ${formats.join("|")}]]`;

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        out: { type: "string" },
        project: { type: "string" },
        config: { type: "string" },
        resource: { type: "string" },
        diff: { type: "string" },
        format: { type: "string" },
      },
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
  if (args.diff !== undefined && (args.out !== undefined || args.resource !== undefined)) {
    console.error(`--diff prints a diff; it does not combine with --out or --resource\n${usage}`);
    return 2;
  }
  if (args.format !== undefined && (args.diff === undefined || !formats.includes(args.format as Format))) {
    console.error(`--format takes ${formats.join(", ")}, with --diff (got "${args.format}")\n${usage}`);
    return 2;
  }
  const configFile = args.config && path.resolve(args.config);
  if (configFile !== undefined && !fs.statSync(configFile, { throwIfNoEntry: false })?.isFile()) {
    console.error(`--config: ${args.config} does not exist (or is not a file)\n${usage}`);
    return 2;
  }
  // The SDKs and the programs load only once the arguments are known to be good. (`require`, as the tools
  // run as CommonJS: tsx hands an `import()` to Node's ES module loader, which transforms each file again.)
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { BadRefError, BasePlanError, planDiff } =
    require("./plan/diff-run") as typeof import("./plan/diff-run");
  const { ProgramError } = require("./plan/harness") as typeof import("./plan/harness");
  const { describeResource, summarize, writePlan } =
    require("./plan/output") as typeof import("./plan/output");
  const { planChain } = require("./plan/projects") as typeof import("./plan/projects");
  /* eslint-enable @typescript-eslint/no-require-imports */
  try {
    if (args.diff !== undefined) {
      console.log(
        await planDiff({ ref: args.diff, format: (args.format ?? "text") as Format, project, configFile }),
      );
      return 0;
    }
    // The projects before --project are planned for its StackReference, but only its own plan is shown.
    const planned = await planChain({ project, configFile });
    const plans = project ? planned.slice(-1) : planned;
    if (args.resource) {
      // The full view of one resource in the last planned project (or any, without --project).
      const described = plans
        .map((plan) => describeResource(plan, args.resource!))
        .filter((d): d is string => d !== undefined);
      if (described.length === 0) {
        console.error(`no resource named "${args.resource}" in the plan`);
        return 2;
      }
      console.log(described.join("---\n"));
    } else {
      for (const plan of plans) console.log(summarize(plan) + "\n");
    }
    for (const plan of plans) if (args.out) writePlan(path.resolve(args.out), plan);
    if (args.out) console.log(`plan written to ${path.resolve(args.out)}`);
    return 0;
  } catch (err) {
    if (err instanceof BadRefError) {
      console.error(`${err.message}\n${usage}`);
      return 2;
    }
    if (err instanceof BasePlanError) {
      console.error(err.message);
      return 1;
    }
    const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
    console.error(`plan failed: ${where}${(err as Error).message}`);
    return 1;
  }
}

main().then((code) => process.exit(code));
