// What the risk-stop tests (risk-stops.test.ts, risk-deciders.test.ts) share: the example pipeline validated,
// the same pipeline with some environments' fields replaced, and its environments with their preview and
// update stages, whatever a fork names them.
import { pipeline as definition } from "../kargo/pipeline";
import { environmentStages } from "../lib/pipeline/graph";
import type { PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

type EnvironmentInput = PipelineInput["environments"][string];
export const pipeline = validatePipeline(definition);

/** The fields of an environment's risk policy, new and old names. */
export const policyFields = [
  "stopOn",
  "stopEveryPreview",
  "deciders",
  "destructiveChangeApprovers",
  "protected",
  "ephemeral",
];

/**
 * kargo/pipeline.ts with some environments' risk policies replaced whole: each named environment keeps its
 * other fields but only the policy given (`undefined` leaves a field out), so no field a fork set there
 * (stopEveryPreview beside a given stopOn, say) contradicts it.
 */
export const withEnvironments = (envs: Record<string, Partial<Record<keyof EnvironmentInput, unknown>>>) =>
  ({
    ...definition,
    environments: Object.fromEntries(
      Object.entries(definition.environments).map(([name, env]) => [
        name,
        name in envs
          ? Object.fromEntries(
              Object.entries({
                ...Object.fromEntries(Object.entries(env).filter(([field]) => !policyFields.includes(field))),
                ...envs[name],
              }).filter(([, value]) => value !== undefined),
            )
          : env,
      ]),
    ),
  }) as PipelineInput;

/** The environments of kargo/pipeline.ts, whatever a fork names them: each with its preview and update stage. */
export const environments = Object.keys(pipeline.environments).map((name) => ({
  name,
  preview: environmentStages(pipeline).find((s) => s.kind === "preview" && s.environment === name),
  update: environmentStages(pipeline).find((s) => s.kind === "update" && s.environment === name),
}));
export const previewed = environments.filter((e) => e.preview && e.update);
export const [first, second] = [previewed[0]!, previewed[1] ?? previewed[0]!];
export const last = previewed[previewed.length - 1]!;
