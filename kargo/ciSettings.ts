import * as github from "@pulumi/github";
import * as pulumi from "@pulumi/pulumi";

/** Who approves the runs of one GitHub environment: GitHub logins, or `team:<slug>` of the repository's org. */
export interface EnvironmentRules {
  reviewers: string[];
  /** Deployment branches: only these may run in the environment (none: any branch, as previews need). */
  branches: string[];
}

export interface CiSettingsArgs {
  /** The pipeline's repository (its name, under the provider's owner). */
  repository: string;
  /** A provider whose token may administer the repository's environments and variables. */
  provider: github.Provider;
  /** The environments the workflows name (.github/workflows: `environment:`), by name. */
  environments: Record<string, EnvironmentRules>;
  /** A reviewer cannot approve a run they started. */
  preventSelfReview: boolean;
  /** Repository variables the workflows read (`vars.NAME`). */
  variables: Record<string, pulumi.Input<string>>;
}

/**
 * The repository settings the CI workflows rely on, as code: each GitHub environment with its required
 * reviewers and deployment-branch rule (docs/security-and-approvals.md says why each), and the repository
 * variables the workflows read. Admins cannot bypass an environment's protection: the approval is what keeps
 * a branch's workflow from the credentials the environment unlocks.
 */
export class CiSettings extends pulumi.ComponentResource {
  constructor(name: string, args: CiSettingsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:CiSettings", name, {}, opts);
    const options = { parent: this, provider: args.provider };
    for (const [environment, rules] of Object.entries(args.environments)) {
      const users = rules.reviewers.filter((r) => !r.startsWith("team:"));
      const teams = rules.reviewers.filter((r) => r.startsWith("team:")).map((r) => r.slice("team:".length));
      const env = new github.RepositoryEnvironment(
        `${name}-${environment}`,
        {
          repository: args.repository,
          environment,
          canAdminsBypass: false,
          preventSelfReview: rules.reviewers.length > 0 && args.preventSelfReview,
          reviewers:
            rules.reviewers.length === 0
              ? []
              : [
                  {
                    users: users.map((username) =>
                      github.getUserOutput({ username }, options).id.apply(Number),
                    ),
                    teams: teams.map((slug) => github.getTeamOutput({ slug }, options).id.apply(Number)),
                  },
                ],
          // Selected branches only, or none at all (any branch, which pull requests' previews need).
          deploymentBranchPolicy:
            rules.branches.length > 0 ? { protectedBranches: false, customBranchPolicies: true } : undefined,
        },
        options,
      );
      for (const branch of rules.branches)
        new github.RepositoryEnvironmentDeploymentPolicy(
          `${name}-${environment}-${branch}`,
          { repository: args.repository, environment: env.environment, branchPattern: branch },
          options,
        );
    }
    for (const [variableName, value] of Object.entries(args.variables))
      new github.ActionsVariable(
        `${name}-${variableName.toLowerCase()}`,
        { repository: args.repository, variableName, value },
        options,
      );
    this.registerOutputs({});
  }
}
