// `npm run docs`: redraws what README.md shows of kargo/pipeline.ts and the plan: the pipeline diagram, the
// capacity table (this pipeline's workspaces beside the planned platform on the planned nodes) and the
// idle-cost table (lib/cli/plan/costs.ts over every planned resource).
import * as fs from "node:fs";
import { pipeline as definition } from "../../kargo/pipeline";
import { README, withDiagram } from "../pipeline/diagram";
import { PipelineError } from "../pipeline/schema";
import { validatePipeline } from "../pipeline/validate";
import { capacityTable, plannedCapacity, withCapacityTable } from "./plan/capacity";
import { monthlyCost, withCostTable } from "./plan/costs";
import { ProgramError } from "./plan/harness";
import { planChain } from "./plan/projects";

export async function writeDocs(): Promise<string[]> {
  const pipeline = validatePipeline(definition);
  const plans = await planChain();
  const planned = plannedCapacity(plans, pipeline);
  const before = fs.readFileSync(README, "utf8");
  const after = withCostTable(
    withCapacityTable(withDiagram(before, pipeline), capacityTable(planned)),
    monthlyCost(plans.flatMap((plan) => plan.resources)),
  );
  if (after !== before) fs.writeFileSync(README, after);
  const notes = [
    after === before
      ? "README.md: up to date"
      : "README.md: pipeline diagram, capacity and cost tables redrawn",
  ];
  const { report } = planned;
  if (!report.fits)
    notes.push(
      `warning: the pods need ${report.total.pods} pods, ${report.total.cpu}m CPU, ${report.total.memory} MiB; ${planned.nodes} ${planned.instanceType} nodes offer ${report.allocatable.pods}, ${report.allocatable.cpu}m, ${report.allocatable.memory} MiB (README "What the nodes hold")`,
    );
  return notes;
}

if (require.main === module) {
  writeDocs().then(
    (notes) => console.log(notes.join("\n")),
    (err: unknown) => {
      // Like `npm run plan`: the message naming the stage, field or key, no stack trace; README.md untouched.
      if (!(err instanceof PipelineError) && !(err instanceof ProgramError)) throw err;
      const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
      console.error(`docs failed: ${where}${err.message}`);
      process.exitCode = 1;
    },
  );
}
