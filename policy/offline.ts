// The policy pack run over an offline plan (resources.json): each policy's own validateResource, given the
// arguments @pulumi/policy builds for a resource (server.js of @pulumi/policy 1.21.0), with the config
// defaults of its schema. Tests and `npm run plan -- --diff` use it; a preview runs the same policies live.
import type { PolicyResourceOptions, ResourceValidationArgs, ResourceValidationPolicy } from "@pulumi/policy";
import { policies as platformPolicies } from "./policies";

/** A resource as resources.json holds it. */
export interface PlannedResource {
  urn: string;
  type: string;
  name: string;
  parent?: string | null;
  inputs: Record<string, unknown>;
  options: { protect: boolean; deleteBeforeReplace?: boolean };
}

export interface Violation {
  policy: string;
  urn: string;
  type: string;
  name: string;
  message: string;
}

function configDefaults(policy: ResourceValidationPolicy): Record<string, unknown> {
  const properties = (policy.configSchema?.properties ?? {}) as Record<string, { default?: unknown }>;
  return Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, v.default]));
}

/** What validateResource receives for `r`. */
export function validationArgs(r: PlannedResource, policy: ResourceValidationPolicy): ResourceValidationArgs {
  const opts: PolicyResourceOptions = {
    protect: r.options.protect,
    ignoreChanges: [],
    deleteBeforeReplace: r.options.deleteBeforeReplace,
    aliases: [],
    customTimeouts: { createSeconds: 0, updateSeconds: 0, deleteSeconds: 0 },
    additionalSecretOutputs: [],
    ...(r.parent ? { parent: r.parent } : {}),
  };
  return {
    type: r.type,
    props: r.inputs,
    urn: r.urn,
    name: r.name,
    opts,
    stackTags: new Map(),
    isType: () => false,
    asType: () => undefined,
    getConfig: <T extends object>() => configDefaults(policy) as T,
    notApplicable: (reason?: string): never => {
      throw new Error(`not applicable: ${reason ?? ""}`);
    },
  };
}

/** Every violation of the policies (the platform's by default) among `resources`. */
export async function checkResources(
  resources: PlannedResource[],
  policies: ResourceValidationPolicy[] = platformPolicies,
): Promise<Violation[]> {
  const violations: Violation[] = [];
  for (const r of resources)
    for (const policy of policies) {
      const validations = Array.isArray(policy.validateResource)
        ? policy.validateResource
        : [policy.validateResource];
      for (const validate of validations)
        await validate?.(validationArgs(r, policy), (message) =>
          violations.push({ policy: policy.name, urn: r.urn, type: r.type, name: r.name, message }),
        );
    }
  return violations;
}
