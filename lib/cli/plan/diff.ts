// The change between two offline plans (`npm run plan -- --diff <ref>`): which resources each project adds,
// removes, replaces or updates, and which inputs change. Pure functions over two sets of resources.json, so
// the diff of any two commits is computed the same way, and tested without git or a program run.
import { replaceReasons, type PropertyChange } from "./diff-replace";

/** One resource as `npm run plan -- --out` writes it to resources.json. */
export interface PlanResource {
  urn: string;
  type: string;
  name: string;
  parent: string | null;
  provider?: string | null;
  dependsOn?: string[];
  inputs: Record<string, unknown>;
  options: { protect: boolean; retainOnDelete: boolean; deleteBeforeReplace: boolean };
}

/** One project's resources.json. */
export interface ProjectPlan {
  project: string;
  stack: string;
  resources: PlanResource[];
  outputs?: Record<string, unknown>;
}

export type ChangeKind = "add" | "remove" | "replace" | "update";

export type { PropertyChange };

export interface ResourceChange {
  kind: ChangeKind;
  urn: string;
  type: string;
  name: string;
  parent: string | null;
  /** The resource as it is before the change (remove, replace, update) and after it (add, replace, update). */
  before?: PlanResource;
  after?: PlanResource;
  properties: PropertyChange[];
  /** For a replacement: the changed inputs that force it, and why. */
  replaceReasons: string[];
}

export interface ProjectDiff {
  project: string;
  changes: ResourceChange[];
}

export interface PlanDiff {
  projects: ProjectDiff[];
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON document held in a string input (an IAM policy), parsed so that its changes show field by field. */
function asDocument(v: unknown): unknown {
  if (typeof v !== "string" || !/^\s*[{[]/.test(v)) return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The string at a dotted path of a document (`stageSelector.name`), or undefined. */
function valueAt(doc: unknown, key: string): string | undefined {
  let v: unknown = doc;
  for (const k of key.split(".")) v = isMap(v) ? v[k] : undefined;
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Fields that name an item of a list: its own, or the name of what it selects or refers to. */
const NAMING_FIELDS = ["name", "key", "Sid", "id"];

/**
 * The field that names every item of both lists, distinct within each (a Kargo promotion policy's
 * `stageSelector.name`, an argument's `name`, a statement's `Sid`), or undefined: such lists then compare
 * item by item. The candidates are the naming fields, then each of them in a nested document.
 */
export function listKey(a: unknown[], b: unknown[]): string | undefined {
  const items = [...a, ...b];
  if (items.length === 0 || !items.every(isMap)) return undefined;
  const nested = Object.keys(items[0] as Record<string, unknown>).flatMap((field) =>
    NAMING_FIELDS.map((n) => `${field}.${n}`),
  );
  const distinct = (l: unknown[], key: string) => new Set(l.map((x) => valueAt(x, key))).size === l.length;
  return [...NAMING_FIELDS, ...nested].find(
    (key) => items.every((x) => valueAt(x, key) !== undefined) && distinct(a, key) && distinct(b, key),
  );
}

/** Every leaf that differs between two input values, with its path (`spec.rules[0].cidrBlocks`). */
export function propertyChanges(before: unknown, after: unknown, path = ""): PropertyChange[] {
  const a = asDocument(before);
  const b = asDocument(after);
  if (same(a, b)) return [];
  const at = (key: string) => (path ? `${path}.${key}` : key);
  if (isMap(a) && isMap(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => propertyChanges(a[k], b[k], at(k)));
  }
  // Lists of documents (rules, statements, containers) compare item by item; lists of plain values as a whole.
  // Items that all carry a name are matched by it, so a reorder is no change and a change says which item.
  if (Array.isArray(a) && Array.isArray(b) && [...a, ...b].some((x) => typeof x === "object" && x !== null)) {
    const key = listKey(a, b);
    if (key) {
      const byKey = (l: unknown[]) => new Map(l.map((x) => [valueAt(x, key)!, x]));
      const [was, now] = [byKey(a), byKey(b)];
      const keys = [...was.keys(), ...[...now.keys()].filter((k) => !was.has(k))];
      return keys.flatMap((k) => propertyChanges(was.get(k), now.get(k), `${path}[${key}=${k}]`));
    }
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) =>
      propertyChanges(a[i], b[i], `${path}[${i}]`),
    ).flat();
  }
  const change: PropertyChange = { path: path || "(value)" };
  if (a !== undefined) change.before = a;
  if (b !== undefined) change.after = b;
  return [change];
}

/** How each project's resources change from `before` to `after`, matched by URN as the engine does. */
export function diffPlans(before: ProjectPlan[], after: ProjectPlan[]): PlanDiff {
  const projects = [...new Set([...after.map((p) => p.project), ...before.map((p) => p.project)])];
  return {
    projects: projects.map((project) => {
      const old = new Map(
        (before.find((p) => p.project === project)?.resources ?? []).map((r) => [r.urn, r]),
      );
      const now = new Map((after.find((p) => p.project === project)?.resources ?? []).map((r) => [r.urn, r]));
      const changes: ResourceChange[] = [];
      const base = (r: PlanResource) => ({ urn: r.urn, type: r.type, name: r.name, parent: r.parent });
      for (const [urn, r] of now) {
        const was = old.get(urn);
        if (!was) {
          changes.push({ ...base(r), kind: "add", after: r, properties: [], replaceReasons: [] });
          continue;
        }
        const properties = propertyChanges(was.inputs, r.inputs);
        const optionChanges = propertyChanges(was.options, r.options, "options");
        if (properties.length === 0 && optionChanges.length === 0) continue;
        const reasons = replaceReasons(r.type, properties, was.inputs, r.inputs);
        changes.push({
          ...base(r),
          kind: reasons.length > 0 ? "replace" : "update",
          before: was,
          after: r,
          properties: [...properties, ...optionChanges],
          replaceReasons: reasons,
        });
      }
      for (const [urn, r] of old) {
        if (!now.has(urn))
          changes.push({ ...base(r), kind: "remove", before: r, properties: [], replaceReasons: [] });
      }
      return { project, changes };
    }),
  };
}

/** A resource change with the changes of its component children under it, as Pulumi shows the tree. */
export interface ChangeNode {
  /** The component or resource; a parent that did not change itself has no `change`. */
  urn: string;
  name: string;
  type: string;
  change?: ResourceChange;
  children: ChangeNode[];
}

/**
 * The project's changes as a tree by parent URN: a component's children under it, with the unchanged
 * components on the way (from either plan) to say where a change sits.
 */
export function changeTree(diff: ProjectDiff, before?: ProjectPlan, after?: ProjectPlan): ChangeNode[] {
  const known = new Map<string, PlanResource>();
  for (const r of [...(before?.resources ?? []), ...(after?.resources ?? [])]) known.set(r.urn, r);
  const nodes = new Map<string, ChangeNode>();
  const roots: ChangeNode[] = [];
  const nodeFor = (urn: string, name: string, type: string): ChangeNode => {
    let node = nodes.get(urn);
    if (!node) {
      node = { urn, name, type, children: [] };
      nodes.set(urn, node);
      const parent = known.get(urn)?.parent ?? null;
      const parentResource = parent ? known.get(parent) : undefined;
      if (parentResource) nodeFor(parent!, parentResource.name, parentResource.type).children.push(node);
      else roots.push(node);
    }
    return node;
  };
  for (const change of diff.changes) nodeFor(change.urn, change.name, change.type).change = change;
  return roots;
}
