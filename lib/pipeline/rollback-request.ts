// The rollback request: the record of who asked to take an environment back (or to reconcile its drift), and
// why, which a rollback's promotions carry into the stage branch record. One ConfigMap per environment in the
// Kargo project's namespace, written by the person who asks, as the API server identifies them: their
// Kubernetes user name and groups. Kargo's own API cannot write it for them: it writes ConfigMaps with its own
// ServiceAccount (akuity/kargo v1.11.2 pkg/server/create_config_map_v1alpha1.go through
// pkg/server/kubernetes/client.go Create, the internal client), so no policy could tell who asked.
import { denyBinding, denyPolicy, forbidden, inNamespace } from "./admission-objects";
import { celLiteral } from "./cel";
import { environmentPromoters } from "./rbac";
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
 * promoters (who let Freight into it), as the API server sees a person's groups. None for an environment
 * with neither: its request is refused to everyone.
 */
export const rollbackRequesters = (p: Pipeline, environment: string): string[] =>
  [
    ...new Set([
      ...riskPolicy(p.environments[environment]!).deciders,
      ...environmentPromoters(p, environment),
    ]),
  ].sort();

export interface RollbackRequestRole {
  environment: string;
  name: string;
  groups: string[];
  rules: { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }[];
}

/**
 * Per environment with requesters: a Role they are bound to (as Kubernetes groups) in the project's
 * namespace. Reading, changing and deleting name the request; `create` cannot name it (the API server
 * authorizes a create before the object has a name, so RBAC has no resourceNames there): the admission
 * policy below is what holds their `create` to their own environment's request.
 */
export function rollbackRequestRoles(p: Pipeline): RollbackRequestRole[] {
  return Object.keys(p.environments).flatMap((environment) => {
    const groups = rollbackRequesters(p, environment);
    if (groups.length === 0) return [];
    return [
      {
        environment,
        name: `rollback-request-${environment}`,
        groups,
        rules: [
          { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
          {
            apiGroups: [""],
            resources: ["configmaps"],
            resourceNames: [rollbackRequestName(environment)],
            verbs: ["get", "update", "patch", "delete"],
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

/**
 * The admission policy and binding: in the project's namespace, `rollback-<environment>` of an environment of
 * the pipeline is created, changed or deleted only by a member of that environment's requester groups; a
 * create or change only with every field, a known kind, and `by` the writer's own user name. The requester
 * groups create no other ConfigMap there. Every other write of a ConfigMap passes untouched.
 */
export function rollbackRequestAdmission(p: Pipeline) {
  const name = rollbackRequestAdmissionName(p);
  const environments = Object.keys(p.environments);
  const requesters = Object.fromEntries(
    environments.map((env) => [env, rollbackRequesters(p, env)] as const).filter(([, g]) => g.length > 0),
  );
  const everyRequester = [...new Set(Object.values(requesters).flat())].sort();
  const prefix = rollbackRequestName("");
  const policy = denyPolicy(
    p,
    name,
    [
      {
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE", "DELETE"],
        resources: ["configmaps"],
      },
    ],
    {
      variables: [
        {
          name: "name",
          expression: `request.operation == 'DELETE' ? oldObject.metadata.name : object.metadata.?name.orValue('')`,
        },
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
        {
          name: "groups",
          expression: "has(request.userInfo.groups) ? request.userInfo.groups : []",
        },
        {
          name: "member",
          expression:
            "variables.environment in variables.requesters && variables.groups.exists(g, g in variables.requesters[variables.environment])",
        },
        {
          name: "data",
          expression: "request.operation == 'DELETE' ? {} : object.?data.orValue({})",
        },
        {
          name: "missing",
          expression: `${list(ROLLBACK_REQUEST_FIELDS)}.filter(f, !(f in variables.data) || variables.data[f] == '')`,
        },
        { name: "written", expression: "variables.request && request.operation != 'DELETE'" },
      ],
      validations: [
        {
          ...forbidden(
            "!variables.request || variables.member",
            `metadata.name: a rollback request ${prefix}<environment> in namespace ${p.project} is written only by that environment's deciders or promoters`,
          ),
          messageExpression: `'metadata.name: ' + variables.name + ' in namespace ${p.project} asks to roll environment ' + variables.environment + ' back; only its deciders or promoters write it (' + (variables.environment in variables.requesters ? variables.requesters[variables.environment].join(', ') : 'none: it has neither') + '), and ' + request.userInfo.username + ' is in none of them'`,
        },
        {
          ...forbidden(
            "!variables.written || size(variables.missing) == 0",
            `data: a rollback request needs ${ROLLBACK_REQUEST_FIELDS.join(", ")}`,
          ),
          messageExpression: `'data: a rollback request needs ${ROLLBACK_REQUEST_FIELDS.join(", ")}; missing or empty: ' + variables.missing.join(', ')`,
        },
        forbidden(
          `!variables.written || (variables.data.?kind.orValue('') in ${list(ROLLBACK_REQUEST_KINDS)})`,
          `data.kind: a rollback request's kind is ${ROLLBACK_REQUEST_KINDS.join(" or ")}`,
        ),
        {
          ...forbidden(
            "!variables.written || variables.data.?by.orValue('') == request.userInfo.username",
            "data.by: a rollback request names who wrote it, as their Kubernetes user name",
          ),
          messageExpression:
            "'data.by: a rollback request names who wrote it: ' + request.userInfo.username + ', not ' + variables.data.?by.orValue('nobody')",
        },
        forbidden(
          `variables.request || request.operation != 'CREATE' || !variables.groups.exists(g, g in ${list(everyRequester)})`,
          `metadata.name: the rollback requesters create only ConfigMaps named ${prefix}<environment> in namespace ${p.project}`,
        ),
      ],
    },
  );
  return [policy, denyBinding(p, name, inNamespace(p.project))];
}
