// Changes to the path a reviewer must be told of, made to any pipeline definition the schema allows: the gates
// between an environment and its upstream environments removed, an environment's stop weakened by a class,
// an environment moved to another AWS account, an environment's identity allowed every resource. Each picks
// its environment from the definition, so a fork's pipeline is changed the same way. The example output in
// docs/reviewing-changes.md (`npm run docs`) and the oversight tests use them.
import { namedAccounts } from "../../pipeline/accounts";
import { oversightOf, WAREHOUSE } from "../../pipeline/oversight";
import { riskPolicy, type Pipeline, type PipelineInput } from "../../pipeline/schema";
import { validatePipeline } from "../../pipeline/validate";
import type { ProjectPlan } from "./diff";
import { oversightChanges, type Oversight } from "./diff-oversight";
import { plannedRoles, plannedServiceAccounts } from "./iam-roles";
import { PLAN_ACCOUNT_ID } from "./mocks";

type Stages = PipelineInput["stages"];

/** An environment with approvals on its way from other environments (none from the Warehouse), if any. */
export function gatedEnvironment(p: PipelineInput): string | undefined {
  return oversightOf(validatePipeline(p)).find(
    (o) => o.approvals.length > 0 && !o.upstream.includes(WAREHOUSE),
  )?.environment;
}

/** `p` with the gates between `environment` and its upstream environments removed: it takes from them directly. */
export function withoutGates(p: PipelineInput, environment: string): PipelineInput {
  const byName = new Map(p.stages.map((s) => [s.name, s]));
  const through = (name: string): string[] => {
    const s = byName.get(name)!;
    if (s.kind !== "gate") return [name];
    return s.from === "warehouse" ? ["warehouse"] : s.from.flatMap(through);
  };
  let stages: Stages = p.stages.map((s) =>
    s.kind !== "gate" && s.environment === environment && s.from !== "warehouse"
      ? { ...s, from: [...new Set(s.from.flatMap(through))] }
      : s,
  );
  // The gates nothing takes from any more go too.
  for (;;) {
    const used = new Set(stages.flatMap((s) => (s.from === "warehouse" ? [] : s.from)));
    const left = stages.filter((s) => s.kind !== "gate" || used.has(s.name));
    if (left.length === stages.length) break;
    stages = left;
  }
  return { ...p, stages };
}

/** An environment that stops on some classes (not on every change), and the class {@link weakenStop} drops. */
export function stoppingEnvironment(p: PipelineInput): { environment: string; dropped: string } | undefined {
  const pipeline = validatePipeline(p);
  for (const [environment, env] of Object.entries(pipeline.environments)) {
    const { stopOn } = riskPolicy(env);
    if (stopOn !== "all" && stopOn.length > 0) return { environment, dropped: stopOn.at(-1)! };
  }
  return undefined;
}

/** `p` with `environment`'s stop no longer on its last class. */
export function weakenStop(p: PipelineInput, environment: string): PipelineInput {
  const env = validatePipeline(p).environments[environment]!;
  const { stopOn, deciders } = riskPolicy(env);
  const kept = (stopOn as string[]).slice(0, -1);
  const was = p.environments[environment]!;
  const { protected: _p, destructiveChangeApprovers: _d, ...rest } = was;
  return {
    ...p,
    environments: {
      ...p.environments,
      [environment]: {
        ...rest,
        stopOn: kept as typeof was.stopOn,
        ...(kept.length > 0 ? { deciders } : {}),
      },
    },
  };
}

/** An account none of `p`'s environments names. */
export const freeAccount = (p: PipelineInput) =>
  ["210987654321", "310987654321", "410987654321"].find((a) => !namedAccounts(p.environments).includes(a))!;

/** `p` with `environment` acting in `account`. */
export const inAccount = (p: PipelineInput, environment: string, account: string): PipelineInput => ({
  ...p,
  environments: {
    ...p.environments,
    [environment]: { ...p.environments[environment]!, aws: { accountId: account } },
  },
});

/**
 * The three changes at once, each in its own environment where the pipeline has enough of them: the gated
 * environment loses its gates, the first stopping environment its last class, the first environment other
 * than those moves to another account (or the gated one, in a pipeline of one or two environments).
 */
export function pathChanged(p: PipelineInput) {
  const gated = gatedEnvironment(p);
  const stopping = stoppingEnvironment(p);
  const moved =
    Object.keys(p.environments).find((e) => e !== gated && e !== stopping?.environment) ??
    Object.keys(p.environments)[0]!;
  const account = freeAccount(p);
  let changed = p;
  if (gated) changed = withoutGates(changed, gated);
  if (stopping) changed = weakenStop(changed, stopping.environment);
  changed = inAccount(changed, moved, account);
  return { pipeline: changed, gated, stopping, moved, account };
}

/** The IAM role of `environment`'s updates in `plans`: the one its ServiceAccount is annotated with. */
export function environmentRole(plans: ProjectPlan[], p: Pipeline, environment: string) {
  const subject = `system:serviceaccount:${p.stacks.namespace}:${p.stacks.serviceAccountName}-${environment}`;
  const arn = plannedServiceAccounts(plans).find((sa) => sa.subject === subject)?.roleArn;
  return plannedRoles(plans, PLAN_ACCOUNT_ID).find((r) => r.arn === arn);
}

/** A copy of `plans` in which `environment`'s role is allowed every resource its policies' actions act on. */
export function withWidenedRole(plans: ProjectPlan[], p: Pipeline, environment: string): ProjectPlan[] {
  const role = environmentRole(plans, p, environment);
  if (!role) throw new Error(`environment ${environment}: no role in the plan`);
  const copy = structuredClone(plans);
  for (const r of copy.flatMap((x) => x.resources))
    if (
      r.type === "aws:iam/rolePolicy:RolePolicy" &&
      role.policies.some((x) => x.name.endsWith(`:${r.name}`))
    ) {
      const doc = JSON.parse(r.inputs.policy as string) as { Statement: object | object[] };
      doc.Statement = [doc.Statement].flat().map((s) => ({ ...s, Resource: "*" }));
      r.inputs.policy = JSON.stringify(doc);
    }
  return copy;
}

/**
 * The oversight section of a pull request that makes all four changes to `definition`: the path's three
 * ({@link pathChanged}) and the first environment's identity allowed every resource (its plan only).
 */
export async function oversightExample(definition: PipelineInput, plans: ProjectPlan[]): Promise<Oversight> {
  const before = validatePipeline(definition);
  const after = validatePipeline(pathChanged(definition).pipeline);
  const [first] = Object.keys(before.environments);
  return oversightChanges(
    { before: plans, after: withWidenedRole(plans, before, first!) },
    { before, after },
  );
}
