// Hostile and careless risk policies: each is refused with a message naming the environment's field and what
// is allowed, as a PipelineError (what `pulumi up` prints alone), before any resource is registered.
import { describe, expect, it } from "vitest";
import { RISK_CLASSES, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { base, escaped, expectRefused, firstEnv, linesOf, problemsOf } from "./pipeline-support";
import { policyFields } from "./risk-stops-support";

type EnvironmentInput = PipelineInput["environments"][string];
/**
 * kargo/pipeline.ts with the first environment's risk policy replaced whole by `fields`: whatever policy a
 * fork gave it (stopEveryPreview, say) is dropped first, so each case holds only the fields it names.
 */
const withFirstEnv = (fields: Partial<Record<keyof EnvironmentInput | "stopsOn", unknown>>): PipelineInput =>
  ({
    ...base,
    environments: {
      ...base.environments,
      [firstEnv]: Object.fromEntries(
        Object.entries({ ...base.environments[firstEnv], ...fields }).filter(
          ([k, v]) => v !== undefined && (!policyFields.includes(k) || k in fields),
        ),
      ),
    },
  }) as PipelineInput;
/** A group to decide the stops of a case's policy: validatePipeline does not look groups up. */
const deciders = ["zz-deciders"];
const at = escaped(`environments.${firstEnv}`);
const allowed = escaped(`must be one of ${RISK_CLASSES.join(", ")}`);

describe("hostile risk policies", () => {
  const cases: [string, PipelineInput, RegExp][] = [
    [
      "a class that does not exist",
      withFirstEnv({ stopOn: ["loss", "danger"], deciders }),
      new RegExp(`${at}\\.stopOn\\.1: ${allowed}`),
    ],
    [
      "a class in another case",
      withFirstEnv({ stopOn: ["Loss"], deciders }),
      new RegExp(`${at}\\.stopOn\\.0: ${allowed}`),
    ],
    [
      "stopOn as one string",
      withFirstEnv({ stopOn: "loss", deciders }),
      new RegExp(
        `${at}\\.stopOn: must be a list of classes, such as \\["loss"\\], each one of loss, privilege, exposure, cost`,
      ),
    ],
    [
      "a class listed twice",
      withFirstEnv({ stopOn: ["loss", "loss"], deciders }),
      new RegExp(`${at}\\.stopOn: lists a class twice`),
    ],
    [
      "stopEveryPreview as a string",
      withFirstEnv({ stopEveryPreview: "yes", deciders }),
      new RegExp(`${at}\\.stopEveryPreview: must be true or false`),
    ],
    [
      "an empty decider group",
      withFirstEnv({ deciders: [""] }),
      new RegExp(`${at}\\.deciders\\.0: must be a Cognito group name`),
    ],
    [
      "deciders as one string",
      withFirstEnv({ deciders: "dev-approvers" }),
      new RegExp(`${at}\\.deciders: must be a list of Cognito group names, such as \\["qa-approvers"\\]`),
    ],
    ["a misspelt field", withFirstEnv({ stopsOn: ["loss"], deciders }), new RegExp(`${at}: .*stopsOn`)],
    [
      "both deciders and their old name",
      withFirstEnv({ deciders, destructiveChangeApprovers: deciders }),
      new RegExp(
        `${at}: has both deciders and destructiveChangeApprovers \\(its old name\\); keep deciders only`,
      ),
    ],
    [
      "stopEveryPreview beside stopOn",
      withFirstEnv({ stopOn: ["loss"], stopEveryPreview: true, deciders }),
      new RegExp(
        `${at}\\.stopOn: stopEveryPreview already stops every preview that changes anything; remove stopOn`,
      ),
    ],
    [
      "the old protected switch beside stopOn",
      withFirstEnv({ stopOn: ["loss"], protected: false, deciders }),
      new RegExp(
        `${at}\\.protected: is the old switch and cannot be read beside stopOn or stopEveryPreview; remove it \\(protected: false is stopOn: \\[\\]\\)`,
      ),
    ],
    [
      "an ephemeral environment that stops",
      withFirstEnv({ ephemeral: true, stopOn: ["loss"], deciders }),
      new RegExp(
        `${at}: is ephemeral, and an ephemeral environment stops for nothing; remove stopOn: \\[[a-z, ]+\\], or set ephemeral: false`,
      ),
    ],
    [
      "an ephemeral environment that stops every preview",
      withFirstEnv({ ephemeral: true, stopEveryPreview: true, deciders }),
      new RegExp(
        `${at}: is ephemeral, and an ephemeral environment stops for nothing; remove stopEveryPreview: true, or set ephemeral: false`,
      ),
    ],
    [
      "an ephemeral environment protected the old way",
      withFirstEnv({ ephemeral: true, protected: true, deciders }),
      new RegExp(
        `${at}: is ephemeral, and an ephemeral environment stops for nothing; remove protected: true, or set ephemeral: false`,
      ),
    ],
  ];
  it.each(cases)("refuses %s", (_, input, message) => expectRefused(input, message));

  it("names each problem once, on the field, and every allowed class", () => {
    const lines = linesOf(problemsOf(withFirstEnv({ stopOn: ["danger"], deciders })));
    expect(lines).toEqual([
      `environments.${firstEnv}.stopOn.0: must be one of loss, privilege, exposure, cost`,
    ]);
  });

  const valid: [string, PipelineInput][] = [
    ["every class", withFirstEnv({ stopOn: [...RISK_CLASSES], deciders })],
    ["no class, and no deciders", withFirstEnv({ stopOn: [] })],
    ["stopEveryPreview", withFirstEnv({ stopEveryPreview: true, deciders })],
    ["the default classes", withFirstEnv({ deciders })],
    ["an ephemeral environment with no policy", withFirstEnv({ ephemeral: true })],
    ["an ephemeral environment that says stopOn: []", withFirstEnv({ ephemeral: true, stopOn: [] })],
    ["the old fields alone", withFirstEnv({ destructiveChangeApprovers: deciders })],
    ["the old protected: false alone", withFirstEnv({ protected: false })],
  ];
  it.each(valid)("accepts %s", (_, input) => expect(() => validatePipeline(input)).not.toThrow());
});
