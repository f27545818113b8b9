// What `npm run plan` does with its arguments. lib/cli/plan.ts is the command: it checks them here, loads
// lib/cli/plan/execute.ts (the SDKs and the programs) only once they are good, and exits with the status.
// Tests about the command's logic run it in-process (execute.ts planCommand), with the plans their worker
// has already made; the suite still runs the command once as a user does (test/shared-plan.ts).
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { formats, projectOrder, type Format, type ProjectName } from "./options";

/** Where the command prints: standard output and standard error, a line (or block) at a time. */
export interface PlanCommandIO {
  log(text: string): void;
  error(text: string): void;
}

export const usage = `usage: npm run plan -- [--out DIR] [--project ${projectOrder.join("|")}] [--config FILE] [--resource NAME] [--diff REF [--format ${formats.join("|")}]]`;

/** The command's arguments, once checked. */
export interface PlanArguments {
  out?: string;
  project?: ProjectName;
  configFile?: string;
  resource?: string;
  diff?: string;
  format?: Format;
}

/** Checks `npm run plan -- ARGS`: the arguments, or the exit status once it has said what is wrong. */
export function planArguments(argv: string[], io: PlanCommandIO): PlanArguments | number {
  let args;
  try {
    args = parseArgs({
      args: argv,
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
    io.error(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  const project = args.project as ProjectName | undefined;
  if (project !== undefined && !projectOrder.includes(project)) {
    io.error(`--project must be one of ${projectOrder.join(", ")} (got "${project}")\n${usage}`);
    return 2;
  }
  if (args.diff !== undefined && (args.out !== undefined || args.resource !== undefined)) {
    io.error(`--diff prints a diff; it does not combine with --out or --resource\n${usage}`);
    return 2;
  }
  if (args.format !== undefined && (args.diff === undefined || !formats.includes(args.format as Format))) {
    io.error(`--format takes ${formats.join(", ")}, with --diff (got "${args.format}")\n${usage}`);
    return 2;
  }
  const configFile = args.config && path.resolve(args.config);
  if (configFile !== undefined && !fs.statSync(configFile, { throwIfNoEntry: false })?.isFile()) {
    io.error(`--config: ${args.config} does not exist (or is not a file)\n${usage}`);
    return 2;
  }
  return {
    out: args.out,
    project,
    configFile,
    resource: args.resource,
    diff: args.diff,
    format: args.format as Format | undefined,
  };
}

/**
 * Ends the process with `code` once stdout and stderr have taken everything written: a pipe whose reader is
 * slow (a busy machine, a large plan or diff) takes only what fits in its buffer at once, and a bare
 * process.exit drops the rest.
 */
export function exitAfterOutput(code: number): void {
  process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
}
