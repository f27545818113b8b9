import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import type { PlannedResource, ProgramPlan } from "./harness";

/** Resource types that are not objects applied to the cluster as they stand. */
const notDirectObject = /^(pulumi:providers:|kubernetes:helm\.sh\/|kubernetes:yaml\/|kubernetes:kustomize\/)/;

/** Every Kubernetes object a project declares directly, in the form it would be applied. */
export function kubernetesObjects(plan: ProgramPlan): Record<string, unknown>[] {
  return plan.resources
    .filter((r) => r.type.startsWith("kubernetes:") && !notDirectObject.test(r.type))
    .map((r) => r.inputs);
}

/** Writes `<dir>/<project>/resources.json` and `manifests.yaml` (the offline-plan contract). */
export function writePlan(dir: string, plan: ProgramPlan): void {
  const projectDir = path.join(dir, plan.project);
  fs.mkdirSync(projectDir, { recursive: true });
  const resources = plan.resources.map(
    ({ urn, type, name, parent, provider, dependsOn, inputs, options }) => ({
      urn,
      type,
      name,
      parent,
      provider,
      dependsOn,
      inputs,
      options,
    }),
  );
  fs.writeFileSync(
    path.join(projectDir, "resources.json"),
    JSON.stringify({ project: plan.project, stack: plan.stack, resources, outputs: plan.outputs }, null, 2) +
      "\n",
  );
  const objects = kubernetesObjects(plan);
  fs.writeFileSync(
    path.join(projectDir, "manifests.yaml"),
    objects.map((o) => YAML.stringify(o, { lineWidth: 0 })).join("---\n"),
  );
}

const short = (value: unknown): string => {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 70 ? `${text.slice(0, 67)}...` : text;
};

/** The settings worth seeing at a glance: scalar inputs and small lists, never nested documents. */
function keySettings(r: PlannedResource): string {
  const first = ["chart", "version", "namespace"];
  const parts = Object.entries(r.inputs)
    .sort(([a], [b]) => Number(first.includes(b)) - Number(first.includes(a)))
    .filter(
      ([k, v]) => !["tags", "metadata", "apiVersion", "kind"].includes(k) && v !== undefined && v !== null,
    )
    .filter(([, v]) => typeof v !== "object" || (Array.isArray(v) && v.every((x) => typeof x !== "object")))
    .slice(0, 6)
    .map(([k, v]) => `${k}=${short(v)}`);
  const meta = r.inputs.metadata as { name?: string; namespace?: string } | undefined;
  if (meta?.name) parts.unshift(`${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`);
  if (r.options.protect) parts.push("protected");
  return parts.join("  ");
}

/** A readable summary: resources grouped by type with their key settings, then the outputs. */
export function summarize(plan: ProgramPlan): string {
  const lines = [`== ${plan.project} (stack ${plan.stack}): ${plan.resources.length} resources`];
  const byType = new Map<string, PlannedResource[]>();
  for (const r of plan.resources) byType.set(r.type, [...(byType.get(r.type) ?? []), r]);
  for (const [type, resources] of [...byType].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`  ${type} (${resources.length})`);
    for (const r of resources) lines.push(`    ${r.name}  ${keySettings(r)}`.trimEnd());
  }
  lines.push("  outputs:");
  for (const [k, v] of Object.entries(plan.outputs)) lines.push(`    ${k}: ${short(v)}`);
  return lines.join("\n");
}
