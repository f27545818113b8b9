// What a plan diff means to a reviewer, under the four headings they decide on: exposure (what becomes
// reachable from where), privilege (who or what may do what), loss (what is deleted or replaced, protected
// first) and cost (the monthly delta of the cost model). A change is under a heading when the classifier the
// in-cluster verification runs puts it in that class (diff-classes.ts), so a preview stops on nothing the
// diff did not head that way; the platform's own types the classifier does not know (Argo CD, Kargo,
// Cognito, GitHub) are headed by the rules here too. Pure functions over a PlanDiff and its two plans.
import { classesOfChange, whyOfChange, type RiskClass } from "./diff-classes";
import { monthlyCost, cents, type CostEstimate } from "./costs";
import type { ChangeKind, PlanDiff, PlanResource, ProjectPlan, ResourceChange } from "./diff";
import { policyStatements } from "./output";
import { LEFT_IN_CLOUD } from "../../../kargo/verification/classify.mjs";

export interface Finding {
  project: string;
  kind: ChangeKind;
  urn: string;
  type: string;
  name: string;
  /** What changed that matters under this heading, one fact a line. */
  lines: string[];
  /** Short warnings a reviewer must not miss ("open to the world", "protected"). */
  flags: string[];
  /**
   * The change's classes as the verification's classifier gives them: what a preview with it stops on in an
   * environment that stops on any of them.
   */
  classes: RiskClass[];
}

export interface CostLine {
  item: string;
  before: number;
  after: number;
  delta: number;
}

export interface CostDelta {
  before: number;
  after: number;
  delta: number;
  lines: CostLine[];
  unpriced: string[];
  /** The changes the classifier calls cost (new or resized billed capacity), priced or not. */
  findings: Finding[];
}

export interface ReviewSummary {
  exposure: Finding[];
  privilege: Finding[];
  loss: Finding[];
  cost: CostDelta;
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const WORLD = ["0.0.0.0/0", "::/0"];

/** Inputs that decide who can reach what. */
const exposureKeys = new Set([
  "publicAccessCidrs",
  "endpointPublicAccess",
  "endpointPrivateAccess",
  "ingress",
  "cidrBlocks",
  "ipv6CidrBlocks",
  "cidrIpv4",
  "cidrIpv6",
  "prefixListId",
  "referencedSecurityGroupId",
  "fromPort",
  "toPort",
  "internal",
  "port",
  "protocol",
  "callbackUrls",
  "logoutUrls",
  "url",
]);
const exposureTypes =
  /^(aws:ec2\/securityGroup|aws:vpc\/securityGroup(Ingress|Egress)Rule|aws:lb\/(listener|loadBalancer)|eks:index:Cluster|kubernetes:core\/v1:Service|kubernetes:networking\.k8s\.io\/v1:Ingress|github:index\/repositoryWebhook|aws:cognito\/userPoolClient)/;

/** Inputs that decide who or what may do what. */
const privilegeKeys = new Set([
  "assumeRolePolicy",
  "policy",
  "policyArn",
  "managedPolicyArns",
  "inlinePolicies",
  "accessEntries",
  "rules",
  "roleRef",
  "subjects",
  "serviceAccountName",
  "sourceRepos",
  "destinations",
  "clusterResourceWhitelist",
  "namespaceResourceWhitelist",
  "promotionPolicies",
  "mfaConfiguration",
]);
const privilegeTypes =
  /^(aws:iam\/|kubernetes:rbac\.authorization\.k8s\.io\/|kubernetes:argoproj\.io\/v1alpha1:AppProject|kubernetes:kargo\.akuity\.io\/v1alpha1:(ProjectConfig|Project)|aws:cognito\/userGroup)/;
/** Annotations that grant something: IRSA roles, Kargo's claim mappings, the stage allowed to sync an app. */
const grantingAnnotation = /role-arn|rbac\.kargo\.akuity\.io|authorized-stage/;

const topKey = (path: string) => path.replace(/^spec\./, "").replace(/[.[].*$/, "");
const isGrantingPath = (path: string) =>
  path.startsWith("metadata.annotations.") && grantingAnnotation.test(path);

/** A value as one line: strings as they are, documents as JSON, cut at 160 characters. */
export function show(v: unknown): string {
  if (v === undefined) return "(none)";
  const text = typeof v === "string" ? v : JSON.stringify(v);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** Every way this resource accepts traffic from the whole internet, one line each. */
export function openToWorld(r: PlanResource | undefined): string[] {
  if (!r) return [];
  const i = r.inputs;
  const found: string[] = [];
  const ports = (rule: Record<string, unknown>) =>
    `${String(rule.protocol ?? rule.ipProtocol)} ${String(rule.fromPort)}${rule.toPort !== rule.fromPort ? `-${String(rule.toPort)}` : ""}`;
  if (r.type === "aws:ec2/securityGroup:SecurityGroup" && Array.isArray(i.ingress)) {
    for (const rule of i.ingress.filter(isMap)) {
      const cidrs = [...((rule.cidrBlocks as string[]) ?? []), ...((rule.ipv6CidrBlocks as string[]) ?? [])];
      for (const cidr of cidrs.filter((c) => WORLD.includes(c))) found.push(`${ports(rule)} from ${cidr}`);
    }
  }
  if (r.type === "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule") {
    for (const cidr of [i.cidrIpv4, i.cidrIpv6].filter((c) => WORLD.includes(c as string)))
      found.push(`${ports(i)} from ${String(cidr)}`);
  }
  if (r.type === "aws:ec2/securityGroupRule:SecurityGroupRule" && i.type === "ingress") {
    for (const cidr of ((i.cidrBlocks as string[]) ?? []).filter((c) => WORLD.includes(c)))
      found.push(`${ports(i)} from ${cidr}`);
  }
  if (r.type === "eks:index:Cluster" && i.endpointPublicAccess !== false) {
    for (const cidr of ((i.publicAccessCidrs as string[]) ?? []).filter((c) => WORLD.includes(c)))
      found.push(`Kubernetes API endpoint from ${cidr}`);
  }
  return found;
}

/** An IAM policy document's statements that one side has and the other has not, as `+`/`-` lines. */
function statementChanges(before: unknown, after: unknown): string[] | undefined {
  const a = before === undefined ? [] : policyStatements(before);
  const b = after === undefined ? [] : policyStatements(after);
  if (!a || !b) return undefined;
  return [
    ...a.filter((s) => !b.includes(s)).map((s) => `- ${s}`),
    ...b.filter((s) => !a.includes(s)).map((s) => `+ ${s}`),
  ];
}

/** The lines under one heading for a change: every relevant input of an added or removed resource. */
function relevantLines(change: ResourceChange, keys: Set<string>): string[] {
  const lines: string[] = [];
  const describeWhole = (r: PlanResource, sign: string) => {
    for (const [key, value] of Object.entries(r.inputs)) {
      if (!keys.has(key) || value === undefined || value === null) continue;
      const statements = statementChanges(sign === "-" ? value : undefined, sign === "+" ? value : undefined);
      if (statements) lines.push(`${key}:`, ...statements.map((s) => `  ${s}`));
      else lines.push(`${key}: ${show(value)}`);
    }
    const spec = r.inputs.spec;
    if (isMap(spec))
      for (const [key, value] of Object.entries(spec))
        if (keys.has(key)) lines.push(`spec.${key}: ${show(value)}`);
    const annotations = (r.inputs.metadata as { annotations?: Record<string, unknown> } | undefined)
      ?.annotations;
    if (keys === privilegeKeys)
      for (const [key, value] of Object.entries(annotations ?? {}))
        if (grantingAnnotation.test(key)) lines.push(`annotation ${key}: ${show(value)}`);
  };
  if (change.kind === "add") describeWhole(change.after!, "+");
  else if (change.kind === "remove") describeWhole(change.before!, "-");
  else {
    const documents = new Set<string>();
    for (const p of change.properties) {
      const top = topKey(p.path);
      // The input itself, or the field of a nested block that decides it (a webhook's configuration.url).
      const leaf = p.path
        .replace(/\[\d+\]/g, "")
        .split(".")
        .pop()!;
      if (!keys.has(top) && !keys.has(leaf) && !(keys === privilegeKeys && isGrantingPath(p.path))) continue;
      const root = p.path.replace(/[.[].*$/, "");
      const statements = statementChanges(change.before!.inputs[root], change.after!.inputs[root]);
      if (statements && (root === "policy" || root === "assumeRolePolicy")) {
        if (!documents.has(root)) lines.push(`${root}:`, ...statements.map((s) => `  ${s}`));
        documents.add(root);
      } else lines.push(`${p.path}: ${show(p.before)} → ${show(p.after)}`);
    }
  }
  return lines;
}

function finding(project: string, change: ResourceChange, lines: string[], flags: string[]): Finding {
  const { kind, urn, type, name } = change;
  return { project, kind, urn, type, name, lines, flags, classes: classesOfChange(change) };
}

/**
 * The finding under heading `cls`: the heading's own (`of`), with the classifier's reason first when it puts
 * the change in that class; or, when only the classifier does, its reason and the changed inputs.
 */
function classified(
  cls: RiskClass,
  of: (project: string, c: ResourceChange) => Finding | undefined,
): (project: string, c: ResourceChange) => Finding | undefined {
  return (project, change) => {
    const own = of(project, change);
    const why = whyOfChange(change, cls);
    if (why.length === 0) return own;
    const lines = own?.lines.length
      ? own.lines
      : change.properties.map((p) => `${p.path}: ${show(p.before)} → ${show(p.after)}`);
    return finding(project, change, [...why.map((w) => `${cls}: ${w}`), ...lines], own?.flags ?? []);
  };
}

function exposureOf(project: string, change: ResourceChange): Finding | undefined {
  const lines = relevantLines(change, exposureKeys);
  if (lines.length === 0 && !(exposureTypes.test(change.type) && change.kind !== "update")) return undefined;
  const before = openToWorld(change.before);
  const opened = change.kind === "remove" ? [] : openToWorld(change.after).filter((o) => !before.includes(o));
  return finding(
    project,
    change,
    lines,
    opened.map((o) => `open to the world: ${o}`),
  );
}

function privilegeOf(project: string, change: ResourceChange): Finding | undefined {
  const lines = relevantLines(change, privilegeKeys);
  if (lines.length === 0 && !(privilegeTypes.test(change.type) && change.kind !== "update")) return undefined;
  const widened = lines.filter((l) => /^\s*\+ .*Allow/.test(l) && / on (\*|.*,\*)(\s|$)/.test(l));
  return finding(project, change, lines, widened.length > 0 ? ["allows actions on every resource (*)"] : []);
}

function lossOf(project: string, change: ResourceChange): Finding | undefined {
  // The classifier decides, as in the Job: a provider's removal, or a retained resource's (left in the cloud,
  // as the change list says), is no loss.
  if (!classesOfChange(change).includes("loss")) return undefined;
  const was = change.before!;
  const lines: string[] = [];
  const flags: string[] = [];
  if (was.options.protect) {
    flags.push("protected");
    lines.push(
      change.kind === "remove"
        ? "protected: Pulumi refuses to delete it until someone runs `pulumi state unprotect` on purpose"
        : "protected: Pulumi refuses to replace it until someone runs `pulumi state unprotect` on purpose",
    );
  }
  if (change.kind === "replace") {
    lines.push(`replaced because ${change.replaceReasons.join(", ")} changed`);
    for (const reason of change.replaceReasons) {
      const p = change.properties.find((c) => c.path === reason || c.path.startsWith(`${reason}.`));
      if (p) lines.push(`${p.path}: ${show(p.before)} → ${show(p.after)}`);
    }
    lines.push(
      change.after!.options.deleteBeforeReplace
        ? "the old one is deleted before the new one exists (deleteBeforeReplace)"
        : "the new one is created first, then the old one deleted",
    );
  }
  if (was.options.retainOnDelete) lines.push(`the old one is ${LEFT_IN_CLOUD}`);
  return finding(project, change, lines, flags);
}

/** An item's identity across a count change ("t4g.medium node × 2" and "× 3" are the same line). */
const costKey = (item: string) => item.replace(/× \d+/g, "×");

/** The monthly cost before and after, item by item (an item either side lacks counts as $0 there). */
export function costDelta(before: ProjectPlan[], after: ProjectPlan[], findings: Finding[] = []): CostDelta {
  const a: CostEstimate = monthlyCost(before.flatMap((p) => p.resources));
  const b: CostEstimate = monthlyCost(after.flatMap((p) => p.resources));
  const keys = [...new Set([...a.items, ...b.items].map((i) => costKey(i.item)))];
  const side = (e: CostEstimate, key: string) => e.items.filter((i) => costKey(i.item) === key);
  const sum = (items: { monthly: number }[]) => cents(items.reduce((s, i) => s + i.monthly, 0));
  const lines = keys
    .map((key) => {
      const [was, now] = [side(a, key), side(b, key)];
      const names = [...new Set([...was, ...now].map((i) => i.item))];
      return {
        item: names.join(" → "),
        before: sum(was),
        after: sum(now),
        delta: cents(sum(now) - sum(was)),
      };
    })
    .filter((l) => l.delta !== 0);
  return {
    before: a.total,
    after: b.total,
    delta: cents(b.total - a.total),
    lines,
    unpriced: b.unpriced.filter((u) => !a.unpriced.includes(u)),
    findings,
  };
}

/** The four headings of a plan diff. */
export function reviewSummary(diff: PlanDiff, before: ProjectPlan[], after: ProjectPlan[]): ReviewSummary {
  const collect = (of: (project: string, c: ResourceChange) => Finding | undefined) =>
    diff.projects.flatMap((p) =>
      p.changes.map((c) => of(p.project, c)).filter((f): f is Finding => f !== undefined),
    );
  const loss = collect(classified("loss", lossOf)).sort(
    (x, y) => Number(y.flags.includes("protected")) - Number(x.flags.includes("protected")),
  );
  return {
    exposure: collect(classified("exposure", exposureOf)),
    privilege: collect(classified("privilege", privilegeOf)),
    loss,
    cost: costDelta(before, after, collect(classified("cost", () => undefined))),
  };
}
