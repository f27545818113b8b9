import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import {
  rollbackRequestAdmission,
  rollbackRequestAdmissionName,
  rollbackRequestName,
  rollbackRequestRoles,
} from "../lib/pipeline/rollback-request";
import type { Pipeline } from "../lib/pipeline/schema";
import { admissionPolicies } from "./admissionPolicies";

/**
 * Who may ask for an environment's rollback (lib/pipeline/rollback-request.ts): the admission policy that
 * judges each request, then, once it is enforced, each environment's request (empty) and the Role that lets
 * its requesters' Kargo role ServiceAccounts (and groups) read and rewrite it, so none is written unjudged.
 */
export function rollbackRequests(
  p: Pipeline,
  namespace: string,
  kargoNamespace: string,
  opts: pulumi.CustomResourceOptions,
): void {
  const admission = admissionPolicies(rollbackRequestAdmission(p, kargoNamespace), opts);
  const binding = admission.get(rollbackRequestAdmissionName(p))!;
  // The binding waits for what `opts` waits for (the project's namespace); the rest waits for the binding.
  const afterPolicy = { ...opts, dependsOn: [binding] };
  for (const role of rollbackRequestRoles(p)) {
    new k8s.core.v1.ConfigMap(
      rollbackRequestName(role.environment),
      { metadata: { name: rollbackRequestName(role.environment), namespace } },
      // Its data is the requesters' (npm run rollback writes it through Kargo): a deploy never resets it.
      { ...afterPolicy, ignoreChanges: ["data"] },
    );
    const granted = new k8s.rbac.v1.Role(
      role.name,
      { metadata: { name: role.name, namespace }, rules: role.rules },
      afterPolicy,
    );
    new k8s.rbac.v1.RoleBinding(
      role.name,
      {
        metadata: { name: role.name, namespace },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: granted.metadata.name },
        subjects: [
          ...role.serviceAccounts.map((name) => ({ kind: "ServiceAccount", name, namespace })),
          ...role.groups.map((name) => ({ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name })),
        ],
      },
      afterPolicy,
    );
  }
}
