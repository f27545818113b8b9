// The rollback request: the record of who asked to take an environment back (or to reconcile its drift), and
// why, which a rollback's promotions carry into the stage branch record. One ConfigMap per environment in the
// Kargo project's namespace, written through Kargo's API as the person (`kargo update configmap`): Kargo
// authorizes the call by asking the API server whether a ServiceAccount the person's Cognito groups map to may
// `get` and `update` that ConfigMap, by name, then writes it with its own ServiceAccount (akuity/kargo v1.11.2
// pkg/server/patch_config_map_v1alpha1.go, pkg/server/kubernetes/client.go getAuthorizedClient). So RBAC on
// those ServiceAccounts decides who may ask, and the request's `by` and `message` are as the requester stated
// them: who promoted each stage is what Kargo itself records (the promotion's actor, `promotedBy`).
import { denyBinding, denyPolicy, forbidden, inNamespace } from "./admission-objects";
import { celLiteral } from "./cel";
import { approverRoles, deciderRoles, environmentGates, environmentPromoters } from "./rbac";
import { serviceAccountUser } from "./events-admission";
import { rollbackRequestName } from "./rollback";
import { riskPolicy, type Pipeline } from "./schema";

/** The request's ConfigMap for `environment` (named where the rollback is planned). */
export { rollbackRequestName };

/** What a request holds, all strings (JSON for `from` and `stages`); every one is required. */
export const ROLLBACK_REQUEST_FIELDS = ["kind", "to", "from", "stages", "by", "message", "at"] as const;

/** A request is a rollback to older Freight, or the current Freight again (drift brought home). */
export const ROLLBACK_REQUEST_KINDS = ["rollback", "reconcile"] as const;

/**
 * The groups that may ask for an environment's rollback: its deciders (who let its update through) and its
 * promoters (who let Freight into it), by their Cognito group names. None for an environment
 * with neither: the kargo project creates no request for it.
 */
export const rollbackRequesters = (p: Pipeline, environment: string): string[] =>
  [
    ...new Set([
      ...riskPolicy(p.environments[environment]!).deciders,
      ...environmentPromoters(p, environment),
    ]),
  ].sort();

/**
 * The Kargo role ServiceAccounts (in the project's namespace) an environment's requesters map to: its
 * deciders' and the approvers' of the gates its previews take Freight from (lib/pipeline/rbac.ts).
 */
export const rollbackRequestAccounts = (p: Pipeline, environment: string): string[] => {
  const gates = new Set(environmentGates(p, environment));
  return [
    ...deciderRoles(p).filter((r) => r.environment === environment),
    ...approverRoles(p).filter((r) => gates.has(r.gate)),
  ]
    .map((r) => r.serviceAccount.name)
    .sort();
};

export interface RollbackRequestRole {
  environment: string;
  name: string;
  /** The Kargo role ServiceAccounts, which Kargo's API asks RBAC about for the person it acts for. */
  serviceAccounts: string[];
  /** The requester groups as Kubernetes groups: for a cluster whose API server knows people by them. */
  groups: string[];
  rules: { apiGroups: string[]; resources: string[]; resourceNames: string[]; verbs: string[] }[];
}

/**
 * Per environment with requesters: a Role naming its request, which the kargo project creates empty (RBAC
 * cannot name an object on create, so nobody but the project's deployer creates it), bound to the Kargo role
 * ServiceAccounts its requesters map to, and to the requester groups themselves.
 */
export function rollbackRequestRoles(p: Pipeline): RollbackRequestRole[] {
  return Object.keys(p.environments).flatMap((environment) => {
    const groups = rollbackRequesters(p, environment);
    if (groups.length === 0) return [];
    return [
      {
        environment,
        name: `rollback-request-${environment}`,
        serviceAccounts: rollbackRequestAccounts(p, environment),
        groups,
        rules: [
          {
            apiGroups: [""],
            resources: ["configmaps"],
            resourceNames: [rollbackRequestName(environment)],
            verbs: ["get", "patch", "update"],
          },
        ],
      },
    ];
  });
}

/** The policy (and binding) that judges rollback requests. */
export const rollbackRequestAdmissionName = (p: Pick<Pipeline, "project">) =>
  `${p.project}-rollback-requests`;

const list = (xs: readonly string[]) => `[${xs.map(celLiteral).join(", ")}]`;

/** Kargo's API server, which writes a request for the person it authorized (the chart's ServiceAccount name). */
export const kargoApiUser = (kargoNamespace: string) => serviceAccountUser(kargoNamespace, "kargo-api");

/**
 * The admission policy and binding: in the project's namespace, a write that changes the data of
 * `rollback-<environment>` of an environment of the pipeline comes from Kargo's API server (which RBAC on the
 * person's Kargo role ServiceAccounts authorized) or from a member of the environment's requester groups at the
 * API server itself, always with every field and a known kind, and for such a member with `by` their own user
 * name. Creating it empty (the kargo project does) and changing its metadata alone pass; deleting it is RBAC's
 * (nobody's but an administrator's). Every other ConfigMap passes untouched.
 */
export function rollbackRequestAdmission(p: Pipeline, kargoNamespace: string) {
  const name = rollbackRequestAdmissionName(p);
  const environments = Object.keys(p.environments);
  const requesters = Object.fromEntries(
    environments.map((env) => [env, rollbackRequesters(p, env)] as const).filter(([, g]) => g.length > 0),
  );
  const prefix = rollbackRequestName("");
  const kargo = kargoApiUser(kargoNamespace);
  const policy = denyPolicy(
    p,
    name,
    [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"] }],
    {
      variables: [
        { name: "name", expression: "object.metadata.?name.orValue('')" },
        {
          name: "environment",
          expression: `variables.name.startsWith(${celLiteral(prefix)}) ? variables.name.substring(${prefix.length}) : ''`,
        },
        { name: "request", expression: `variables.environment in ${list(environments)}` },
        {
          name: "requesters",
          expression: `{${Object.entries(requesters)
            .map(([env, groups]) => `${celLiteral(env)}: ${list(groups)}`)
            .join(", ")}}`,
        },
        { name: "groups", expression: "has(request.userInfo.groups) ? request.userInfo.groups : []" },
        {
          name: "member",
          expression:
            "variables.environment in variables.requesters && variables.groups.exists(g, g in variables.requesters[variables.environment])",
        },
        { name: "kargo", expression: `request.userInfo.username == ${celLiteral(kargo)}` },
        { name: "data", expression: "object.?data.orValue({})" },
        {
          name: "changed",
          expression:
            "variables.request && (request.operation == 'CREATE' ? size(variables.data) > 0 : oldObject.?data.orValue({}) != variables.data)",
        },
        {
          name: "missing",
          expression: `${list(ROLLBACK_REQUEST_FIELDS)}.filter(f, !(f in variables.data) || variables.data[f] == '')`,
        },
      ],
      validations: [
        {
          ...forbidden(
            "!variables.changed || variables.kargo || variables.member",
            `metadata.name: a rollback request ${prefix}<environment> in namespace ${p.project} is written through Kargo by that environment's deciders or promoters`,
          ),
          messageExpression: `'metadata.name: ' + variables.name + ' in namespace ${p.project} asks to roll environment ' + variables.environment + ' back; it is written through Kargo (kargo update configmap, npm run rollback) by its deciders or promoters (' + (variables.environment in variables.requesters ? variables.requesters[variables.environment].join(', ') : 'none: it has neither') + '), and ' + request.userInfo.username + ' is neither Kargo nor in one of them'`,
        },
        {
          ...forbidden(
            "!variables.changed || size(variables.missing) == 0",
            `data: a rollback request needs ${ROLLBACK_REQUEST_FIELDS.join(", ")}`,
          ),
          messageExpression: `'data: a rollback request needs ${ROLLBACK_REQUEST_FIELDS.join(", ")}; missing or empty: ' + variables.missing.join(', ')`,
        },
        forbidden(
          `!variables.changed || (variables.data.?kind.orValue('') in ${list(ROLLBACK_REQUEST_KINDS)})`,
          `data.kind: a rollback request's kind is ${ROLLBACK_REQUEST_KINDS.join(" or ")}`,
        ),
        // Through Kargo, `by` is as the requester stated it (Kargo writes as itself); a person the API server
        // knows signs with their own name.
        {
          ...forbidden(
            "!variables.changed || variables.kargo || variables.data.?by.orValue('') == request.userInfo.username",
            "data.by: a rollback request written at the API server names who wrote it, as their Kubernetes user name",
          ),
          messageExpression:
            "'data.by: a rollback request written at the API server names who wrote it: ' + request.userInfo.username + ', not ' + variables.data.?by.orValue('nobody')",
        },
      ],
    },
  );
  return [policy, denyBinding(p, name, inNamespace(p.project))];
}
