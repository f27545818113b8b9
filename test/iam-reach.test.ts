// What every IAM role of the plan can do, as an IAM policy engine answers from the planned policies
// (lib/cli/plan/iam-reach.ts): every answer is what kargo/pipeline.ts means, the docs hold the same table,
// and a widened policy or trust in the plan is caught, naming the identity and the action.
import * as fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { policyResourceName, updatePolicy } from "../lib/pipeline/access";
import { OTHER_ACCOUNT } from "../lib/cli/plan/iam-engine";
import { validatePipeline } from "../lib/pipeline/validate";
import { docPages } from "../lib/markdown";
import type { PlanLike } from "../lib/cli/plan/iam-roles";
import { plannedRoles } from "../lib/cli/plan/iam-roles";
import {
  IAM_TABLE_END,
  IAM_TABLE_START,
  iamReach,
  iamReachTable,
  type ReachRow,
} from "../lib/cli/plan/iam-reach";
import { PLAN_ACCOUNT_ID } from "../lib/cli/plan/mocks";
import { reachProblems } from "../lib/cli/plan/reach-check";
import { accountOf } from "../lib/pipeline/accounts";
import { planChain } from "../lib/cli/plan/projects";

const pipeline = validatePipeline(definition);
const envs = Object.keys(pipeline.environments);
// The first and last environments in the cluster's account, where one's widened policy reaches another's buckets.
const local = envs.filter((e) => accountOf(pipeline.environments, e) === undefined);
const [first, last] = [local[0]!, local.at(-1)!];
const withAws = pipeline.programs.filter((x) => x.aws);
const notAsMeant = (rows: ReachRow[]) =>
  rows.filter((r) => !r.ok).map((r) => `${r.identity} | ${r.question} | ${r.problems.join(", ")}`);

/** A deep copy of the plans with `change` applied to the resource named `name` of type `type`. */
function mutated(
  plans: PlanLike[],
  type: string,
  name: string,
  change: (inputs: Record<string, any>) => void,
): PlanLike[] {
  const copy = JSON.parse(JSON.stringify(plans)) as PlanLike[];
  const found = copy.flatMap((p) => p.resources).filter((r) => r.type === type && r.name === name);
  expect(found, `${type} ${name}`).toHaveLength(1);
  change(found[0]!.inputs);
  return copy;
}
const policyOf = (inputs: Record<string, any>) =>
  typeof inputs.policy === "string" ? JSON.parse(inputs.policy) : inputs.policy;

describe("what every AWS identity of the plan can do, as an IAM policy engine answers", () => {
  let plans: PlanLike[];
  let rows: ReachRow[];
  beforeAll(async () => {
    plans = (await planChain()).map(({ project, resources }) => ({ project, resources }));
    rows = await iamReach(pipeline, plans, PLAN_ACCOUNT_ID);
  }, 120_000);

  it("answers as the pipeline means, for every role", () => {
    expect(notAsMeant(rows)).toEqual([]);
  });

  it("asks about every planned role, every environment and the previews", () => {
    const roles = plannedRoles(plans, PLAN_ACCOUNT_ID);
    expect(roles.length).toBeGreaterThan(0);
    for (const role of roles)
      expect(
        rows.some((r) => r.identity.includes(`\`${role.resource}\``) && r.question === "assumed by"),
        role.resource,
      ).toBe(true);
    for (const env of envs) {
      const mine = rows.filter((r) => r.identity.startsWith(`environment ${env} `));
      for (const x of withAws) {
        expect(
          mine.find((r) => r.question === `does what \`${x.name}\` needs in its account`)?.answer,
          `${env} ${x.name}`,
        ).toMatch(/^yes/);
        expect(
          mine.find((r) => r.question === `\`${x.name}\`'s actions on other environments' resources`)?.answer,
        ).toBe(`denied (${envs.filter((e) => e !== env).join(", ")})`);
      }
      expect(mine.find((r) => r.question === "assumed by")?.answer).toBe(
        `\`system:serviceaccount:${pipeline.stacks.namespace}:${pipeline.stacks.serviceAccountName}-${env}\``,
      );
    }
    expect(
      rows.find((r) => r.identity.startsWith("previews ") && r.question.startsWith("only reads"))?.answer,
    ).toMatch(/^yes/);
  });

  it("is the table in docs/security-and-approvals.md", () => {
    const text = fs.readFileSync(docPages.securityAndApprovals, "utf8");
    const between = text.slice(
      text.indexOf(IAM_TABLE_START) + IAM_TABLE_START.length,
      text.indexOf(IAM_TABLE_END),
    );
    expect(between.trim(), "run npm run docs").toBe(iamReachTable(rows));
  });

  describe("caught when the plan widens", () => {
    it("an environment's policy to every bucket: it reaches the other environments'", async () => {
      const x = withAws[0]!;
      const wide = mutated(
        plans,
        "aws:iam/rolePolicy:RolePolicy",
        policyResourceName(x.name, first),
        (inputs) => {
          const policy = policyOf(inputs);
          for (const s of policy.Statement) s.Resource = "arn:aws:s3:::*";
          inputs.policy = JSON.stringify(policy);
        },
      );
      const bad = notAsMeant(await iamReach(pipeline, wide, PLAN_ACCOUNT_ID));
      expect(bad.join("\n")).toMatch(
        new RegExp(
          `^environment ${first} .*\\| \`${x.name}\`'s actions on other environments' resources \\| .*reaches environment ${last}'s resources: statement \\w+ \\(kargo:${policyResourceName(x.name, first)}\\) allows s3:\\w+`,
          "m",
        ),
      );
    });

    it("an environment's policy without its aws:ResourceAccount conditions: it reaches another account", async () => {
      // Another account's resources are asked about with a policy there that grants everything, so the
      // identity's own conditions alone keep it out: without them, every statement reaches every account.
      const x = withAws[0]!;
      const name = policyResourceName(x.name, first);
      const wide = mutated(plans, "aws:iam/rolePolicy:RolePolicy", name, (inputs) => {
        const policy = policyOf(inputs);
        for (const s of policy.Statement) delete s.Condition;
        inputs.policy = JSON.stringify(policy);
      });
      const bad = notAsMeant(await iamReach(pipeline, wide, PLAN_ACCOUNT_ID));
      const sids = updatePolicy(pipeline, x, first)!.Statement.map((s) => s.Sid);
      expect(sids.length).toBeGreaterThan(0);
      for (const sid of sids)
        expect(bad.join("\n")).toMatch(
          new RegExp(
            `^environment ${first} .*\\| \`${x.name}\`'s actions in any other account \\| .*reaches account ${OTHER_ACCOUNT}: statement ${sid} \\(kargo:${name}\\) allows s3:`,
            "m",
          ),
        );
    });

    it("an environment named inside another's pattern, past the pipeline's check: the engine refuses it too", async () => {
      // The pipeline's check (lib/pipeline/check-reach.ts) refuses `<first>-x` first; should it ever let one
      // through, the engine's answers still name both environments and the statements.
      const added = `${first}-x`;
      const p = {
        ...pipeline,
        environments: {
          ...pipeline.environments,
          [added]: {
            ...pipeline.environments[first]!,
            pulumiStack: `${pipeline.environments[first]!.pulumiStack}-x`,
          },
        },
      };
      const problems = reachProblems(await iamReach(p, plans, PLAN_ACCOUNT_ID));
      for (const x of withAws)
        expect(problems.join("\n")).toMatch(
          new RegExp(
            `^environment ${first} .*: reaches environment ${added}'s resources: statement \\w+ \\(kargo:${policyResourceName(x.name, first)}\\) allows `,
            "m",
          ),
        );
    });

    it("an environment's trust to every ServiceAccount of the namespace: another environment assumes it", async () => {
      const role = plannedRoles(plans, PLAN_ACCOUNT_ID).find((r) =>
        JSON.stringify(r.trust).includes(`${pipeline.stacks.serviceAccountName}-${last}"`),
      )!;
      const wide = mutated(plans, "aws:iam/role:Role", role.resource, (inputs) => {
        inputs.assumeRolePolicy = inputs.assumeRolePolicy
          .replace("StringEquals", "StringLike")
          .replace(`${pipeline.stacks.serviceAccountName}-${last}"`, `*"`);
      });
      const bad = notAsMeant(await iamReach(pipeline, wide, PLAN_ACCOUNT_ID));
      expect(bad.join("\n")).toMatch(
        new RegExp(
          `^environment ${last} .*\\| assumed by \\| .*${pipeline.stacks.serviceAccountName}-${first}\\b`,
          "m",
        ),
      );
    });

    it("a preview policy to a write: it no longer only reads", async () => {
      const x = withAws[0]!;
      const wide = mutated(plans, "aws:iam/rolePolicy:RolePolicy", policyResourceName(x.name), (inputs) => {
        const policy = policyOf(inputs);
        policy.Statement[0].Action = [policy.Statement[0].Action].flat().concat("s3:PutBucketPolicy");
        inputs.policy = JSON.stringify(policy);
      });
      const bad = notAsMeant(await iamReach(pipeline, wide, PLAN_ACCOUNT_ID));
      expect(bad.join("\n")).toMatch(/^previews .*\| only reads .*\| s3:PutBucketPolicy \(/m);
    });

    it("a role allowed to pass every role: it passes a stack identity", async () => {
      const holder = plannedRoles(plans, PLAN_ACCOUNT_ID).find(
        (r) => r.policies.length > 0 && !r.resource.startsWith("program"),
      )!;
      const name = holder.policies[0]!.name.split(":")[1]!;
      const wide = mutated(plans, "aws:iam/rolePolicy:RolePolicy", name, (inputs) => {
        const policy = policyOf(inputs);
        policy.Statement.push({ Effect: "Allow", Action: "iam:PassRole", Resource: "*" });
        inputs.policy = JSON.stringify(policy);
      });
      const bad = notAsMeant(await iamReach(pipeline, wide, PLAN_ACCOUNT_ID));
      expect(bad.join("\n")).toMatch(/\| passes a role to a service \| iam:PassRole on \S+ to /m);
    });
  });
});
