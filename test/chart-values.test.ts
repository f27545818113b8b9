import Ajv from "ajv";
import { beforeAll, describe, expect, it } from "vitest";
import type { ProgramPlan } from "../lib/cli/plan/harness";
import { planChain } from "../lib/cli/plan/projects";
import { validationData } from "./crds-support";
import { one } from "./helpers";

type Map = Record<string, unknown>;
const isMap = (v: unknown): v is Map => typeof v === "object" && v !== null && !Array.isArray(v);

/** Maps whose keys the chart passes through verbatim (argocd-cm and argocd-cmd-params-cm entries). */
const freeForm = new Set(["configs.cm", "configs.params"]);

/**
 * Paths in `values` that the chart's own values.yaml does not have: a misspelt key the chart ignores.
 * `documented` holds paths the file documents only in `## @param` comments (nullable values left unset).
 */
function unknownPaths(values: Map, defaults: Map, prefix = "", documented = new Set<string>()): string[] {
  return Object.entries(values).flatMap(([key, value]) => {
    const at = prefix ? `${prefix}.${key}` : key;
    if (freeForm.has(prefix) || documented.has(at)) return [];
    if (!(key in defaults)) return Object.keys(defaults).length === 0 ? [] : [at];
    const known = defaults[key];
    return isMap(value) && isMap(known) ? unknownPaths(value, known, at, documented) : [];
  });
}

describe("chart values we set", () => {
  let plan: ProgramPlan;
  let kargo: ProgramPlan;
  beforeAll(async () => {
    [, plan, kargo] = (await planChain()) as [ProgramPlan, ProgramPlan, ProgramPlan];
  });
  const valuesOf = (release: string) =>
    one(plan, "kubernetes:helm.sh/v3:Release", release).inputs.values as Map;
  const chart = (name: string) => validationData.charts[name]!;

  it.each(["argocd", "argo-rollouts", "pulumi-kubernetes-operator"])(
    "are keys the %s chart reads",
    (release) => {
      const { defaults, documented } = chart(release);
      expect(unknownPaths(valuesOf(release), defaults, "", new Set(documented))).toEqual([]);
    },
  );

  it("are keys the kargo chart reads", () => {
    const values = one(kargo, "kubernetes:helm.sh/v3:Release").inputs.values as Map;
    const { defaults, documented } = chart("kargo");
    expect(unknownPaths(values, defaults, "", new Set(documented))).toEqual([]);
  });

  it("pass cert-manager's values schema", () => {
    const schema = validationData.certManagerValuesSchema;
    const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);
    expect(validate(valuesOf("cert-manager")), JSON.stringify(validate.errors)).toBe(true);
  });

  it("catch a misspelt key", () => {
    expect(unknownPaths({ dex: { enable: false } }, chart("argocd").defaults)).toEqual(["dex.enable"]);
  });
});
