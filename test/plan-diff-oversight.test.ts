// The plan diff's oversight section (lib/cli/plan/diff-oversight.ts): a change to the path or to anyone's
// reach is said first, in a reviewer's words, from the pipeline definitions and the plans of both sides; a
// list that only changes order is no change. Every change is made to the definition or plan as it stands,
// so a fork's pipeline is checked the same way.
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { diffPlans, listKey, type ProjectPlan } from "../lib/cli/plan/diff";
import * as fs from "node:fs";
import { OVERSIGHT_EXAMPLE_END, OVERSIGHT_EXAMPLE_START, oversightBlock } from "../lib/cli/docs";
import { oversightLines, renderDiff, type DiffReport } from "../lib/cli/plan/diff-format";
import { oversightChanges, pathChanges } from "../lib/cli/plan/diff-oversight";
import { awsReachChanges, kubernetesReachChanges } from "../lib/cli/plan/diff-reach";
import { reviewSummary } from "../lib/cli/plan/diff-summary";
import { plannedRoles, plannedServiceAccounts } from "../lib/cli/plan/iam-roles";
import { PLAN_ACCOUNT_ID } from "../lib/cli/plan/mocks";
import { planChain } from "../lib/cli/plan/projects";
import { updatePolicy } from "../lib/pipeline/access";
import { isGate, programStages, runStages } from "../lib/pipeline/graph";
import { stageSpec } from "../lib/pipeline/promotion";
import { approvalOf, oversightOf } from "../lib/pipeline/oversight";
import { approverRoles } from "../lib/pipeline/rbac";
import { riskPolicy, type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  freeAccount,
  gatedEnvironment,
  inAccount,
  stoppingEnvironment,
  weakenStop,
  withoutGates,
  oversightExample,
} from "../lib/cli/plan/path-examples";
import { docPages } from "../lib/markdown";

const ours = validatePipeline(definition);
/** An environment without its risk fields, whichever names (new or old) the fork wrote them in. */
const withoutRisk = (env: PipelineInput["environments"][string]) => {
  const { stopOn: _s, deciders: _d, ...rest } = env as Record<string, unknown>;
  delete rest.destructiveChangeApprovers;
  delete rest.protected;
  return rest as PipelineInput["environments"][string];
};
const lines = (before: PipelineInput, after: PipelineInput) =>
  pathChanges(validatePipeline(before), validatePipeline(after)).map((c) => c.line);

let base: ProjectPlan[];
beforeAll(async () => {
  base = (await planChain()) as ProjectPlan[];
});

/** An environment of the fork that stops on classes with deciders: neither stopEveryPreview nor ephemeral. */
function ordinaryEnvironment() {
  const found = Object.entries(definition.environments).find(([name, env]) => {
    const e = env as { stopEveryPreview?: boolean; ephemeral?: boolean };
    return !e.stopEveryPreview && !e.ephemeral && riskPolicy(ours.environments[name]!).deciders.length > 0;
  });
  expect(found, "an environment that stops on classes, with deciders").toBeDefined();
  return found!;
}

describe("the path's changes", () => {
  it("are none between a pipeline and itself", () => {
    expect(lines(definition, { ...definition })).toEqual([]);
  });

  it("are none, and no Stage changes, when only the order of stages' upstreams changes", () => {
    const reordered: PipelineInput = {
      ...definition,
      stages: definition.stages.map((s) =>
        Array.isArray(s.from) ? { ...s, from: [...s.from].reverse() } : s,
      ),
    };
    expect(definition.stages.some((s) => Array.isArray(s.from) && s.from.length > 1)).toBe(true);
    expect(lines(definition, reordered)).toEqual([]);
    const specs = (p: PipelineInput) => {
      const valid = validatePipeline(p);
      return runStages(valid).map((s) => stageSpec(valid, s));
    };
    expect(specs(reordered)).toEqual(specs(definition));
  });

  it("say that no person stands between an environment and its upstream once its gates are removed", () => {
    const env = gatedEnvironment(definition);
    expect(env, "the example has an environment gated after others").toBeDefined();
    const after = validatePipeline(withoutGates(definition, env!));
    const upstream = oversightOf(after).find((o) => o.environment === env)!.upstream;
    expect(upstream.length).toBeGreaterThan(0);
    const changes = pathChanges(ours, after);
    expect(changes[0]).toMatchObject({
      direction: "weakened",
      line: `${env}: no person between ${upstream.join(", ")} and ${env}`,
    });
    // And the other way round: each approval that comes back is named with its approvers.
    const gates = oversightOf(ours).find((o) => o.environment === env)!.approvals;
    expect(lines(withoutGates(definition, env!), definition)).toEqual(
      expect.arrayContaining(gates.map((g) => `${env}: approval by ${g} added`)),
    );
  });

  it("names the approvers of a gate added in front of an environment", () => {
    const [environment] = Object.keys(definition.environments);
    const added = ["zz-reviewers", "aa-reviewers"];
    // A gate in front of every stage of the environment that takes from outside it.
    const ownStages = definition.stages.filter((s) => s.kind !== "gate" && s.environment === environment);
    const entry = ownStages.filter(
      (s) => s.from === "warehouse" || s.from.some((u) => !ownStages.some((o) => o.name === u)),
    );
    const gated: PipelineInput = {
      ...definition,
      stages: [
        ...definition.stages.map((s) =>
          entry.includes(s) ? { ...s, from: ["zz-extra-gate"], requireAll: false } : s,
        ),
        ...entry.slice(0, 1).map((s) => ({
          name: "zz-extra-gate",
          kind: "gate" as const,
          from: s.from,
          requireAll: s.requireAll,
          approvers: added,
        })),
      ],
    };
    expect(lines(definition, gated)).toContain(`${environment}: approval by ${approvalOf(added)} added`);
  });

  it("say a stop weakened by a class, and strengthened back", () => {
    const stopping = stoppingEnvironment(definition);
    expect(stopping).toBeDefined();
    const { environment, dropped } = stopping!;
    const weaker = weakenStop(definition, environment);
    expect(lines(definition, weaker)[0]).toMatch(
      new RegExp(`^${environment}: stop weakened: no longer stops on ${dropped} \\(stops on `),
    );
    expect(lines(weaker, definition)[0]).toMatch(
      new RegExp(`^${environment}: stop strengthened: now stops on ${dropped} `),
    );
  });

  it("say a stop on every change turned on or off, and an environment made ephemeral", () => {
    const [environment, env] = ordinaryEnvironment();
    const { deciders } = riskPolicy(ours.environments[environment]!);
    const every = {
      ...definition,
      environments: {
        ...definition.environments,
        [environment]: { ...withoutRisk(env), deciders, stopEveryPreview: true },
      },
    };
    expect(lines(definition, every)).toEqual([
      `${environment}: stop strengthened: stops on every change (stopEveryPreview)`,
    ]);
    expect(lines(every, definition)[0]).toMatch(
      new RegExp(`^${environment}: stop weakened: no longer stops on every change`),
    );
    const rest = withoutRisk(env);
    const ephemeral = {
      ...definition,
      environments: { ...definition.environments, [environment]: { ...rest, ephemeral: true } },
    };
    expect(lines(definition, ephemeral)).toContain(
      `${environment}: now ephemeral: its resources are destroyed when its update Stack is deleted`,
    );
  });

  it("compare the old field names as their new meaning: destructiveChangeApprovers and protected are no change", () => {
    const [environment, env] = ordinaryEnvironment();
    const { deciders } = riskPolicy(ours.environments[environment]!);
    const rest = withoutRisk(env);
    const old = {
      ...definition,
      environments: {
        ...definition.environments,
        [environment]: { ...rest, protected: true, destructiveChangeApprovers: deciders },
      },
    };
    const now = {
      ...definition,
      environments: { ...definition.environments, [environment]: { ...rest, deciders } },
    };
    expect(lines(old, now)).toEqual([]);
  });

  it("say an environment moved to another AWS account", () => {
    const [environment] = Object.keys(definition.environments);
    const account = freeAccount(definition);
    const moved = inAccount(definition, environment!, account);
    const was = ours.environments[environment!]!.aws?.accountId ?? "the cluster's account";
    expect(lines(definition, moved)).toContain(
      `${environment}: moves to another AWS account: ${was} → ${account}`,
    );
    // And to another region in that account.
    const region = ["eu-west-1", "ap-southeast-2"].find(
      (r) => r !== ours.environments[environment!]!.aws?.region,
    )!;
    const elsewhere = {
      ...moved,
      environments: {
        ...moved.environments,
        [environment!]: { ...moved.environments[environment!]!, aws: { accountId: account, region } },
      },
    };
    expect(lines(moved, elsewhere)).toEqual([
      `${environment}: moves to another AWS region: the cluster's region → ${region}`,
    ]);
  });
});

describe("the identities' reach", () => {
  it("is widened for an environment's role whose policy now allows every resource: other environments' resources, named; narrowed back", async () => {
    const [environment, ...others] = Object.keys(ours.environments);
    expect(others.length).toBeGreaterThan(0);
    const account = `system:serviceaccount:${ours.stacks.namespace}:${ours.stacks.serviceAccountName}-${environment}`;
    const arn = plannedServiceAccounts(base).find((sa) => sa.subject === account)?.roleArn;
    const role = plannedRoles(base, PLAN_ACCOUNT_ID).find((r) => r.arn === arn)!;
    expect(role, account).toBeDefined();
    const copy = structuredClone(base);
    for (const r of copy.flatMap((p) => p.resources))
      if (
        r.type === "aws:iam/rolePolicy:RolePolicy" &&
        role.policies.some((p) => p.name.endsWith(`:${r.name}`))
      ) {
        const doc = JSON.parse(r.inputs.policy as string);
        doc.Statement = [doc.Statement].flat().map((s: object) => ({ ...s, Resource: "*" }));
        r.inputs.policy = JSON.stringify(doc);
      }
    const [widened, ...more] = await awsReachChanges(base, copy);
    expect(more).toEqual([]);
    expect(widened?.identity).toContain(role.resource);
    expect(widened?.removed).toEqual([]);
    // What another environment's programs do to their own resources, this one's identity may now do too.
    const theirs = others.flatMap((e) =>
      ours.programs.flatMap((x) =>
        (updatePolicy(ours, x, e)?.Statement ?? []).flatMap((st) =>
          [st.Resource].flat().map((r) => String(r).replace(/\*/g, "example")),
        ),
      ),
    );
    expect(theirs.length).toBeGreaterThan(0);
    expect(widened!.added.some((a) => theirs.some((r) => a.endsWith(` on ${r}`)))).toBe(true);
    const [narrowed] = await awsReachChanges(copy, base);
    expect(narrowed?.removed).toEqual(widened?.added);
    const oversight = await oversightChanges({ before: base, after: copy }, { before: ours, after: ours });
    expect(oversight.changes[0]?.line).toMatch(new RegExp(`${role.resource}.*: AWS reach widened`));
  });

  it("is widened for a group whose gate's Kargo role may now promote into every Stage: the update stages it does not decide, named", () => {
    const copy = structuredClone(base);
    const objects = copy.flatMap((p) => p.resources).filter((r) => r.type.startsWith("kubernetes:"));
    const named = (kind: string, name: string) =>
      objects.find((o) => o.inputs.kind === kind && (o.inputs.metadata as { name: string }).name === name);
    // The Role Kargo's API authorizes the first gate's approvers by (lib/pipeline/rbac.ts approverRoles).
    const gate = ours.stages.find(isGate)!;
    const role = approverRoles(ours).find((r) => r.gate === gate.name)!;
    const binding = objects.find(
      (b) =>
        b.inputs.kind === "RoleBinding" &&
        (b.inputs.subjects as { name: string }[]).some((x) => x.name === role.serviceAccount.name) &&
        named("Role", (b.inputs.roleRef as { name: string }).name),
    )!;
    const planned = named("Role", (binding.inputs.roleRef as { name: string }).name)!;
    (planned.inputs.rules as object[]).push({
      apiGroups: ["kargo.akuity.io"],
      resources: ["stages"],
      verbs: ["promote"],
    });
    const changes = kubernetesReachChanges(base, copy);
    // A hand-made update is a decider's act: the gate's role never reached an update stage.
    let widened = 0;
    for (const group of gate.approvers) {
      const updates = programStages(ours)
        .filter((x) => x.kind === "update")
        .filter((x) => !riskPolicy(ours.environments[x.environment]!).deciders.includes(group))
        .map((x) => `promote into ${x.name}`);
      widened += updates.length;
      const change = changes.find((c) => c.identity === `group ${group}`);
      expect(change?.added ?? [], group).toEqual(expect.arrayContaining(updates));
      expect(change?.removed ?? [], group).toEqual([]);
    }
    expect(widened === 0 || changes.length > 0).toBe(true);
    expect(kubernetesReachChanges(base, structuredClone(base))).toEqual([]);
  });
});

/** Every list of documents that all carry a name, reversed, in every resource's inputs. */
function reverseNamedLists(v: unknown, reversed: string[], path = ""): unknown {
  if (Array.isArray(v)) {
    const items = v.map((x, i) => reverseNamedLists(x, reversed, `${path}[${i}]`));
    if (items.length > 1 && listKey(items, items)) {
      reversed.push(path);
      return items.reverse();
    }
    return items;
  }
  if (typeof v === "object" && v !== null)
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [k, reverseNamedLists(x, reversed, `${path}.${k}`)]),
    );
  return v;
}

describe("lists in the diff", () => {
  it("compare by their names: reordering every named list of the plan is no change", () => {
    const reversed: string[] = [];
    const copy = structuredClone(base).map((p) => ({
      ...p,
      resources: p.resources.map((r) => ({
        ...r,
        inputs: reverseNamedLists(r.inputs, reversed) as Record<string, unknown>,
      })),
    }));
    // The promotion policies (one per stage Kargo runs) among them, whatever the pipeline's size.
    expect(reversed.some((p) => p.endsWith("promotionPolicies"))).toBe(true);
    expect(diffPlans(base, copy).projects.flatMap((p) => p.changes)).toEqual([]);
  });

  it("name the item that changed, not its index", () => {
    const copy = structuredClone(base);
    const config = copy
      .flatMap((p) => p.resources)
      .find((r) =>
        Array.isArray((r.inputs.spec as { promotionPolicies?: unknown } | undefined)?.promotionPolicies),
      )!;
    const policies = (
      config.inputs.spec as {
        promotionPolicies: { stageSelector: { name: string }; autoPromotionEnabled?: boolean }[];
      }
    ).promotionPolicies;
    const last = policies.at(-1)!;
    last.autoPromotionEnabled = !last.autoPromotionEnabled;
    const [change] = diffPlans(base, copy).projects.flatMap((p) => p.changes);
    expect(change?.properties.map((p) => p.path)).toEqual([
      `spec.promotionPolicies[stageSelector.name=${last.stageSelector.name}].autoPromotionEnabled`,
    ]);
  });
});

describe("the report", () => {
  it("is the example in docs/reviewing-changes.md, as `npm run docs` draws it", async () => {
    const text = fs.readFileSync(docPages.reviewingChanges, "utf8");
    const between = text.slice(
      text.indexOf(OVERSIGHT_EXAMPLE_START) + OVERSIGHT_EXAMPLE_START.length,
      text.indexOf(OVERSIGHT_EXAMPLE_END),
    );
    const example = await oversightExample(definition, base);
    expect(between.trim(), "run npm run docs").toBe(oversightBlock(oversightLines(example)));
    // It says each of the four things it was made to show.
    expect(example.changes.map((c) => c.direction)).toContain("weakened");
    expect(between).toMatch(/no person between/);
    expect(between).toMatch(/stop weakened/);
    expect(between).toMatch(/moves to another AWS account/);
    expect(between).toMatch(/AWS reach widened/);
  });

  it("heads the text and the Markdown with oversight, weakened first, before any resource detail", async () => {
    const env = gatedEnvironment(definition)!;
    const after = validatePipeline(withoutGates(definition, env));
    const stopping = stoppingEnvironment(definition)!;
    const stronger = validatePipeline(weakenStop(definition, stopping.environment));
    // Strengthened (the weakened stop, reversed) and weakened (the gates removed) at once.
    const oversight = await oversightChanges({ before: base, after: base }, { before: stronger, after });
    expect(oversight.changes.map((c) => c.direction)).toEqual(
      expect.arrayContaining(["weakened", "strengthened"]),
    );
    expect(oversight.changes[0]?.direction).toBe("weakened");
    expect(oversight.changes.at(-1)?.direction).toBe("strengthened");
    const diff = diffPlans(base, base);
    const report: DiffReport = {
      base: { ref: "main", commit: "0".repeat(40) },
      oversight,
      diff,
      summary: reviewSummary(diff, base, base),
      violations: [],
      before: base,
      after: base,
    };
    const text = renderDiff(report, "text").split("\n");
    const headed = text.findIndex((l) => l.startsWith("Oversight"));
    expect(headed).toBe(2);
    expect(text[headed + 1]).toContain(`!! ${env}: no person between`);
    expect(headed).toBeLessThan(text.findIndex((l) => l.startsWith("Exposure")));
    const md = renderDiff(report, "markdown").split("\n");
    expect(md.find((l) => l.startsWith("### "))).toBe("### Oversight");
    expect(md.find((l) => l.startsWith("- "))).toContain(`**⚠ ${env}: no person between`);
  });
});
