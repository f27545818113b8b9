// What `npm run plan` does once its arguments are good (lib/cli/plan/command.ts checks them): plan, print,
// write. It loads the SDKs and the programs, so the command loads it only then.
import * as path from "node:path";
import { BadRefError, BasePlanError, planDiff } from "./diff-run";
import { ProgramError } from "./harness";
import { describeResource, summarize, writePlan } from "./output";
import { planChain } from "./projects";
import { checkedReach, plannedPipeline, ReachError } from "./reach-check";
import { planArguments, usage, type PlanArguments, type PlanCommandIO } from "./command";

/** Plans as `args` ask; resolves with the command's exit status. */
export async function executePlan(args: PlanArguments, io: PlanCommandIO): Promise<number> {
  const { project, configFile } = args;
  try {
    if (args.diff !== undefined) {
      io.log(await planDiff({ ref: args.diff, format: args.format ?? "text", project, configFile }));
      return 0;
    }
    // The projects before --project are planned for its StackReference, but only its own plan is shown.
    const planned = await planChain({ project, configFile });
    // With kargo planned, every identity's policies are: refused if any reaches beyond what the pipeline means.
    if (planned.some((plan) => plan.project === "kargo")) await checkedReach(plannedPipeline(), planned);
    const plans = project ? planned.slice(-1) : planned;
    if (args.resource) {
      // The full view of one resource in the last planned project (or any, without --project).
      const described = plans
        .map((plan) => describeResource(plan, args.resource!))
        .filter((d): d is string => d !== undefined);
      if (described.length === 0) {
        io.error(`no resource named "${args.resource}" in the plan`);
        return 2;
      }
      io.log(described.join("---\n"));
    } else {
      for (const plan of plans) io.log(summarize(plan) + "\n");
    }
    for (const plan of plans) if (args.out) writePlan(path.resolve(args.out), plan);
    if (args.out) io.log(`plan written to ${path.resolve(args.out)}`);
    return 0;
  } catch (err) {
    if (err instanceof BadRefError) {
      io.error(`${err.message}\n${usage}`);
      return 2;
    }
    if (err instanceof ReachError) {
      io.error(`plan refused: ${err.message}`);
      return 1;
    }
    if (err instanceof BasePlanError) {
      io.error(err.message);
      return 1;
    }
    const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
    io.error(`plan failed: ${where}${(err as Error).message}`);
    return 1;
  }
}

/** `npm run plan -- ARGS` as the command runs it: the arguments checked, then the plan; its exit status. */
export async function planCommand(argv: string[], io: PlanCommandIO): Promise<number> {
  const args = planArguments(argv, io);
  return typeof args === "number" ? args : executePlan(args, io);
}
