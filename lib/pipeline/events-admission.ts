// Who may write what the record of a stopped preview's approval rests on, as the API server enforces it: the
// ConfigMap Argo Events' Sensor creates (lib/pipeline/events.ts), and the Kubernetes Event it is made from.
import { platformNamespaces } from "../namespaces";
import { denyBinding, denyPolicy, forbidden, inNamespace } from "./admission-objects";
import { STACK_UPDATE_FAILURE, driftRecordPrefix, driftStages } from "./drift-record";
import { stopApprovalPrefix } from "./events";
import type { Pipeline } from "./schema";

const lit = (s: string) => JSON.stringify(s);

/** The Kubernetes user of a ServiceAccount, as the API server names it in `request.userInfo.username`. */
export const serviceAccountUser = (namespace: string, name: string) =>
  `system:serviceaccount:${namespace}:${name}`;

/**
 * The admission policy and binding that keep the approval records the Sensor's alone: in the project's
 * namespace, a ConfigMap named (or generated) with the record prefix is created only by the Sensor's
 * ServiceAccount, only immutable, and never updated; and that ServiceAccount creates nothing else there
 * (its Role grants `create` on ConfigMaps, which RBAC cannot narrow to a name prefix).
 */
export function stopApprovalAdmission(p: Pipeline, sensorUser: string) {
  const name = `${p.project}-stop-approval-records`;
  const drift = driftStages(p).length > 0;
  const prefix = lit(stopApprovalPrefix);
  const record = (o: string) =>
    `(${o}.metadata.?name.orValue('').startsWith(${prefix}) || ${o}.metadata.?generateName.orValue('').startsWith(${prefix}))`;
  const policy = denyPolicy(
    p,
    name,
    [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"] }],
    {
      variables: [
        { name: "sensor", expression: `request.userInfo.username == ${lit(sensorUser)}` },
        {
          name: "record",
          expression: `request.operation == 'CREATE' ? ${record("object")} : (${record("object")} || ${record("oldObject")})`,
        },
      ],
      validations: [
        forbidden(
          "!variables.record || (request.operation == 'CREATE' && variables.sensor)",
          `metadata.name: ConfigMaps named ${stopApprovalPrefix}* in namespace ${p.project} record who approved a stopped preview; only Argo Events' Sensor (${sensorUser}) creates them, and nobody changes them`,
        ),
        forbidden(
          "!variables.record || object.?immutable.orValue(false) == true",
          `immutable: a record of a stopped preview's approval must be immutable`,
        ),
        forbidden(
          `variables.record || !variables.sensor${drift ? ` || object.metadata.?name.orValue('').startsWith(${lit(driftRecordPrefix)})` : ""}`,
          `metadata.name: ${sensorUser} may create only ConfigMaps named ${[stopApprovalPrefix, ...(drift ? [driftRecordPrefix] : [])].map((x) => `${x}*`).join(" or ")} in namespace ${p.project}`,
        ),
      ],
    },
  );
  const binding = denyBinding(p, name, inNamespace(p.project));
  return { policy, binding };
}

/**
 * Kargo's components that record a Freight's approval (akuity/kargo v1.11.2: the API server,
 * pkg/server/approve_freight_v1alpha1.go, and the Kubernetes webhooks server when Freight status is patched
 * directly, pkg/webhook/kubernetes/freight/webhook.go), each with its own client (cmd/controlplane/api.go
 * InternalClient, not the signed-in user's), by the ServiceAccount names the chart fixes
 * (charts/kargo/templates/api/service-account.yaml, kubernetes-webhooks-server/service-account.yaml).
 */
export const approvalRecorders = (kargoNamespace: string) =>
  ["kargo-api", "kargo-webhooks-server"].map((sa) => serviceAccountUser(kargoNamespace, sa));

/** Writes of an Event through either Event API (core and events.k8s.io store the same objects). */
const eventWrites = [
  {
    apiGroups: ["", "events.k8s.io"],
    apiVersions: ["v1"],
    operations: ["CREATE", "UPDATE"],
    resources: ["events"],
  },
];

/**
 * The Event the record is made from is Kargo's: in the project's namespace, an Event with reason
 * FreightApproved is created or changed only by Kargo's components, so nobody else allowed to create Events
 * (a controller, an administrator) can make up an approver. Both Event APIs (core and events.k8s.io) store it.
 */
export function approvalEventAdmission(p: Pipeline, kargoNamespace: string) {
  const name = `${p.project}-freight-approved-events`;
  const recorders = approvalRecorders(kargoNamespace);
  const policy = denyPolicy(p, name, eventWrites, {
    matchConditions: [
      { name: "freight-approved", expression: "object.?reason.orValue('') == 'FreightApproved'" },
    ],
    validations: [
      forbidden(
        `request.userInfo.username in [${recorders.map(lit).join(", ")}]`,
        `reason: a FreightApproved Event in namespace ${p.project} records who approved Freight; only Kargo (${recorders.join(", ")}) records one`,
      ),
    ],
  });
  const binding = denyBinding(p, name, inNamespace(p.project));
  return { policy, binding };
}

/**
 * The drift records (lib/pipeline/drift-record.ts) are the Sensor's: in the project's namespace, the data of
 * a ConfigMap named with the drift record prefix is written only by the Sensor's ServiceAccount; anyone else
 * (the deploy) creates one only empty and changes no data (a deploy applying it again unchanged is an
 * update), so nobody makes up, or erases, the drift a reconcile's record names.
 */
export function driftRecordAdmission(p: Pipeline, sensorUser: string) {
  const name = `${p.project}-drift-records`;
  const prefix = lit(driftRecordPrefix);
  const named = (o: string) => `(${o} != null && ${o}.metadata.?name.orValue('').startsWith(${prefix}))`;
  const policy = denyPolicy(
    p,
    name,
    [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["configmaps"] }],
    {
      matchConditions: [{ name: "drift-record", expression: `${named("object")} || ${named("oldObject")}` }],
      validations: [
        forbidden(
          `request.userInfo.username == ${lit(sensorUser)} || (request.operation == 'CREATE' ? object.?data.orValue({}).size() == 0 && object.?binaryData.orValue({}).size() == 0 : object.?data.orValue({}) == oldObject.?data.orValue({}) && object.?binaryData.orValue({}) == oldObject.?binaryData.orValue({}))`,
          `metadata.name: ConfigMaps named ${driftRecordPrefix}* in namespace ${p.project} record the drift a check found; only Argo Events' Sensor (${sensorUser}) writes one (anyone else creates it empty and leaves its data as it is)`,
        ),
      ],
    },
  );
  const binding = denyBinding(p, name, inNamespace(p.project));
  return { policy, binding };
}

/**
 * The Event a drift record is made from is PKO's: in the stacks namespace, a StackUpdateFailure Event is
 * created or changed only by a ServiceAccount of PKO's namespace (its controller records it,
 * pulumi-kubernetes-operator v2.9.0 operator/cmd/main.go GetEventRecorderFor("stack-controller"); the chart's
 * values may rename its ServiceAccount, never move it out of the namespace cluster-setup installs it in), so
 * nobody else allowed to create Events there can make up drift. Both Event APIs store it.
 */
export function driftEventAdmission(p: Pipeline) {
  const name = `${p.project}-drift-check-events`;
  const operator = `system:serviceaccount:${platformNamespaces.pulumiOperator}:`;
  const policy = denyPolicy(p, name, eventWrites, {
    matchConditions: [
      {
        name: "stack-update-failure",
        expression: `object.?reason.orValue('') == ${lit(STACK_UPDATE_FAILURE)}`,
      },
    ],
    validations: [
      forbidden(
        `request.userInfo.username.startsWith(${lit(operator)})`,
        `reason: a ${STACK_UPDATE_FAILURE} Event in namespace ${p.stacks.namespace} is what the drift record is made from; only the Pulumi Kubernetes Operator (${operator}*) records one`,
      ),
    ],
  });
  const binding = denyBinding(p, name, inNamespace(p.stacks.namespace));
  return { policy, binding };
}
