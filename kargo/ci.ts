import * as github from "@pulumi/github";
import * as pulumi from "@pulumi/pulumi";
import * as pulumiservice from "@pulumi/pulumiservice";
import { CiSettings, type EnvironmentRules } from "./ciSettings";
import type { KargoConfig } from "./config";
import type { Pipeline } from "../lib/pipeline/schema";
import { previewToken, PulumiCloudOidc, PulumiPreviewTeam, type PulumiToken } from "./pulumiCloudOidc";

/**
 * The GitHub environments the workflows run in and who approves each (docs/security-and-approvals.md):
 * `preview` from any branch (pull requests), after a reviewer approved the run; `production` on main only,
 * after a reviewer approved it; `drift` on main only, the schedule's, without reviewers.
 */
export function ciEnvironments(config: KargoConfig): Record<string, EnvironmentRules> {
  return {
    preview: { reviewers: config.githubPreviewReviewers, branches: [] },
    production: { reviewers: config.githubProductionReviewers, branches: ["main"] },
    drift: { reviewers: [], branches: ["main"] },
  };
}

/** The repository variables the workflows read (`vars.NAME`), as docs/ci.md lists them. */
export function ciVariables(config: KargoConfig, region: string): Record<string, pulumi.Input<string>> {
  const org = pulumi.getOrganization();
  const token = previewToken(config.ciPulumiPreviewToken);
  return {
    PULUMI_ORG: org,
    AWS_REGION: region,
    AWS_PREVIEW_ROLE_ARN: config.ciAwsPreviewRoleArn!,
    AWS_DEPLOY_ROLE_ARN: config.ciAwsDeployRoleArn!,
    CLUSTER_STACK: config.ciClusterStack!,
    CLUSTER_SETUP_STACK: config.clusterSetupStack,
    KARGO_STACK: `${org}/${pulumi.getProject()}/${pulumi.getStack()}`,
    // A team token (the workflows' default), or a personal or organization token named by type (and a
    // personal one by scope; GitHub refuses a variable with an empty value, so an organization token has none).
    ...(token.type === "team"
      ? { PULUMI_PREVIEW_TEAM: token.team }
      : { PULUMI_PREVIEW_TOKEN_TYPE: `urn:pulumi:token-type:access_token:${token.type}` }),
    ...(token.type === "personal" ? { PULUMI_PREVIEW_SCOPE: `user:${token.user}` } : {}),
    ...(config.ciProgramPreviewEnvironment
      ? { PROGRAM_PREVIEW_ENVIRONMENT: config.ciProgramPreviewEnvironment }
      : {}),
  };
}

/**
 * The tokens Pulumi Cloud grants each environment's jobs: previews and drift checks the preview token;
 * deploys an organization token with admin permission, since the deploy of this project updates the
 * issuer and its policies themselves (a standard token cannot).
 */
export function ciPulumiTokens(config: KargoConfig): Record<string, PulumiToken> {
  const preview = previewToken(config.ciPulumiPreviewToken);
  return {
    preview,
    drift: preview,
    production: { type: "organization", permission: "admin" },
  };
}

/**
 * Every stack a preview or drift check reads: the three platform stacks, and each program's stack in each
 * environment (pull requests preview one environment's; drift.yml every update stage's), named as the PKO
 * Stacks name them (lib/pipeline/promotion.ts).
 */
export function previewedStacks(config: KargoConfig, pipeline: Pipeline): string[] {
  const platform = [
    config.ciClusterStack!,
    config.clusterSetupStack,
    `${pulumi.getOrganization()}/${pulumi.getProject()}/${pulumi.getStack()}`,
  ];
  const programs = pipeline.programs.flatMap((program) =>
    Object.values(pipeline.environments).map(
      (env) => `${pipeline.pulumi.organization}/${program.project}/${env.pulumiStack}`,
    ),
  );
  return [...platform, ...programs];
}

/** The CI's settings as code, each part only when its key turns it on. */
export function ciAsCode(
  config: KargoConfig,
  pipeline: Pipeline,
  repository: { owner: string; name: string },
  adminProvider: () => github.Provider,
  region: string,
): void {
  if (config.githubCi)
    new CiSettings("ci", {
      repository: repository.name,
      provider: adminProvider(),
      environments: ciEnvironments(config),
      preventSelfReview: config.githubPreventSelfReview,
      variables: ciVariables(config, region),
    });
  if (config.pulumiCloudOidc) {
    const provider = config.pulumiAdminToken
      ? new pulumiservice.Provider("pulumi-admin", { accessToken: config.pulumiAdminToken })
      : undefined;
    new PulumiCloudOidc("github-actions", {
      organization: pulumi.getOrganization(),
      repository: `${repository.owner}/${repository.name}`,
      environments: ciPulumiTokens(config),
      provider,
    });
    const token = previewToken(config.ciPulumiPreviewToken);
    if (token.type === "team")
      new PulumiPreviewTeam("ci-preview", {
        organization: pulumi.getOrganization(),
        team: token.team,
        stacks: previewedStacks(config, pipeline),
        provider,
      });
  }
}
