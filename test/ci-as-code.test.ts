// The CI's repository settings and Pulumi Cloud trust as code (kargo/ci.ts, opt-in with kargo:githubCi and
// kargo:pulumiCloudOidc): the GitHub environments the workflows name, with their reviewers and branch rules,
// the repository variables the workflows read, and GitHub's OIDC issuer in Pulumi Cloud with one policy per
// environment. Expectations come from .github/ (what the workflows name and read), not from a list here.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { pipeline } from "../kargo/pipeline";
import { planGithubId } from "../lib/cli/plan/mocks";
import { readStackConfig, repoRoot } from "../lib/cli/plan/projects";
import { githubRepository } from "../lib/pipeline/names";
import { validatePipeline } from "../lib/pipeline/validate";
import { ofType, one, planError, planProject } from "./helpers";

const oidc = { "kargo:pulumiCloudOidc": true, "kargo:ciClusterStack": "acme/cluster/prod" };
const ENVIRONMENT = "github:index/repositoryEnvironment:RepositoryEnvironment";
const BRANCH_POLICY =
  "github:index/repositoryEnvironmentDeploymentPolicy:RepositoryEnvironmentDeploymentPolicy";
const VARIABLE = "github:index/actionsVariable:ActionsVariable";
const ISSUER = "pulumiservice:index:OidcIssuer";
const secrets = ["kargo:githubAdminToken", "kargo:pulumiAdminToken"];
const ci = {
  "kargo:githubCi": true,
  "kargo:githubAdminToken": "ghp_admin0123",
  "kargo:githubPreviewReviewers": ["octocat", "team:platform"],
  "kargo:githubProductionReviewers": ["hubot"],
  "kargo:ciClusterStack": "acme/cluster/prod",
  "kargo:ciAwsDeployRoleArn": "arn:aws:iam::123456789012:role/platform-ci-deploy",
  "kargo:ciAwsPreviewRoleArn": "arn:aws:iam::123456789012:role/platform-ci-preview",
};

/** What the workflows (and the actions they call) name: environments, and the variables they read. */
const githubDir = path.join(repoRoot, ".github");
const yamlFiles = (dir: string): string[] =>
  fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => path.join(dir, f));
const workflowEnvironments = new Set(
  yamlFiles(path.join(githubDir, "workflows")).flatMap((file) => {
    const jobs = (
      YAML.parse(fs.readFileSync(file, "utf8")) as { jobs?: Record<string, { environment?: unknown }> }
    ).jobs;
    return Object.values(jobs ?? {}).flatMap((job) =>
      typeof job.environment === "string"
        ? [job.environment]
        : typeof (job.environment as { name?: string } | undefined)?.name === "string"
          ? [(job.environment as { name: string }).name]
          : [],
    );
  }),
);
const workflowVariables = new Set(
  yamlFiles(githubDir).flatMap((file) =>
    [...fs.readFileSync(file, "utf8").matchAll(/\bvars\.([A-Z0-9_]+)/g)].map((m) => m[1]!),
  ),
);

const variablesOf = (plan: Awaited<ReturnType<typeof planProject>>) =>
  Object.fromEntries(
    ofType(plan, VARIABLE).map((v) => [v.inputs.variableName as string, v.inputs.value as string]),
  );

describe("the CI's settings as code", () => {
  it("plans none of them unless asked for", async () => {
    const plan = await planProject("kargo");
    for (const type of [
      ENVIRONMENT,
      BRANCH_POLICY,
      VARIABLE,
      ISSUER,
      "pulumiservice:index:Team",
      "pulumiservice:index:TeamStackPermission",
    ])
      expect(ofType(plan, type)).toEqual([]);
  });

  it("make every environment the workflows name, previews from any branch, the rest from main only", async () => {
    expect(workflowEnvironments.size).toBeGreaterThan(0);
    const plan = await planProject("kargo", ci, secrets);
    const environments = ofType(plan, ENVIRONMENT).map((e) => e.inputs);
    expect(new Set(environments.map((e) => e.environment))).toEqual(workflowEnvironments);
    const repo = githubRepository(pipeline.source.repoURL).name;
    for (const env of environments) {
      expect(env.repository).toBe(repo);
      expect(env.canAdminsBypass).toBe(false);
      const branches = ofType(plan, BRANCH_POLICY)
        .map((p) => p.inputs)
        .filter((p) => p.environment === env.environment);
      if (env.environment === "preview") {
        expect(env.deploymentBranchPolicy).toBeUndefined();
        expect(branches).toEqual([]);
      } else {
        expect(env.deploymentBranchPolicy).toEqual({ protectedBranches: false, customBranchPolicies: true });
        expect(branches.map((b) => b.branchPattern)).toEqual(["main"]);
      }
    }
    const byName = Object.fromEntries(environments.map((e) => [e.environment as string, e]));
    // Reviewers by numeric ID, as GitHub's API takes them: users and team slugs looked up.
    expect(byName.preview!.reviewers).toEqual([
      { users: [Number(planGithubId("user:octocat"))], teams: [Number(planGithubId("team:platform"))] },
    ]);
    expect(byName.production!.reviewers).toEqual([
      { users: [Number(planGithubId("user:hubot"))], teams: [] },
    ]);
    expect(byName.preview!.preventSelfReview).toBe(true);
    expect(byName.drift!.reviewers).toEqual([]);
  });

  it("set every repository variable the workflows read, from the config and the stacks", async () => {
    const plan = await planProject(
      "kargo",
      { ...ci, "kargo:ciProgramPreviewEnvironment": Object.keys(pipeline.environments)[0] },
      secrets,
    );
    const vars = variablesOf(plan);
    // With a team token the workflows' defaults stand for the token type and scope.
    const optional = new Set(["PULUMI_PREVIEW_TOKEN_TYPE", "PULUMI_PREVIEW_SCOPE"]);
    expect(new Set(Object.keys(vars))).toEqual(
      new Set([...workflowVariables].filter((v) => !optional.has(v))),
    );
    const config = readStackConfig("kargo").values;
    expect(vars).toMatchObject({
      AWS_REGION: readStackConfig("cluster").values["aws:region"],
      AWS_DEPLOY_ROLE_ARN: ci["kargo:ciAwsDeployRoleArn"],
      AWS_PREVIEW_ROLE_ARN: ci["kargo:ciAwsPreviewRoleArn"],
      CLUSTER_STACK: ci["kargo:ciClusterStack"],
      CLUSTER_SETUP_STACK: config["kargo:clusterSetupStack"],
      PULUMI_PREVIEW_TEAM: "ci-preview",
      PROGRAM_PREVIEW_ENVIRONMENT: Object.keys(pipeline.environments)[0],
    });
    expect(vars.KARGO_STACK).toBe(`${vars.PULUMI_ORG}/kargo/${plan.stack}`);
    // A personal token (Team edition) names its type and scope instead of a team.
    const personal = variablesOf(
      await planProject("kargo", { ...ci, "kargo:ciPulumiPreviewToken": "user:ci-bot" }, secrets),
    );
    expect(personal).toMatchObject({
      PULUMI_PREVIEW_TOKEN_TYPE: "urn:pulumi:token-type:access_token:personal",
      PULUMI_PREVIEW_SCOPE: "user:ci-bot",
    });
    expect(personal).not.toHaveProperty("PULUMI_PREVIEW_TEAM");
    // GitHub refuses an empty variable: an organization token sets its type alone.
    const organization = variablesOf(
      await planProject("kargo", { ...ci, "kargo:ciPulumiPreviewToken": "organization" }, secrets),
    );
    expect(organization.PULUMI_PREVIEW_TOKEN_TYPE).toBe("urn:pulumi:token-type:access_token:organization");
    expect(organization).not.toHaveProperty("PULUMI_PREVIEW_SCOPE");
    for (const value of Object.values(organization)) expect(value).not.toBe("");
  });

  it("keep the admin tokens secret", async () => {
    const plan = await planProject(
      "kargo",
      { ...ci, "kargo:pulumiCloudOidc": true, "kargo:pulumiAdminToken": "pul-admin0123" },
      secrets,
    );
    const text = JSON.stringify(plan.resources);
    expect(text).not.toContain("ghp_admin0123");
    expect(text).not.toContain("pul-admin0123");
    expect(one(plan, "pulumi:providers:pulumiservice").inputs.accessToken).toBe("[secret]");
  });

  it("trust GitHub's OIDC issuer in Pulumi Cloud for exactly the workflows' environments", async () => {
    const plan = await planProject("kargo", oidc);
    const issuer = one(plan, ISSUER).inputs as {
      url: string;
      maxExpirationSeconds: number;
      policies: {
        decision: string;
        rules: Record<string, string>;
        tokenType: string;
        teamName?: string;
        authorizedPermissions?: string[];
      }[];
    };
    expect(issuer.url).toBe("https://token.actions.githubusercontent.com");
    expect(issuer.maxExpirationSeconds).toBeLessThanOrEqual(3600);
    const { owner, name } = githubRepository(pipeline.source.repoURL);
    expect(new Set(issuer.policies.map((p) => p.rules.sub))).toEqual(
      new Set([...workflowEnvironments].map((e) => `repo:${owner}/${name}:environment:${e}`)),
    );
    for (const p of issuer.policies) {
      expect(p.decision).toBe("allow");
      expect(Object.keys(p.rules)).toEqual(["sub"]);
    }
    const of = (env: string) => issuer.policies.find((p) => p.rules.sub.endsWith(`:environment:${env}`))!;
    expect(of("preview")).toMatchObject({ tokenType: "team", teamName: "ci-preview" });
    expect(of("drift")).toMatchObject({ tokenType: "team", teamName: "ci-preview" });
    expect(of("production")).toMatchObject({ tokenType: "organization", authorizedPermissions: ["admin"] });
  });

  it("give the preview team Stack Read on every stack a preview or drift check reads, and nothing more", async () => {
    const plan = await planProject("kargo", oidc);
    expect(one(plan, "pulumiservice:index:Team").inputs).toMatchObject({
      teamType: "pulumi",
      name: "ci-preview",
    });
    expect(one(plan, "pulumiservice:index:Team").inputs.members).toBeUndefined();
    const grants = ofType(plan, "pulumiservice:index:TeamStackPermission").map((g) => g.inputs);
    for (const g of grants) expect(g).toMatchObject({ team: "ci-preview", permission: 101 });
    const vars = variablesOf(await planProject("kargo", ci, secrets));
    const programStacks = validatePipeline(pipeline).programs.flatMap((program) =>
      Object.values(pipeline.environments).map(
        (env) => `${pipeline.pulumi.organization}/${program.project}/${env.pulumiStack}`,
      ),
    );
    expect(new Set(grants.map((g) => `${g.organization}/${g.project}/${g.stack}`))).toEqual(
      new Set([oidc["kargo:ciClusterStack"], vars.CLUSTER_SETUP_STACK, vars.KARGO_STACK, ...programStacks]),
    );
    // Personal and organization tokens have no team to make.
    const org = await planProject("kargo", { ...oidc, "kargo:ciPulumiPreviewToken": "organization" });
    expect(ofType(org, "pulumiservice:index:Team")).toEqual([]);
    expect(one(org, ISSUER).inputs.policies).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tokenType: "organization", authorizedPermissions: ["standard"] }),
      ]),
    );
  });

  it("refuse settings that cannot hold, naming the key", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { ...ci, "kargo:githubAdminToken": undefined },
        /kargo:githubAdminToken: must be set when kargo:githubCi is true/,
      ],
      [
        { ...ci, "kargo:githubPreviewReviewers": [] },
        /kargo:githubPreviewReviewers: must list at least one reviewer/,
      ],
      [
        { ...ci, "kargo:githubProductionReviewers": [] },
        /kargo:githubProductionReviewers: must list at least one reviewer/,
      ],
      [
        { ...ci, "kargo:ciAwsDeployRoleArn": undefined },
        /kargo:ciAwsDeployRoleArn: must be set when kargo:githubCi is true/,
      ],
      [
        { ...ci, "kargo:ciClusterStack": "cluster" },
        /kargo:ciClusterStack: must name the cluster stack as <org>\/<project>\/<stack>/,
      ],
      [
        { ...ci, "kargo:githubPreviewReviewers": ["a", "b", "c", "d", "e", "f", "g"] },
        /kargo:githubPreviewReviewers: must list at most 6 users/,
      ],
      [
        { ...ci, "kargo:githubPreviewReviewers": ["not a login"] },
        /kargo:githubPreviewReviewers \(at 0\): must be a GitHub login/,
      ],
      [
        { "kargo:ciPulumiPreviewToken": "ci-preview" },
        /kargo:ciPulumiPreviewToken: must be team:<Pulumi team>, user:<Pulumi login> or organization/,
      ],
      [
        { "kargo:ciProgramPreviewEnvironment": "nowhere" },
        /kargo:ciProgramPreviewEnvironment: must be an environment of kargo\/pipeline\.ts/,
      ],
      [{ "kargo:pulumiCloudOidc": "yes" }, /kargo:pulumiCloudOidc: must be true or false/],
      [
        { "kargo:pulumiCloudOidc": true },
        /kargo:ciClusterStack: must be set when kargo:pulumiCloudOidc is true with a team token/,
      ],
    ];
    for (const [config, message] of cases)
      expect((await planError("kargo", config, secrets)).message).toMatch(message);
  });
});
