// A fork with its first environment in the cluster's account and its last in another (docs/accounts.md): its
// stacks/ and docs regenerated, it plans, every IAM answer for its roles is as meant, and its tests pass.
// The cluster's own account named explicitly is the same account. The one step that prepares the other
// account (`npm run account`, the account/ project) makes a role that only kargo's deployer assumes and that
// manages only the platform's roles there.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import {
  ACCOUNT_DEPLOY_ROLE,
  accountOf,
  accountRoleName,
  namedAccounts,
  roleArn,
} from "../lib/pipeline/accounts";
import { validatePipeline } from "../lib/pipeline/validate";
import { accountCommands } from "../lib/cli/account";
import { can, decide, noPolicies } from "../lib/cli/plan/iam-engine";
import { iamReach } from "../lib/cli/plan/iam-reach";
import { plannedRoles, type PlanLike } from "../lib/cli/plan/iam-roles";
import { planProgram } from "../lib/cli/plan/harness";
import { PLAN_ACCOUNT_ID, PLAN_DEPLOYER_ROLE } from "../lib/cli/plan/mocks";
import { repoRoot } from "../lib/cli/plan/projects";

const run = promisify(execFile);
// The first and last environments in the cluster's account (a fork may already have put others elsewhere),
// `last` moved to an account no environment names yet.
const envs = Object.keys(definition.environments).filter(
  (e) => accountOf(definition.environments, e) === undefined,
);
const [first, last] = [envs[0]!, envs.at(-1)!];
const other = ["210987654321", "310987654321", "410987654321"].find(
  (a) => a !== PLAN_ACCOUNT_ID && !namedAccounts(definition.environments).includes(a),
)!;
/** The accounts other than the cluster's that `p`'s environments act in: one OIDC provider and AWS provider each. */
const foreign = (p: ReturnType<typeof validatePipeline>) =>
  namedAccounts(p.environments).filter((a) => a !== PLAN_ACCOUNT_ID);
const base = validatePipeline(definition).stacks.serviceAccountName;
const deployer = `arn:aws:iam::${PLAN_ACCOUNT_ID}:role/${PLAN_DEPLOYER_ROLE}`;

/** The definition with `last` in `account`, as the fork's kargo/pipeline.ts declares it. */
const inAccount = (account: string) =>
  validatePipeline({
    ...definition,
    environments: {
      ...definition.environments,
      [last]: { ...definition.environments[last]!, aws: { accountId: account } },
    },
  });

async function copyOfRepository(copy: string): Promise<void> {
  const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoRoot,
  });
  for (const file of stdout
    .split("\0")
    .filter((f) => f && fs.lstatSync(path.join(repoRoot, f), { throwIfNoEntry: false })?.isFile())) {
    fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
    fs.copyFileSync(path.join(repoRoot, file), path.join(copy, file));
  }
  fs.symlinkSync(path.join(repoRoot, "node_modules"), path.join(copy, "node_modules"));
}

const readPlan = (dir: string): PlanLike[] =>
  ["cluster", "cluster-setup", "kargo"].map((project) =>
    JSON.parse(fs.readFileSync(path.join(dir, project, "resources.json"), "utf8")),
  );

describe("a fork with an environment in another AWS account", () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "fork-accounts-"));
  const node = (args: string[]) => run(process.execPath, ["--import", "tsx", ...args], { cwd: copy });
  /** The fork's kargo/pipeline.ts: ours, with `last` naming `account` (docs/accounts.md, step 1). */
  const declare = (account: string) =>
    fs.writeFileSync(
      path.join(copy, "kargo/pipeline.ts"),
      `${fs.readFileSync(path.join(repoRoot, "kargo/pipeline.ts"), "utf8")}\npipeline.environments[${JSON.stringify(last)}]!.aws = { accountId: ${JSON.stringify(account)} };\n`,
    );
  let plans: PlanLike[];

  beforeAll(async () => {
    await copyOfRepository(copy);
    declare(other);
    await node(["lib/cli/stacks.ts"]);
    await node(["lib/cli/docs.ts"]);
    await node(["lib/cli/plan.ts", "--out", path.join(copy, "plan-out")]);
    plans = readPlan(path.join(copy, "plan-out"));
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("makes the environment's identities in its account through a provider pinned there, the others' as before", () => {
    const roles = plannedRoles(plans, PLAN_ACCOUNT_ID);
    const inOther = roles
      .filter((r) => r.account === other)
      .map((r) => r.name)
      .sort();
    expect(inOther).toEqual([accountRoleName(base), accountRoleName(base, last)].sort());
    const kargo = plans.find((p) => p.project === "kargo")!.resources;
    const provider = kargo.find(
      (r) => r.type === "pulumi:providers:aws" && String(r.inputs.allowedAccountIds).includes(other),
    )!;
    expect(JSON.parse(String(provider.inputs.allowedAccountIds))).toEqual([other]);
    expect(JSON.parse(String(provider.inputs.assumeRoles))[0].roleArn).toBe(
      roleArn("aws", other, ACCOUNT_DEPLOY_ROLE),
    );
    const oidc = kargo.filter((r) => r.type === "aws:iam/openIdConnectProvider:OpenIdConnectProvider");
    expect(oidc).toHaveLength(foreign(inAccount(other)).length);
    expect(new Set(oidc.map((r) => r.inputs.url)).size).toBe(1);
    expect(roles.find((r) => r.account === other)!.trust.Statement[0]!.Principal).toEqual({
      Federated: `arn:aws:iam::${other}:oidc-provider/${String(oidc[0]!.inputs.url).replace("https://", "")}`,
    });
    const setup = plans.find((p) => p.project === "cluster-setup")!;
    expect(
      roles.filter(
        (r) =>
          r.project === "cluster-setup" &&
          r.trust.Statement.some((s) => JSON.stringify(s).includes(`${base}-${first}"`)),
      ),
    ).toHaveLength(1);
    expect(
      roles.some(
        (r) => r.project === "cluster-setup" && JSON.stringify(r.trust).includes(`${base}-${last}"`),
      ),
    ).toBe(false);
    expect(JSON.stringify(setup.resources)).toContain(roleArn("aws", other, accountRoleName(base, last)));
  });

  it("answers as meant for every role, the other account's included", async () => {
    const rows = await iamReach(inAccount(other), plans, PLAN_ACCOUNT_ID);
    expect(
      rows.filter((r) => !r.ok).map((r) => `${r.identity} | ${r.question} | ${r.problems.join(", ")}`),
    ).toEqual([]);
    expect(
      rows.filter(
        (r) => r.identity.startsWith(`environment ${last} `) && r.identity.includes(`account ${other}`),
      ).length,
    ).toBeGreaterThan(0);
    expect(rows.filter((r) => r.identity.startsWith(`previews in ${other} `)).length).toBeGreaterThan(0);
  });

  it("passes the pipeline's and the IAM reach tests", async () => {
    const vitest = path.join(copy, "node_modules", ".bin", "vitest");
    const tests = [
      "test/accounts.test.ts",
      "test/iam-reach.test.ts",
      "test/kargo-access.test.ts",
      "test/cluster-setup.test.ts",
    ];
    const result = await run(vitest, ["run", "--maxWorkers=1", ...tests], { cwd: copy }).catch(
      (err: { stdout: string; stderr: string }) => ({ ...err, failed: true }),
    );
    expect("failed" in result ? `${result.stdout}\n${result.stderr}` : "", "the fork's tests").toBe("");
  });

  it("treats the cluster's own account, named, as the same account: no second OIDC provider, no other provider", async () => {
    declare(PLAN_ACCOUNT_ID);
    const out = path.join(copy, "plan-same");
    await node(["lib/cli/plan.ts", "--out", out]);
    const same = readPlan(out);
    const kargo = same.find((p) => p.project === "kargo")!.resources;
    const oidc = kargo.filter((r) => r.type === "aws:iam/openIdConnectProvider:OpenIdConnectProvider");
    expect(oidc).toHaveLength(foreign(inAccount(PLAN_ACCOUNT_ID)).length);
    expect(JSON.stringify(oidc)).not.toContain(PLAN_ACCOUNT_ID);
    expect(kargo.filter((r) => r.type === "pulumi:providers:aws")).toHaveLength(
      1 + foreign(inAccount(PLAN_ACCOUNT_ID)).length,
    );
    const rows = await iamReach(inAccount(PLAN_ACCOUNT_ID), same, PLAN_ACCOUNT_ID);
    expect(
      rows.filter((r) => !r.ok).map((r) => `${r.identity} | ${r.question} | ${r.problems.join(", ")}`),
    ).toEqual([]);
  });
});

describe("a fork naming an account that is not one", () => {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "fork-bad-account-"));
  beforeAll(async () => {
    await copyOfRepository(copy);
    fs.appendFileSync(
      path.join(copy, "kargo/pipeline.ts"),
      `\npipeline.environments[${JSON.stringify(last)}]!.aws = { accountId: "12345" };\n`,
    );
  });
  afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

  it("is refused by cluster-setup's config, before anything of it is planned, naming the key and the field", async () => {
    const failed = await run(
      process.execPath,
      ["--import", "tsx", "lib/cli/plan.ts", "--project", "cluster-setup"],
      {
        cwd: copy,
      },
    ).then(
      () => undefined,
      (err: { stderr: string }) => err.stderr,
    );
    expect(failed).toContain(
      `cluster-setup:stackEnvironments: environment "${last}": kargo/pipeline.ts environments.${last}.aws.accountId "12345" is not an AWS account ID; allowed: exactly twelve digits`,
    );
    expect(failed).not.toMatch(/\n\s+at /);
  });
});

describe("preparing the other account (npm run account)", () => {
  it("is one command: pulumi up of account/, its stack named after the account, its provider allowed only there", () => {
    const input = {
      ...definition,
      environments: {
        ...definition.environments,
        [last]: { ...definition.environments[last]!, aws: { accountId: other } },
      },
    };
    const commands = accountCommands(last, deployer, input);
    expect(Array.isArray(commands), String(commands)).toBe(true);
    const stack = ["--stack", `${definition.pulumi.organization}/platform-account/${other}`];
    expect(commands).toContainEqual(["config", "set", "deployerArn", deployer, ...stack]);
    expect(commands).toContainEqual(["config", "set", "--path", "aws:allowedAccountIds[0]", other, ...stack]);
    expect((commands as string[][]).at(-1)).toEqual(["up", ...stack]);
    expect(accountCommands(first, deployer, input)).toMatch(
      new RegExp(`^--environment: "${first}" names no AWS account`),
    );
    expect(accountCommands("no-such-environment", deployer, input)).toMatch(
      /^--environment: "no-such-environment" is not an environment/,
    );
    expect(accountCommands(last, "me", input)).toMatch(/^--deployer: must be an IAM role ARN/);
  });

  it("makes a role only kargo's deployer assumes, managing only the platform's roles and the EKS issuers' providers", async () => {
    const plan = await planProgram({
      projectDir: path.join(repoRoot, "account"),
      project: "platform-account",
      stack: other,
      config: { "platform-account:deployerArn": deployer, "aws:region": "us-east-1" },
    });
    const [role] = plannedRoles([plan], PLAN_ACCOUNT_ID);
    expect(role?.name).toBe(ACCOUNT_DEPLOY_ROLE);
    const assume = (principal: string) =>
      decide(
        {
          request: {
            principal,
            action: "sts:AssumeRole",
            resource: { resource: role!.arn, accountId: role!.account },
            contextVariables: {},
          },
          identityPolicies: [
            {
              name: "deployer",
              policy: {
                Version: "2012-10-17",
                Statement: [{ Effect: "Allow", Action: "sts:AssumeRole", Resource: "*" }],
              },
            },
          ],
          resourcePolicy: role!.trust,
          ...noPolicies,
        },
        principal,
      );
    expect(await assume(deployer)).toBe(true);
    expect(await assume(`arn:aws:iam::${PLAN_ACCOUNT_ID}:role/someone-else`)).toBe(false);
    const iam = (name: string) => `arn:aws:iam::${role!.account}:role/${name}`;
    expect(await can(role!, "iam:CreateRole", iam(accountRoleName(base, last)), role!.account)).toBe(true);
    expect(await can(role!, "iam:PutRolePolicy", iam(accountRoleName(base)), role!.account)).toBe(true);
    expect(await can(role!, "iam:CreateRole", iam("admin"), role!.account)).toBe(false);
    expect(await can(role!, "iam:PutRolePolicy", iam(ACCOUNT_DEPLOY_ROLE), role!.account)).toBe(false);
    expect(
      await can(
        role!,
        "iam:CreateOpenIDConnectProvider",
        `arn:aws:iam::${role!.account}:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC`,
        role!.account,
      ),
    ).toBe(true);
    expect(
      await can(
        role!,
        "iam:CreateOpenIDConnectProvider",
        `arn:aws:iam::${role!.account}:oidc-provider/token.actions.githubusercontent.com`,
        role!.account,
      ),
    ).toBe(false);
    expect(await can(role!, "s3:CreateBucket", "arn:aws:s3:::anything", role!.account)).toBe(false);
  });

  it("refuses a deployer that is not a role ARN, naming the key", async () => {
    await expect(
      planProgram({
        projectDir: path.join(repoRoot, "account"),
        project: "platform-account",
        stack: other,
        config: { "platform-account:deployerArn": "me", "aws:region": "us-east-1" },
      }),
    ).rejects.toThrow(/platform-account:deployerArn: must be an IAM role ARN/);
  });
});
