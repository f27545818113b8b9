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
export function readCrdFile(file: string): CrdVersion[] {
  const found: CrdVersion[] = [];
  for (const doc of YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))) {
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
