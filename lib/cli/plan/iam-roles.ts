// The IAM roles of a plan as AWS would hold them: each role's account (its provider's `allowedAccountIds`, or
// the plan's account), name and ARN, trust policy, inline policies and attached managed policies, and the
// ServiceAccounts annotated with a role. lib/cli/plan/iam-reach.ts asks an IAM policy engine about them.
import { plannedRoleName } from "./mocks";

/** A resource as the plan records it (in memory, or in resources.json). */
export interface PlanResource {
  urn: string;
  type: string;
  name: string;
  provider?: string | null;
  inputs: Record<string, unknown>;
}

export interface PlanLike {
  project: string;
  resources: PlanResource[];
}

export interface PolicyDoc {
  Version: string;
  Statement: Record<string, unknown>[];
}

export interface PlannedRole {
  project: string;
  /** The Pulumi resource name. */
  resource: string;
  name: string;
  account: string;
  arn: string;
  trust: PolicyDoc;
  policies: { name: string; policy: PolicyDoc }[];
  /** ARNs of attached managed policies (AWS managed ones are not in the plan, so not evaluated). */
  managed: string[];
}

/** A ServiceAccount of the plan and the role its IRSA annotation names. */
export interface PlannedServiceAccount {
  subject: string;
  roleArn?: string;
}

const parse = (v: unknown): unknown => (typeof v === "string" ? JSON.parse(v) : v);
const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** Every statement of a policy document as a list, whatever form the document gives it in. */
export const statements = (doc: PolicyDoc): Record<string, unknown>[] => list(doc.Statement);

/** The account a resource of `plan` acts in: its provider's one allowed account, or the plan's. */
function accountResolver(plan: PlanLike, planAccount: string): (r: PlanResource) => string {
  const providers = plan.resources
    .filter((r) => r.type === "pulumi:providers:aws")
    .flatMap((r) => {
      const accounts = parse(r.inputs.allowedAccountIds) as string[] | undefined;
      return accounts?.length === 1 ? [[r.urn, accounts[0]!] as const] : [];
    });
  return (r) =>
    providers.find(([urn]) => r.provider === urn || r.provider?.startsWith(`${urn}::`))?.[1] ?? planAccount;
}

const ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy";
const ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment";

export function plannedRoles(plans: PlanLike[], planAccount: string): PlannedRole[] {
  const roles = plans.flatMap((plan) => {
    const accountOf = accountResolver(plan, planAccount);
    return plan.resources
      .filter((r) => r.type === "aws:iam/role:Role")
      .map((r): PlannedRole => {
        const name = plannedRoleName(r.name, r.inputs);
        const account = accountOf(r);
        return {
          project: plan.project,
          resource: r.name,
          name,
          account,
          arn: `arn:aws:iam::${account}:role/${name}`,
          trust: parse(r.inputs.assumeRolePolicy) as PolicyDoc,
          policies: [],
          managed: [],
        };
      });
  });
  // Policies may come from another project (kargo attaches the programs' to cluster-setup's roles).
  for (const plan of plans) {
    const accountOf = accountResolver(plan, planAccount);
    for (const r of plan.resources.filter((r) => r.type === ROLE_POLICY || r.type === ATTACHMENT)) {
      const role = roles.find((x) => x.name === r.inputs.role && x.account === accountOf(r));
      if (!role)
        throw new Error(
          `${plan.project}: ${r.type} ${r.name} names role "${String(r.inputs.role)}", which the plan does not make`,
        );
      if (r.type === ROLE_POLICY)
        role.policies.push({
          name: `${plan.project}:${r.name}`,
          policy: parse(r.inputs.policy) as PolicyDoc,
        });
      else role.managed.push(String(r.inputs.policyArn));
    }
  }
  return roles;
}

/** Every ServiceAccount the plan declares, as the subject of its tokens, with the role it is annotated with. */
export function plannedServiceAccounts(plans: PlanLike[]): PlannedServiceAccount[] {
  return plans.flatMap((plan) =>
    plan.resources
      .filter((r) => r.type === "kubernetes:core/v1:ServiceAccount")
      .map((r) => {
        const metadata = r.inputs.metadata as {
          name: string;
          namespace?: string;
          annotations?: Record<string, string>;
        };
        return {
          subject: `system:serviceaccount:${metadata.namespace ?? "default"}:${metadata.name}`,
          roleArn: metadata.annotations?.["eks.amazonaws.com/role-arn"],
        };
      }),
  );
}
