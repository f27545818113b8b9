import * as pulumi from "@pulumi/pulumi";
import * as pulumiservice from "@pulumi/pulumiservice";

/** The issuer of GitHub Actions' OIDC tokens. */
export const GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com";

/** Which Pulumi token a job of one GitHub environment gets (docs/ci.md, Pulumi Cloud editions). */
export type PulumiToken =
  | { type: "team"; team: string }
  | { type: "personal"; user: string }
  | { type: "organization"; permission: "standard" | "admin" };

/** `team:<name>`, `user:<login>` or `organization` (kargo:ciPulumiPreviewToken), as a token to grant. */
export function previewToken(spec: string): PulumiToken {
  if (spec.startsWith("team:")) return { type: "team", team: spec.slice("team:".length) };
  if (spec.startsWith("user:")) return { type: "personal", user: spec.slice("user:".length) };
  return { type: "organization", permission: "standard" };
}

export interface PulumiCloudOidcArgs {
  /** The Pulumi Cloud organization that trusts GitHub's issuer. */
  organization: string;
  /** `owner/name` of the repository whose workflows get tokens. */
  repository: string;
  /** The token each GitHub environment's jobs get; no other subject gets any. */
  environments: Record<string, PulumiToken>;
  /** The provider (its token may administer the organization), or the default one. */
  provider?: pulumiservice.Provider;
}

/**
 * Pulumi Cloud's trust of GitHub Actions as code: GitHub's OIDC issuer registered in the organization, with
 * one allow policy per GitHub environment whose subject is exactly `repo:<owner>/<repo>:environment:<env>`
 * (GitHub's `sub` for a job in an environment), so no branch or pull request outside those environments'
 * approvals gets a token. Tokens last an hour at most.
 */
export class PulumiCloudOidc extends pulumi.ComponentResource {
  readonly issuerId: pulumi.Output<string>;

  constructor(name: string, args: PulumiCloudOidcArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:PulumiCloudOidc", name, {}, opts);
    const policies = Object.entries(args.environments).map(
      ([environment, token]): pulumiservice.types.input.AuthPolicyDefinitionArgs => ({
        decision: "allow",
        rules: { sub: `repo:${args.repository}:environment:${environment}` },
        tokenType: token.type,
        ...(token.type === "team" ? { teamName: token.team } : {}),
        ...(token.type === "personal" ? { userLogin: token.user } : {}),
        ...(token.type === "organization" ? { authorizedPermissions: [token.permission] } : {}),
      }),
    );
    const issuer = new pulumiservice.OidcIssuer(
      name,
      {
        organization: args.organization,
        name: "github-actions",
        url: GITHUB_ACTIONS_ISSUER,
        maxExpirationSeconds: 3600,
        policies,
      },
      { parent: this, provider: args.provider },
    );
    this.issuerId = issuer.id;
    this.registerOutputs({ issuerId: this.issuerId });
  }
}

export interface PulumiPreviewTeamArgs {
  organization: string;
  /** The team's name, as the OIDC policy and PULUMI_PREVIEW_TEAM name it. */
  team: string;
  /** Every stack previews and drift checks read, `<org>/<project>/<stack>`. */
  stacks: string[];
  provider?: pulumiservice.Provider;
}

/**
 * The Pulumi team whose token previews and drift checks get (Enterprise, Business Critical): Stack Read on
 * every stack they preview, nothing else. Stack Read includes decrypting the stack's secrets, which a preview
 * needs (docs/security-and-approvals.md). The team has no members: only its OIDC-issued token acts as it.
 */
export class PulumiPreviewTeam extends pulumi.ComponentResource {
  constructor(name: string, args: PulumiPreviewTeamArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:PulumiPreviewTeam", name, {}, opts);
    const options = { parent: this, provider: args.provider };
    const team = new pulumiservice.Team(
      name,
      {
        organizationName: args.organization,
        teamType: "pulumi",
        name: args.team,
        displayName: args.team,
        description: "CI previews and drift checks: Stack Read on the platform's and the programs' stacks",
      },
      options,
    );
    for (const stack of [...new Set(args.stacks)]) {
      const [organization, project, stackName] = stack.split("/") as [string, string, string];
      new pulumiservice.TeamStackPermission(
        `${name}-${organization}-${project}-${stackName}`,
        {
          organization,
          project,
          stack: stackName,
          team: team.name.apply((n) => n ?? args.team),
          permission: 101,
        },
        options,
      );
    }
    this.registerOutputs({});
  }
}
