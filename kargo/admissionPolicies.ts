import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";

/** A ValidatingAdmissionPolicy or its binding, as lib/pipeline derives them. */
type AdmissionObject =
  | {
      kind: "ValidatingAdmissionPolicy";
      metadata: { name: string; labels: Record<string, string> };
      spec: k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicySpec;
    }
  | {
      kind: "ValidatingAdmissionPolicyBinding";
      metadata: { name: string; labels: Record<string, string> };
      spec: k8s.types.input.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec & {
        policyName: string;
      };
    };

/**
 * Registers admission policies and their bindings, each named as its object and each binding after its
 * policy (a binding to a policy the server does not hold yet enforces nothing). The bindings, by name.
 */
export function admissionPolicies(
  objects: AdmissionObject[],
  opts: pulumi.CustomResourceOptions,
): Map<string, k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding> {
  const policies = new Map<string, k8s.admissionregistration.v1.ValidatingAdmissionPolicy>();
  const bindings = new Map<string, k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding>();
  for (const o of objects) {
    const { metadata } = o;
    if (o.kind === "ValidatingAdmissionPolicy")
      policies.set(
        metadata.name,
        new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
          metadata.name,
          { metadata, spec: o.spec },
          opts,
        ),
      );
    else
      bindings.set(
        metadata.name,
        new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
          metadata.name,
          { metadata, spec: o.spec },
          { ...opts, dependsOn: [policies.get(o.spec.policyName)!] },
        ),
      );
  }
  return bindings;
}
