import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";
import {
  rollbackRequestAdmission,
  rollbackRequestAdmissionName,
  rollbackRequestRoles,
} from "../lib/pipeline/rollback-request";
import type { Pipeline } from "../lib/pipeline/schema";
import { admissionPolicies } from "./admissionPolicies";

/**
 * Who may ask for an environment's rollback (lib/pipeline/rollback-request.ts): the admission policy that
 * judges each request, then, once it is enforced, the Roles that let each environment's requester groups
 * write theirs, so no request is ever written unjudged.
 */
export function rollbackRequests(p: Pipeline, namespace: string, opts: pulumi.CustomResourceOptions): void {
  const binding = admissionPolicies(rollbackRequestAdmission(p), opts).get(rollbackRequestAdmissionName(p))!;
  // The binding waits for what `opts` waits for (the project's namespace); the Roles wait for the binding.
  const afterPolicy = { ...opts, dependsOn: [binding] };
  for (const role of rollbackRequestRoles(p)) {
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
        subjects: role.groups.map((name) => ({ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name })),
      },
      afterPolicy,
    );
  }
}
