// CEL as the API server reads it in admission policies: values written as literals, and the limits an
// expression must stay within. Nothing here knows about pipelines.

/**
 * The most code points CEL parses in one expression (cel-go v0.26.0 parser/parser.go, the default
 * expressionSizeCodePointLimit the API server keeps): the API server refuses a policy with a longer one.
 */
export const CEL_MAX_EXPRESSION_CODE_POINTS = 100_000;

/**
 * A JSON value as a CEL literal. Every value inside a list or map is wrapped in `dyn()`: the API server's CEL
 * wants each list and map literal homogeneous, and a Stack spec mixes strings, booleans, lists and maps.
 */
export function celLiteral(value: unknown): string {
  if (typeof value === "string") return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`no CEL literal for ${value}`);
    return Number.isInteger(value) ? String(value) : value.toExponential();
  }
  if (typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => `dyn(${celLiteral(v)})`).join(", ")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${celLiteral(k)}: dyn(${celLiteral(v)})`)
      .join(", ")}}`;
  throw new Error(`no CEL literal for ${String(value)}`);
}

/** An expression's length as CEL counts it: in code points, not UTF-16 units. */
export const codePoints = (expression: string) => [...expression].length;
