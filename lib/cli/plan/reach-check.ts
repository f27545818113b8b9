// The plan's IAM reach as a refusal: `npm run plan` and `npm run docs` stop when an IAM policy engine says an
// identity of the plan may do what kargo/pipeline.ts does not give it (iam-reach.ts), above all another
// environment's resources or another account's, naming both and the statement that allows it. The common
// cause, environments whose resource name patterns overlap, is refused earlier by the pipeline's own check
// (lib/pipeline/check-reach.ts); this proof covers any policy, a program's custom `aws` access included.
import * as path from "node:path";
import type { PipelineInput } from "../../pipeline/schema";
import { validatePipeline } from "../../pipeline/validate";
import { requireFresh } from "./harness";
import { iamReach, type ReachRow } from "./iam-reach";
import type { PlanLike } from "./iam-roles";
import { PLAN_ACCOUNT_ID } from "./mocks";
import { repoRoot } from "./projects";

/** A plan some identity of which reaches further than the pipeline means; the message names each reach. */
export class ReachError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `an identity of the plan may do what kargo/pipeline.ts does not give it, as an IAM policy engine answers (lib/cli/plan/iam-reach.ts); narrow the program's \`aws\` access (its statements' Resource or an aws:ResourceAccount condition) or rename the environment:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.name = "ReachError";
  }
}

/** Each answer that breaks the pipeline's meaning, as `<identity>, <question>: <what and by which statement>`. */
export const reachProblems = (rows: ReachRow[]): string[] =>
  rows.flatMap((r) => r.problems.map((problem) => `${r.identity}, ${r.question}: ${problem}`));

/** The engine's answers for `plans` (the chain up to kargo), or a ReachError naming what is not as meant. */
export async function checkedReach(
  pipeline: ReturnType<typeof validatePipeline>,
  plans: PlanLike[],
): Promise<ReachRow[]> {
  const rows = await iamReach(pipeline, plans, PLAN_ACCOUNT_ID);
  const problems = reachProblems(rows);
  if (problems.length > 0) throw new ReachError(problems);
  return rows;
}

/**
 * The definition the kargo program of this plan read: loaded again from the checkout as the program loads it,
 * not one this process imported earlier (a test may plan a copy, and a copy's file may change between plans).
 */
export function plannedPipeline(): ReturnType<typeof validatePipeline> {
  const { pipeline } = requireFresh(path.join(repoRoot, "kargo", "pipeline.ts")) as {
    pipeline: PipelineInput;
  };
  return validatePipeline(pipeline, { repoRoot });
}
