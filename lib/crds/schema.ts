import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";

/** A JSON-schema-like node, as found in a CRD's `openAPIV3Schema` or in Kargo's step schemas. */
export type SchemaNode = { [keyword: string]: unknown };

export interface CrdVersion {
  group: string;
  version: string;
  kind: string;
  scope: "Namespaced" | "Cluster";
  /** The version's `openAPIV3Schema` as upstream wrote it. */
  schema: SchemaNode;
}

/** Reads every CustomResourceDefinition in a (multi-document) YAML file, one entry per served version. */
export function readCrdFile(file: string, text = fs.readFileSync(file, "utf8")): CrdVersion[] {
  const found: CrdVersion[] = [];
  for (const doc of YAML.parseAllDocuments(text)) {
    const crd = doc.toJS() as {
      kind?: string;
      spec?: {
        group: string;
        scope: "Namespaced" | "Cluster";
        names: { kind: string };
        versions: { name: string; served: boolean; schema?: { openAPIV3Schema: SchemaNode } }[];
      };
    } | null;
    if (crd?.kind !== "CustomResourceDefinition" || !crd.spec) continue;
    for (const v of crd.spec.versions) {
      if (!v.served || !v.schema) continue;
      found.push({
        group: crd.spec.group,
        version: v.name,
        kind: crd.spec.names.kind,
        scope: crd.spec.scope,
        schema: v.schema.openAPIV3Schema,
      });
    }
  }
  if (found.length === 0) throw new Error(`${file} holds no CustomResourceDefinition`);
  return found;
}

const isNode = (v: unknown): v is SchemaNode => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Translates a Kubernetes structural schema into plain JSON Schema with the API server's semantics:
 * `x-kubernetes-int-or-string` becomes integer-or-string, `nullable` admits null, an object that declares
 * properties rejects any other field (the API server would prune it silently; we call it an error) unless it
 * preserves unknown fields. Descriptions and the `x-kubernetes-*` annotations are dropped.
 */
export function toJsonSchema(node: SchemaNode): SchemaNode {
  const out: SchemaNode = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "description" || key.startsWith("x-kubernetes-") || key === "nullable") continue;
    if (key === "properties" && isNode(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [name, toJsonSchema(child as SchemaNode)]),
      );
    } else if ((key === "items" || key === "additionalProperties" || key === "not") && isNode(value)) {
      out[key] = toJsonSchema(value);
    } else if ((key === "allOf" || key === "anyOf" || key === "oneOf") && Array.isArray(value)) {
      out[key] = value.map((child) => toJsonSchema(child as SchemaNode));
    } else {
      out[key] = value;
    }
  }
  if (node["x-kubernetes-int-or-string"] === true) {
    delete out.type;
    out.anyOf = [{ type: "integer" }, { type: "string" }];
  }
  const preserves = node["x-kubernetes-preserve-unknown-fields"] === true;
  if (out.type === "object" && out.additionalProperties === undefined) {
    out.additionalProperties = preserves || out.properties === undefined;
  }
  if (node.nullable === true && typeof out.type === "string") out.type = [out.type, "null"];
  return out;
}

/**
 * Reads a JSON schema file (Kargo's step and subscription schemas) without its prose or its `$schema`: we
 * embed these schemas in others and compile them under an `$id` of our own.
 */
export const readJsonSchema = (file: string): SchemaNode =>
  JSON.parse(fs.readFileSync(file, "utf8"), (key, value: unknown) =>
    (key === "description" || key === "$schema") && typeof value === "string" ? undefined : value,
  ) as SchemaNode;

/** Drops every `description` (prose, most of an upstream schema's size) at any depth. */
export function withoutDescriptions<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutDescriptions) as T;
  if (!isNode(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key, v]) => !(key === "description" && typeof v === "string"))
      .map(([key, v]) => [key, withoutDescriptions(v)]),
  ) as T;
}

/** Keys of a chart's values.yaml with their default scalars; nested maps stay maps. */
export type ChartDefaults = { [key: string]: unknown };

/**
 * Everything validation needs from the upstream files, stripped of prose: what `npm run crds` commits under
 * lib/crds/generated/schemas, so that every clone validates without the upstream files.
 */
export interface ValidationData {
  /** Served versions of each CRD, by the upstream file they come from. */
  crds: Record<string, CrdVersion[]>;
  /** Kargo's step-config schemas by step name, plus `argocd-common` which the Argo CD steps reference. */
  steps: Record<string, SchemaNode>;
  /** Kargo's Warehouse subscription schemas: git, image, chart. */
  subscriptions: Record<string, SchemaNode>;
  /** Per chart (by release name): its default values, and the paths documented only in `## @param` comments. */
  charts: Record<string, { defaults: ChartDefaults; documented: string[] }>;
  /** cert-manager's values schema. */
  certManagerValuesSchema: SchemaNode;
}

/** The committed validation data, and the file each part of it lives in. */
export const validationDataDir = path.join(__dirname, "generated", "schemas");
export const validationDataFiles = {
  crds: "crds.json",
  steps: "kargo-steps.json",
  subscriptions: "kargo-subscriptions.json",
  charts: "chart-defaults.json",
  certManagerValuesSchema: "cert-manager-values.schema.json",
} as const satisfies Record<keyof ValidationData, string>;

/** Reads validation data written by {@link writeValidationData} (the committed copy by default). */
export function readValidationData(dir = validationDataDir): ValidationData {
  const read = (file: string) => JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as never;
  return Object.fromEntries(
    Object.entries(validationDataFiles).map(([part, file]) => [part, read(file)]),
  ) as unknown as ValidationData;
}

/** File name → text of each part, as committed: compact JSON, one file per part. */
export function serializeValidationData(data: ValidationData): Record<string, string> {
  return Object.fromEntries(
    Object.entries(validationDataFiles).map(([part, file]) => [
      file,
      JSON.stringify(data[part as keyof ValidationData]) + "\n",
    ]),
  );
}

/**
 * Where the upstream CRDs and schemas are: `CRDS_DIR` if set, else `../shared/crds` beside the repository,
 * else the `.crds/` folder `npm run crds -- --fetch` downloads into. Undefined when none exists.
 */
export function findCrdsDir(repoRoot: string): string | undefined {
  const candidates = [
    process.env.CRDS_DIR,
    path.join(repoRoot, "..", "shared", "crds"),
    path.join(repoRoot, ".crds"),
  ];
  return candidates.find((dir): dir is string => !!dir && fs.existsSync(path.join(dir, "kargo")));
}
