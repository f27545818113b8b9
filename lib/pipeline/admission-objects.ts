// The pieces every admission policy of the pipeline is made of, one way: a check that refuses with 403, the
// policy that fails closed on the requests `resourceRules` names, and the binding that denies what its policy
// refuses, for the objects `matchResources` names.
import type { Pipeline } from "./schema";

/** A validation that refuses with `message` and HTTP 403 (Forbidden) when `expression` is false. */
export const forbidden = (expression: string, message: string) => ({
  expression,
  message,
  reason: "Forbidden",
});

/** The labels every admission object of the pipeline carries. */
export const admissionLabels = (p: Pick<Pipeline, "project">) => ({ "app.kubernetes.io/part-of": p.project });

/** Objects in `namespace` alone. */
export const inNamespace = (namespace: string) => ({
  namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
});

/**
 * Policy `name`: for the requests `resourceRules` matches, what `checks` refuses is refused, and a check that
 * cannot be evaluated refuses too (failurePolicy Fail). `checks` holds matchConditions, variables and
 * validations, in the order the API server's docs list them.
 */
export const denyPolicy = <Checks extends { validations: ReturnType<typeof forbidden>[] }>(
  p: Pick<Pipeline, "project">,
  name: string,
  resourceRules: Record<string, unknown>[],
  checks: Checks,
) => ({
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingAdmissionPolicy" as const,
  metadata: { name, labels: admissionLabels(p) },
  spec: { failurePolicy: "Fail", matchConstraints: { resourceRules }, ...checks },
});

/** The binding of policy `name` (named the same), denying what it refuses among `matchResources`. */
export const denyBinding = (
  p: Pick<Pipeline, "project">,
  name: string,
  matchResources: Record<string, unknown>,
) => ({
  apiVersion: "admissionregistration.k8s.io/v1",
  kind: "ValidatingAdmissionPolicyBinding" as const,
  metadata: { name, labels: admissionLabels(p) },
  spec: { policyName: name, validationActions: ["Deny"], matchResources },
});
