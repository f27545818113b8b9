import { celMethod, CelScalar, run as runCel } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { readValidationData, toJsonSchema, type SchemaNode, type ValidationData } from "./schema";

/** A Kubernetes object as it would be applied. */
export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; [k: string]: unknown };
  [field: string]: unknown;
};

interface CelRule {
  /** Path of schema segments from the object root; "*" stands for any list element or map value. */
  at: string[];
  rule: string;
  message: string;
}

interface KindSchema {
  scope: "Namespaced" | "Cluster";
  /** Compiled on first use: a plan reads a few of the pinned CRDs' kinds, and compiling each takes time. */
  validate: () => ValidateFunction;
  rules: CelRule[];
}

/** `compile`, run once, on the first call. */
const once = <T>(compile: () => T): (() => T) => {
  let compiled: { value: T } | undefined;
  return () => (compiled ??= { value: compile() }).value;
};

export interface ValidationReport {
  /** Problems, each naming the object and the field. Empty when everything is valid. */
  errors: string[];
  /** CEL rules that could not be evaluated here (transition rules, unsupported functions). */
  unevaluatedRules: string[];
  /** Kinds with no schema here (built-in Kubernetes kinds); checked for name and namespace only. */
  unschematized: string[];
}

const EXPRESSION = /\$\{\{.*\}\}/s;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Collects `x-kubernetes-validations` rules with the path of the node they sit on. */
function collectRules(node: SchemaNode, at: string[] = []): CelRule[] {
  const rules: CelRule[] = [];
  for (const v of (node["x-kubernetes-validations"] as { rule: string; message?: string }[] | undefined) ??
    []) {
    rules.push({ at, rule: v.rule, message: v.message ?? v.rule });
  }
  for (const [name, child] of Object.entries((node.properties as Record<string, SchemaNode>) ?? {})) {
    rules.push(...collectRules(child, [...at, name]));
  }
  for (const key of ["items", "additionalProperties"]) {
    const child = node[key];
    if (child && typeof child === "object") rules.push(...collectRules(child as SchemaNode, [...at, "*"]));
  }
  return rules;
}

/** Every value the path reaches, with its concrete location. */
function reach(value: unknown, at: string[], where = ""): [unknown, string][] {
  if (at.length === 0) return [[value, where]];
  if (value === null || typeof value !== "object") return [];
  const [head, ...rest] = at;
  if (head === "*") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value);
    return entries.flatMap(([k, v]) => reach(v, rest, `${where}/${k}`));
  }
  const next = (value as Record<string, unknown>)[head!];
  return next === undefined ? [] : reach(next, rest, `${where}/${head}`);
}

/**
 * The CEL libraries the API server adds that the CRDs' rules use (Karpenter's): the strings extension
 * (`split`) and Kubernetes' regex library's `find`, the first match or "" (kubernetes
 * staging/src/k8s.io/apiserver/pkg/cel/library/regex.go).
 */
const celFuncs = [
  ...strings,
  celMethod(
    "find",
    CelScalar.STRING,
    [CelScalar.STRING],
    CelScalar.STRING,
    function (this: string, pattern: string) {
      return new RegExp(pattern).exec(this)?.[0] ?? "";
    },
  ),
];

/** CEL sees maps, lists and integers (not JS numbers) the way the API server hands them over. */
const toCel = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(toCel)
    : v !== null && typeof v === "object"
      ? new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]))
      : typeof v === "number" && Number.isInteger(v)
        ? BigInt(v)
        : v;

const valueAt = (root: unknown, pointer: string): unknown =>
  pointer
    .split("/")
    .slice(1)
    .reduce<unknown>(
      (v, k) => (v !== null && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined),
      root,
    );

/**
 * Ajv errors minus those a Kargo expression explains: where a field holds a `${{ }}` string, Kargo evaluates
 * it before the schema applies, so a type, enum or pattern mismatch there is not a mistake; neither is the
 * anyOf/oneOf summary above such a field.
 */
function realErrors(errors: ErrorObject[], data: unknown): ErrorObject[] {
  const excused = errors.filter((e) => {
    const v = valueAt(data, e.instancePath);
    return typeof v === "string" && EXPRESSION.test(v);
  });
  return errors.filter(
    (e) =>
      !excused.includes(e) &&
      !(
        ["anyOf", "oneOf", "if"].includes(e.keyword) &&
        excused.some((x) => x.instancePath.startsWith(e.instancePath))
      ),
  );
}

/** One line per schema error: where (under `prefix`) and what is wrong, naming the allowed values. */
const describe = (e: ErrorObject, prefix = ""): string => {
  const where = prefix + e.instancePath || "/";
  if (e.keyword === "additionalProperties") {
    return `${where}: unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  }
  if (e.keyword === "enum") {
    return `${where}: ${e.message} (${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")})`;
  }
  return `${where}: ${e.message}`;
};

/**
 * Validates Kubernetes objects against the upstream CRD schemas (the committed validation data by default),
 * with the API server's rules:
 * types, enums, required fields, patterns, bounds, int-or-string, nullable, unknown fields (as errors) and
 * CEL `x-kubernetes-validations`. Kargo step configs and Warehouse subscriptions, which the CRDs leave
 * free-form, are checked against Kargo's own schemas.
 */
export function createValidator(data: ValidationData = readValidationData()) {
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, unicodeRegExp: false });
  addFormats(ajv);
  for (const format of ["int32", "int64", "byte", "double", "float"]) ajv.addFormat(format, true);

  // The API server fills in a CRD's defaults before it validates (a required field with a default may be
  // left out), so the CRD schemas apply theirs to the copy they check (k8s.io/apiextensions-apiserver
  // v0.34.3 pkg/apiserver/schema/defaulting).
  const crdAjv = new Ajv2020({
    allErrors: true,
    strict: false,
    validateFormats: true,
    unicodeRegExp: false,
    useDefaults: true,
  });
  addFormats(crdAjv);
  for (const format of ["int32", "int64", "byte", "double", "float"]) crdAjv.addFormat(format, true);

  const kinds = new Map<string, KindSchema>();
  for (const versions of Object.values(data.crds)) {
    for (const crd of versions) {
      kinds.set(`${crd.group}/${crd.version}/${crd.kind}`, {
        scope: crd.scope,
        validate: once(() => crdAjv.compile(toJsonSchema(crd.schema))),
        rules: collectRules(crd.schema),
      });
    }
  }

  const { "argocd-common": argocdCommon, ...stepSchemas } = data.steps;
  ajv.addSchema({ ...argocdCommon, $id: "argocd-common.json" });
  const steps = new Map<string, () => ValidateFunction>(
    Object.entries(stepSchemas).map(([step, schema]) => [
      step,
      once(() => ajv.compile({ ...schema, $id: `${step}-config.json` })),
    ]),
  );
  const subscriptions = new Map<string, () => ValidateFunction>(
    Object.entries(data.subscriptions).map(([name, schema]) => [
      name,
      once(() => ajv.compile({ ...schema, $id: `subscription-${name}.json` })),
    ]),
  );

  function checkSteps(list: unknown, where: string, errors: string[]): void {
    if (!Array.isArray(list)) return;
    list.forEach((step: { uses?: string; config?: unknown }, i) => {
      if (step.uses === undefined) return;
      const validate = steps.get(step.uses)?.();
      if (!validate) {
        errors.push(`${where}/${i}/uses: "${step.uses}" is not a built-in Kargo step`);
      } else if (!validate(step.config ?? {})) {
        const config = step.config ?? {};
        errors.push(
          ...realErrors(validate.errors ?? [], config).map((e) => describe(e, `${where}/${i}/config`)),
        );
      }
    });
  }

  function checkSubscriptions(list: unknown, errors: string[]): void {
    if (!Array.isArray(list)) return;
    list.forEach((item: Record<string, unknown>, i) => {
      const kinds = Object.keys(item ?? {});
      if (kinds.length !== 1) {
        errors.push(`/spec/subscriptions/${i}: must hold exactly one of git, image, chart or subscription`);
        return;
      }
      const validate = subscriptions.get(kinds[0]!)?.();
      if (validate && !validate(item[kinds[0]!])) {
        const prefix = `/spec/subscriptions/${i}/${kinds[0]}`;
        errors.push(...realErrors(validate.errors ?? [], item[kinds[0]!]).map((e) => describe(e, prefix)));
      }
    });
  }

  function validateObject(object: KubeObject, report: ValidationReport): void {
    const id = `${object.kind ?? "?"} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ""}${object.metadata?.name ?? "(unnamed)"}`;
    const errors: string[] = [];
    const name = object.metadata?.name;
    if (!name) errors.push("/metadata/name: required");
    else if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
      errors.push(`/metadata/name: "${name}" is not a DNS subdomain (lower-case alphanumerics, '-', '.')`);
    }

    // The API server refuses an apiVersion or kind that is not a string before it looks for a schema.
    for (const key of ["apiVersion", "kind"] as const) {
      if (typeof object[key] !== "string") errors.push(`/${key}: must be a string`);
    }
    const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
    const schema = kinds.get(`${group}/${version}/${object.kind}`);
    if (!schema) {
      if (group && [...kinds.keys()].some((k) => k.startsWith(`${group}/`))) {
        errors.push(`${object.apiVersion} ${object.kind} is not a kind any pinned CRD serves`);
      } else if (!report.unschematized.includes(`${object.apiVersion}/${object.kind}`)) {
        report.unschematized.push(`${object.apiVersion}/${object.kind}`);
      }
    } else {
      if (schema.scope === "Namespaced" && !object.metadata?.namespace)
        errors.push("/metadata/namespace: required");
      if (schema.scope === "Cluster" && object.metadata?.namespace) {
        errors.push("/metadata/namespace: must not be set on a cluster-scoped kind");
      }
      const defaulted = structuredClone(object);
      const validate = schema.validate();
      if (!validate(defaulted))
        errors.push(...realErrors(validate.errors ?? [], defaulted).map((e) => describe(e)));
      for (const rule of schema.rules) {
        for (const [self, where] of reach(defaulted, rule.at)) {
          if (/\boldSelf\b/.test(rule.rule)) continue; // transition rules apply to updates only
          const result = runCel(rule.rule, { self: toCel(self) } as never, { funcs: celFuncs });
          if (typeof result !== "boolean") {
            const unevaluated = `${object.kind}: ${rule.rule}`;
            if (!report.unevaluatedRules.includes(unevaluated)) report.unevaluatedRules.push(unevaluated);
          } else if (!result) {
            errors.push(`${where || "/"}: ${rule.message} (CEL: ${rule.rule})`);
          }
        }
      }
      if (object.kind === "Stage") {
        const spec = object.spec as { promotionTemplate?: { spec?: { steps?: unknown } } } | undefined;
        checkSteps(spec?.promotionTemplate?.spec?.steps, "/spec/promotionTemplate/spec/steps", errors);
      }
      if (object.kind === "PromotionTask" || object.kind === "ClusterPromotionTask") {
        checkSteps((object.spec as { steps?: unknown } | undefined)?.steps, "/spec/steps", errors);
      }
      if (object.kind === "Warehouse") {
        checkSubscriptions((object.spec as { subscriptions?: unknown } | undefined)?.subscriptions, errors);
      }
    }
    report.errors.push(...errors.map((e) => `${id}: ${e}`));
  }

  return {
    /** Validates each object; see {@link ValidationReport}. */
    validate(objects: KubeObject[]): ValidationReport {
      const report: ValidationReport = { errors: [], unevaluatedRules: [], unschematized: [] };
      for (const object of objects) validateObject(object, report);
      return report;
    },
  };
}

export type Validator = ReturnType<typeof createValidator>;
