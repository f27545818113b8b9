// The plan diff's first section: what a change does to oversight, in a reviewer's words, before any resource
// detail. Which people stand between each environment and the environments its Freight comes from, what
// stops its previews and who decides, where it acts in AWS (from the pipeline definitions of both sides), and
// whose reach the authorizers widen or narrow (from both plans). Weakened first.
import { oversightOf, type EnvironmentOversight } from "../../pipeline/oversight";
import { RISK_CLASSES, stopOnText, type Pipeline } from "../../pipeline/schema";
import type { ProjectPlan } from "./diff";
import { awsReachChanges, kubernetesReachChanges, type ReachChange } from "./diff-reach";

export type Direction = "weakened" | "strengthened" | "changed";

export interface OversightChange {
  /** The environment, identity or group it is about. */
  subject: string;
  aspect: "approvals" | "stop" | "account" | "environment" | "AWS reach" | "Kubernetes reach";
  direction: Direction;
  /** One sentence a reviewer reads first. */
  line: string;
  /** What exactly, one fact a line. */
  details: string[];
}

export interface Oversight {
  changes: OversightChange[];
  /** Why the base's pipeline could not be compared (an old or broken definition), when it could not. */
  unread?: string;
}

const names = (l: string[]) => l.join(", ") || "nothing";
const approvals = (l: string[]) => l.map((a) => `approval by ${a}`);
const account = (o: EnvironmentOversight) => o.account ?? "the cluster's account";
const region = (o: EnvironmentOversight) => o.region ?? "the cluster's region";

/** A list cut to its first items, for a line a reviewer reads. */
export const summarized = (items: string[], max = 6) =>
  items.length > max ? [...items.slice(0, max), `and ${items.length - max} more`] : items;

function environmentChanges(e: string, a: EnvironmentOversight, b: EnvironmentOversight): OversightChange[] {
  const out: OversightChange[] = [];
  const add = (
    aspect: OversightChange["aspect"],
    direction: Direction,
    line: string,
    details: string[] = [],
  ) => out.push({ subject: e, aspect, direction, line: `${e}: ${line}`, details });

  const lost = a.approvals.filter((x) => !b.approvals.includes(x));
  const gained = b.approvals.filter((x) => !a.approvals.includes(x));
  if (b.approvals.length === 0 && lost.length > 0)
    add("approvals", "weakened", `no person between ${names(b.upstream)} and ${e}`, [
      `was: ${approvals(a.approvals).join(", ")}`,
    ]);
  else for (const x of lost) add("approvals", "weakened", `approval by ${x} removed`);
  for (const x of gained) add("approvals", "strengthened", `approval by ${x} added`);
  if (a.upstream.join() !== b.upstream.join())
    add("approvals", "changed", `takes Freight from ${names(b.upstream)} (was ${names(a.upstream)})`, [
      b.approvals.length > 0
        ? `on the way: ${approvals(b.approvals).join(", ")}`
        : `no person between ${names(b.upstream)} and ${e}`,
    ]);

  const [s, t] = [a.stop, b.stop];
  if (s.stopOn === "all" && t.stopOn !== "all")
    add("stop", "weakened", `stop weakened: no longer stops on every change (stops on ${stopOnText(t)})`);
  else if (s.stopOn !== "all" && t.stopOn === "all")
    add("stop", "strengthened", `stop strengthened: stops on every change (stopEveryPreview)`);
  else if (s.stopOn !== "all" && t.stopOn !== "all") {
    const dropped = RISK_CLASSES.filter((c) => s.stopOn.includes(c) && !t.stopOn.includes(c));
    const added = RISK_CLASSES.filter((c) => !s.stopOn.includes(c) && t.stopOn.includes(c));
    if (dropped.length > 0)
      add(
        "stop",
        "weakened",
        `stop weakened: no longer stops on ${dropped.join(", ")} (stops on ${stopOnText(t)})`,
      );
    if (added.length > 0)
      add(
        "stop",
        "strengthened",
        `stop strengthened: now stops on ${added.join(", ")} (stops on ${stopOnText(t)})`,
      );
  }
  const [d, f] = [[...s.deciders].sort(), [...t.deciders].sort()];
  if (d.length > 0 && f.length > 0 && d.join() !== f.join())
    add("stop", "changed", `its stops decided by ${f.join(", ")} (was ${d.join(", ")})`);
  if (!s.ephemeral && t.ephemeral)
    add("stop", "weakened", "now ephemeral: its resources are destroyed when its update Stack is deleted");
  if (s.ephemeral && !t.ephemeral) add("stop", "strengthened", "no longer ephemeral");

  if (a.account !== b.account)
    add("account", "changed", `moves to another AWS account: ${account(a)} → ${account(b)}`);
  if (a.region !== b.region)
    add("account", "changed", `moves to another AWS region: ${region(a)} → ${region(b)}`);
  return out;
}

const describe = (o: EnvironmentOversight) => [
  `takes Freight from ${names(o.upstream)}`,
  o.approvals.length > 0 ? `on the way: ${approvals(o.approvals).join(", ")}` : `no person on the way`,
  `stops on ${stopOnText(o.stop)}${o.stop.deciders.length > 0 ? `, decided by ${o.stop.deciders.join(", ")}` : ""}`,
  `acts in ${account(o)}, ${region(o)}`,
];

/** What the change does to the path: each environment's oversight before and after. */
export function pathChanges(before: Pipeline, after: Pipeline): OversightChange[] {
  const [was, now] = [oversightOf(before), oversightOf(after)];
  const out: OversightChange[] = [];
  for (const b of now) {
    const a = was.find((o) => o.environment === b.environment);
    if (a) out.push(...environmentChanges(b.environment, a, b));
    else
      out.push({
        subject: b.environment,
        aspect: "environment",
        direction: b.approvals.length > 0 ? "changed" : "weakened",
        line:
          b.approvals.length > 0
            ? `${b.environment}: new environment`
            : `${b.environment}: new environment, no person between ${names(b.upstream)} and ${b.environment}`,
        details: describe(b),
      });
  }
  for (const a of was.filter((o) => !now.some((b) => b.environment === o.environment)))
    out.push({
      subject: a.environment,
      aspect: "environment",
      direction: "changed",
      line: `${a.environment}: environment removed`,
      details: describe(a),
    });
  return out;
}

/** An identity whose answers differ, as one finding: widened when it gains anything, else narrowed. */
export const reachChange = (r: ReachChange): OversightChange => ({
  subject: r.identity,
  aspect: r.authorizer === "AWS" ? "AWS reach" : "Kubernetes reach",
  direction: r.added.length > 0 ? "weakened" : "strengthened",
  line: `${r.identity}: ${r.authorizer} reach ${
    r.added.length > 0 && r.removed.length > 0
      ? "widened and narrowed"
      : r.added.length > 0
        ? "widened"
        : "narrowed"
  } (${[
    r.added.length > 0 ? `${r.added.length} allowed now` : "",
    r.removed.length > 0 ? `${r.removed.length} no longer` : "",
  ]
    .filter(Boolean)
    .join(", ")})`,
  details: [...summarized(r.added).map((x) => `+ ${x}`), ...summarized(r.removed).map((x) => `- ${x}`)],
});

const order: Record<Direction, number> = { weakened: 0, changed: 1, strengthened: 2 };

/**
 * The oversight section of a diff: the path's changes when both pipelines are known (`before` undefined:
 * the base's could not be read, `unread` says why), and the authorizers' answers from both plans.
 */
export async function oversightChanges(
  plans: { before: ProjectPlan[]; after: ProjectPlan[] },
  pipelines: { before?: Pipeline; after: Pipeline; unread?: string },
): Promise<Oversight> {
  const path = pipelines.before ? pathChanges(pipelines.before, pipelines.after) : [];
  const reach = [
    ...(await awsReachChanges(plans.before, plans.after)),
    ...kubernetesReachChanges(plans.before, plans.after),
  ].map(reachChange);
  const changes = [...path, ...reach]
    .map((c, i) => ({ c, i }))
    .sort((x, y) => order[x.c.direction] - order[y.c.direction] || x.i - y.i)
    .map(({ c }) => c);
  return pipelines.unread ? { changes, unread: pipelines.unread } : { changes };
}
