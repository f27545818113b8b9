import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { SECRET, type PlannedResource, type ProgramPlan } from "./harness";

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
      // The contract's three options; ignoreChanges stays in the in-memory plan (and in --resource).
      options: {
        protect: options.protect,
        retainOnDelete: options.retainOnDelete,
        deleteBeforeReplace: options.deleteBeforeReplace,
      },
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

/**
 * Inputs that decide who can reach what, and who may do what. The summary prints them in full, never cut:
 * they are what a reviewer reads a plan for.
 */
export const exposureAndPrivilegeInputs = new Set([
  // network exposure
  "publicAccessCidrs",
  "endpointPublicAccess",
  "endpointPrivateAccess",
  "ingress",
  "egress",
  "cidrBlocks",
  "cidrIpv4",
  "cidrIpv6",
  "prefixListId",
  "referencedSecurityGroupId",
  "securityGroupId",
  "securityGroups",
  "ipProtocol",
  "fromPort",
  "toPort",
  "internal",
  "port",
  "protocol",
  "certificateArn",
  "sslPolicy",
  // identities and what they may do
  "accessEntries",
  "assumeRolePolicy",
  "policy",
  "policyArn",
  "managedPolicyArns",
  "inlinePolicies",
  "rules",
  "roleRef",
  "subjects",
  "serviceAccountName",
  // sign-in
  "callbackUrls",
  "logoutUrls",
  "allowedOauthFlows",
  "allowedOauthScopes",
  "explicitAuthFlows",
  "mfaConfiguration",
  // what Argo CD may sync from and to
  "sourceRepos",
  "destinations",
  "clusterResourceWhitelist",
  "namespaceResourceWhitelist",
]);

/** Annotations that grant something: IRSA roles, Kargo's claim mappings, the stage allowed to sync an app. */
const grantingAnnotation = /role-arn|rbac\.kargo\.akuity\.io|authorized-stage/;

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const list = (v: unknown) => (Array.isArray(v) ? v.join(",") : String(v));

/** An IAM policy document, one statement per line; undefined when `value` is not one. */
export function policyStatements(value: unknown): string[] | undefined {
  let doc = value;
  if (typeof value === "string") {
    try {
      doc = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (!isMap(doc) || doc.Statement === undefined) return undefined;
  const statements = (Array.isArray(doc.Statement) ? doc.Statement : [doc.Statement]) as Record<
    string,
    unknown
  >[];
  return statements.map((st) =>
    [
      st.Sid ? `${String(st.Sid)}:` : "",
      String(st.Effect),
      st.Action !== undefined ? list(st.Action) : `all but ${list(st.NotAction)}`,
      st.Principal !== undefined ? `by ${JSON.stringify(st.Principal)}` : "",
      st.Resource !== undefined ? `on ${list(st.Resource)}` : "",
      st.Condition !== undefined ? `if ${JSON.stringify(st.Condition)}` : "",
    ]
      .filter(Boolean)
      .join(" "),
  );
}

/** Helm values as `a.b.c = value` lines; a long text (a script) shows its first line and its size. */
export function flattenValues(values: unknown, prefix = ""): string[] {
  if (isMap(values) && Object.keys(values).length > 0) {
    return Object.entries(values).flatMap(([k, v]) => flattenValues(v, prefix ? `${prefix}.${k}` : k));
  }
  if (typeof values === "string" && values.includes("\n")) {
    const lines = values.trimEnd().split("\n");
    return [`${prefix} = ${JSON.stringify(lines[0])}... (${lines.length} lines)`];
  }
  return [`${prefix} = ${JSON.stringify(values)}`];
}

/** The lines a reviewer needs for one resource: exposure, privilege, chart values, a Secret's keys. */
export function reviewLines(r: PlannedResource): string[] {
  const lines: string[] = [];
  const isSecret = r.type === "kubernetes:core/v1:Secret";
  for (const [key, value] of Object.entries(r.inputs)) {
    if (value === undefined || value === null) continue;
    if (isSecret && (key === "data" || key === "stringData")) {
      const keys = r.secretKeys[key] ?? (isMap(value) ? Object.keys(value).sort() : []);
      lines.push(`${key} keys: ${keys.join(", ") || "(none)"} (values redacted)`);
    } else if (key === "values" && r.type.startsWith("kubernetes:helm.sh/")) {
      lines.push(...flattenValues(value, "values"));
    } else if (exposureAndPrivilegeInputs.has(key)) {
      const statements = policyStatements(value);
      if (statements) lines.push(`${key}:`, ...statements.map((st) => `  ${st}`));
      else lines.push(`${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
    }
  }
  const annotations = (r.inputs.metadata as { annotations?: Record<string, unknown> } | undefined)
    ?.annotations;
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (grantingAnnotation.test(key)) lines.push(`annotation ${key}: ${String(value)}`);
  }
  const spec = r.inputs.spec as Record<string, unknown> | undefined;
  if (isMap(spec)) {
    for (const key of [
      "sourceRepos",
      "destinations",
      "clusterResourceWhitelist",
      "namespaceResourceWhitelist",
    ])
      if (spec[key] !== undefined) lines.push(`spec.${key}: ${JSON.stringify(spec[key])}`);
    if (spec.serviceAccountName !== undefined)
      lines.push(`spec.serviceAccountName: ${String(spec.serviceAccountName)}`);
  }
  return lines;
}

/** The settings worth seeing at a glance: scalar inputs and small lists, never nested documents. */
function keySettings(r: PlannedResource): string {
  const first = ["chart", "version", "namespace"];
  const parts = Object.entries(r.inputs)
    .sort(([a], [b]) => Number(first.includes(b)) - Number(first.includes(a)))
    .filter(
      ([k, v]) =>
        !["tags", "metadata", "apiVersion", "kind"].includes(k) &&
        !exposureAndPrivilegeInputs.has(k) &&
        v !== undefined &&
        v !== null,
    )
    .filter(([, v]) => typeof v !== "object" || (Array.isArray(v) && v.every((x) => typeof x !== "object")))
    .filter(([, v]) => v !== SECRET)
    .slice(0, 6)
    .map(([k, v]) => `${k}=${short(v)}`);
  const meta = r.inputs.metadata as { name?: string; namespace?: string } | undefined;
  if (meta?.name) parts.unshift(`${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`);
  if (r.options.protect) parts.push("protected");
  return parts.join("  ");
}

/**
 * A readable summary: resources grouped by type with their key settings and, in full, everything that decides
 * exposure and privilege; then the outputs.
 */
export function summarize(plan: ProgramPlan): string {
  const lines = [`== ${plan.project} (stack ${plan.stack}): ${plan.resources.length} resources`];
  const byType = new Map<string, PlannedResource[]>();
  for (const r of plan.resources) byType.set(r.type, [...(byType.get(r.type) ?? []), r]);
  for (const [type, resources] of [...byType].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`  ${type} (${resources.length})`);
    for (const r of resources) {
      lines.push(`    ${r.name}  ${keySettings(r)}`.trimEnd());
      lines.push(...reviewLines(r).map((line) => `      ${line}`));
    }
  }
  lines.push("  outputs:");
  for (const [k, v] of Object.entries(plan.outputs)) lines.push(`    ${k}: ${short(v)}`);
  return lines.join("\n");
}

/** Every input of the resources named `name` (resource name, or the object's metadata name), secrets redacted. */
export function describeResource(plan: ProgramPlan, name: string): string | undefined {
  const found = plan.resources.filter(
    (r) =>
      r.name === name ||
      r.urn === name ||
      (r.inputs.metadata as { name?: string } | undefined)?.name === name,
  );
  if (found.length === 0) return undefined;
  return found
    .map((r) =>
      YAML.stringify(
        {
          urn: r.urn,
          type: r.type,
          parent: r.parent,
          provider: r.provider,
          dependsOn: r.dependsOn,
          options: r.options,
          inputs: r.inputs,
        },
        { lineWidth: 0 },
      ),
    )
    .join("---\n");
}
