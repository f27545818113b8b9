// `npm run docs`: redraws what the documentation shows of kargo/pipeline.ts and the plan: the pipeline diagram
// (README.md), the capacity table (this pipeline's workspaces beside the planned platform on the planned nodes)
// and the idle-cost table (lib/cli/plan/costs.ts over every planned resource), both in
// docs/capacity-and-cost.md, the idle cost the README states, and what every planned IAM role reaches as an IAM
// policy engine answers (docs/security-and-approvals.md).
import { withoutSourceMaps } from "./plan/fast-start";
import * as fs from "node:fs";
import * as path from "node:path";
import { pipeline as definition } from "../../kargo/pipeline";
import { docPages, replaceBetweenMarkers } from "../markdown";
import { withDiagram } from "../pipeline/diagram";
import { PipelineError } from "../pipeline/schema";
import { validatePipeline } from "../pipeline/validate";
import { capacityTable, plannedCapacity, withCapacityTable } from "./plan/capacity";
import { monthlyCost, withCostTable, withCostTotal } from "./plan/costs";
import { ProgramError } from "./plan/harness";
import { IAM_TABLE_END, IAM_TABLE_START, iamReachTable } from "./plan/iam-reach";
import { checkedReach, ReachError } from "./plan/reach-check";
import { planChain, repoRoot } from "./plan/projects";

/** Each page's text redrawn; written only once every page has been redrawn, and only where it changed. */
function rewrite(pages: [file: string, redraw: (text: string) => string][]): string[] {
  const redrawn = pages.map(([file, redraw]) => {
    const before = fs.readFileSync(file, "utf8");
    return { file, before, after: redraw(before) };
  });
  return redrawn.map(({ file, before, after }) => {
    if (after !== before) fs.writeFileSync(file, after);
    return `${path.relative(repoRoot, file)}: ${after === before ? "up to date" : "redrawn"}`;
  });
}

export async function writeDocs(): Promise<string[]> {
  const pipeline = validatePipeline(definition);
  const plans = await planChain();
  const planned = plannedCapacity(plans, pipeline);
  const cost = monthlyCost(plans.flatMap((plan) => plan.resources));
  // A reach the pipeline does not mean is refused, as by `npm run plan`, never written into the table.
  const iam = iamReachTable(await checkedReach(pipeline, plans));
  const notes = rewrite([
    [docPages.readme, (text) => withCostTotal(withDiagram(text, pipeline), cost)],
    [
      docPages.capacityAndCost,
      (text) => withCostTable(withCapacityTable(text, capacityTable(planned)), cost),
    ],
    [
      docPages.securityAndApprovals,
      (text) => replaceBetweenMarkers(text, IAM_TABLE_START, IAM_TABLE_END, iam),
    ],
  ]);
  const { report } = planned;
  if (!report.fits)
    notes.push(
      `warning: the pods need ${report.total.pods} pods, ${report.total.cpu}m CPU, ${report.total.memory} MiB; ${planned.nodes} ${planned.instanceType} nodes offer ${report.allocatable.pods}, ${report.allocatable.cpu}m, ${report.allocatable.memory} MiB (docs/capacity-and-cost.md, "What the nodes hold")`,
    );
  return notes;
}

if (require.main === module) {
  withoutSourceMaps();
  writeDocs().then(
    (notes) => console.log(notes.join("\n")),
    (err: unknown) => {
      // Like `npm run plan`: the message naming the stage, field or key, no stack trace; the pages untouched.
      if (!(err instanceof PipelineError) && !(err instanceof ProgramError) && !(err instanceof ReachError))
        throw err;
      const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
      console.error(`docs failed: ${where}${err.message}`);
      process.exitCode = 1;
    },
  );
}
