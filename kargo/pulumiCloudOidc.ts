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
