// The checks of each environment's risk policy (what stops its Freight at its preview and who decides):
// fields that contradict each other, then, on a pipeline with no other problem, a stop nobody could see or
// nobody could let through.
import { RISK_CLASSES, riskPolicy, stopOnText, type ParsedPipeline } from "./schema";

/** Fields of an environment's policy that cannot hold together. Needs no stage. */
export function riskPolicyFieldProblems(pipeline: ParsedPipeline): string[] {
  const problems: string[] = [];
  for (const [name, env] of Object.entries(pipeline.environments)) {
    const at = `environments.${name}`;
    if (env.deciders !== undefined && env.destructiveChangeApprovers !== undefined)
      problems.push(
        `${at}: has both deciders and destructiveChangeApprovers (its old name); keep deciders only`,
      );
    if (env.stopEveryPreview && env.stopOn !== undefined)
      problems.push(
        `${at}.stopOn: stopEveryPreview already stops every preview that changes anything; remove stopOn (or stopEveryPreview to stop only on ${RISK_CLASSES.join(", ")} as listed)`,
      );
    if (env.protected !== undefined && (env.stopOn !== undefined || env.stopEveryPreview))
      problems.push(
        `${at}.protected: is the old switch and cannot be read beside stopOn or stopEveryPreview; remove it (protected: false is stopOn: [])`,
      );
    if (env.ephemeral) {
      const stopping = [
        ...(env.stopOn?.length ? [`stopOn: [${env.stopOn.join(", ")}]`] : []),
        ...(env.stopEveryPreview ? ["stopEveryPreview: true"] : []),
        ...(env.protected ? ["protected: true"] : []),
      ];
      if (stopping.length > 0)
        problems.push(
          `${at}: is ephemeral, and an ephemeral environment stops for nothing; remove ${stopping.join(" and ")}, or set ephemeral: false`,
        );
    }
  }
  return problems;
}

/**
 * An environment that stops anything needs a preview that can stop it and someone who may let it through.
 * Run on a pipeline with no other problem, where each environment has its update stage.
 */
export function riskStopProblems(pipeline: ParsedPipeline): string[] {
  const problems: string[] = [];
  for (const [name, env] of Object.entries(pipeline.environments)) {
    const policy = riskPolicy(env);
    if (policy.stopOn !== "all" && policy.stopOn.length === 0) continue;
    const at = `environments.${name}`;
    const stops = `stops on ${stopOnText(policy)}`;
    const previewed = pipeline.stages.some((s) => s.kind === "preview" && s.environment === name);
    if (!previewed)
      problems.push(
        `${at}: ${stops}, but no preview stage previews it, so nothing would stop its Freight; add a preview stage, or set stopOn: [] to stop for nothing`,
      );
    if (policy.deciders.length === 0)
      problems.push(
        `${at}.deciders: ${stops}; deciders must name the Cognito groups that may let a stop through (or set stopOn: []${env.ephemeral ? "" : " or ephemeral: true"})`,
      );
  }
  return problems;
}
