// What the Sensor's dependencies match with: Argo Events reads a data filter's string values as regular
// expressions (argo-events v1.9.10 pkg/sensors/dependencies/filter.go), so each value is escaped and anchored.
import { programStageName, type ProgramStage } from "./graph";

export const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** Exactly one of these values. */
export const anchored = (values: readonly string[]) => [`^(${values.map(escapeRegExp).join("|")})$`];

/**
 * A pattern matching exactly these program stages' names, each between `prefix` and `suffix`:
 * `^<prefix>(<declared>|…)-(<program>|…)<suffix>$` when they are every program of every declared stage among
 * them (as a pipeline's stages usually are), else each name: the Sensor's spec stays short (its pods get it in
 * one environment variable, argo-events v1.9.10 pkg/reconciler/sensor/resource.go).
 */
export function stageNamesPattern(stages: ProgramStage[], prefix = "", suffix = ""): string[] {
  const declared = [...new Set(stages.map((s) => s.declared))];
  const programs = [...new Set(stages.map((s) => s.program))];
  const names = new Set(stages.map((s) => s.name));
  const product = declared.flatMap((d) => programs.map((x) => programStageName(d, x)));
  const [pre, post] = [escapeRegExp(prefix), escapeRegExp(suffix)];
  return product.length === names.size && product.every((n) => names.has(n))
    ? [`^${pre}(${declared.map(escapeRegExp).join("|")})-(${programs.map(escapeRegExp).join("|")})${post}$`]
    : [`^${pre}(${[...names].map(escapeRegExp).join("|")})${post}$`];
}
