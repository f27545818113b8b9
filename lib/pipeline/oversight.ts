// Who and what stands between each environment and the environments its Freight comes from: the approvals of
// the gates on the way, the stop at its own preview, and where it acts in AWS. Derived from the definition
// alone, so the plan diff can say in a reviewer's words what a change to the path does to its oversight.
import { upstreamOf } from "./graph";
import { riskPolicy, type Pipeline, type RiskPolicy, type Stage } from "./schema";

/** Where Freight may come from into an environment: another environment, or the Warehouse (new commits). */
export const WAREHOUSE = "the Warehouse";

export interface EnvironmentOversight {
  environment: string;
  /** The environments (or {@link WAREHOUSE}) its Freight comes from, through gates only, sorted. */
  upstream: string[];
  /**
   * The approvals every Freight needs on its way from `upstream`: each a gate's approver groups ("a or b":
   * one member of any of them approves), sorted. Gates of every upstream count where the stage waits for
   * all of them (requireAll); only those on every way in where any one upstream will do.
   */
  approvals: string[];
  stop: RiskPolicy & { ephemeral: boolean };
  /** The AWS account and region it acts in; undefined: the cluster's own. */
  account?: string;
  region?: string;
}

/** A gate's approval as a reviewer reads it: who may give it. */
export const approvalOf = (approvers: string[]): string => [...new Set(approvers)].sort().join(" or ");

interface Arrival {
  sources: Set<string>;
  approvals: Set<string>;
}

const intersect = (sets: Set<string>[]) =>
  new Set([...(sets[0] ?? [])].filter((x) => sets.every((s) => s.has(x))));

/** Each environment's oversight, for every environment of a validated pipeline. */
export function oversightOf(p: Pick<Pipeline, "stages" | "environments">): EnvironmentOversight[] {
  const byName = new Map<string, Stage>(p.stages.map((s) => [s.name, s]));
  const known = new Map<string, Arrival>();
  // What Freight has passed when it reaches `name`, counting from the nearest other environment's stages.
  const arrive = (name: string, environment: string): Arrival => {
    const key = `${environment}\0${name}`;
    const cached = known.get(key);
    if (cached) return cached;
    const stage = byName.get(name)!;
    const ups = upstreamOf(stage).map((up): Arrival => {
      const s = byName.get(up)!;
      if (s.kind === "gate") {
        const through = arrive(up, environment);
        return {
          sources: through.sources,
          approvals: new Set([...through.approvals, approvalOf(s.approvers)]),
        };
      }
      if (s.environment !== environment) return { sources: new Set([s.environment]), approvals: new Set() };
      return arrive(up, environment);
    });
    const arrival: Arrival =
      ups.length === 0
        ? { sources: new Set([WAREHOUSE]), approvals: new Set() }
        : {
            sources: new Set(ups.flatMap((u) => [...u.sources])),
            approvals: stage.requireAll
              ? new Set(ups.flatMap((u) => [...u.approvals]))
              : intersect(ups.map((u) => u.approvals)),
          };
    known.set(key, arrival);
    return arrival;
  };
  return Object.entries(p.environments).map(([environment, env]) => {
    // One update stage per environment (validatePipeline); what reaches it is what changes the environment.
    const update = p.stages.find((s) => s.kind === "update" && s.environment === environment);
    const arrival: Arrival = update
      ? arrive(update.name, environment)
      : { sources: new Set(), approvals: new Set() };
    return {
      environment,
      upstream: [...arrival.sources].sort(),
      approvals: [...arrival.approvals].sort(),
      stop: { ...riskPolicy(env), ephemeral: env.ephemeral },
      account: env.aws?.accountId,
      region: env.aws?.region,
    };
  });
}
