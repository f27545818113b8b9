import * as pulumi from "@pulumi/pulumi";

/** Helm chart values: nested maps whose leaves may be Pulumi inputs (a secret leaf stays secret alone). */
export type Values = { [key: string]: unknown };

const isMap = (v: unknown): v is Values =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !pulumi.Output.isInstance(v);

/** Merges `override` over `base`: maps key by key, anything else (lists, scalars, inputs) replaced. */
export function mergeValues(base: Values, override: Values): Values {
  const merged: Values = { ...base };
  for (const [key, value] of Object.entries(override)) {
    merged[key] = isMap(value) && isMap(merged[key]) ? mergeValues(merged[key], value) : value;
  }
  return merged;
}
