import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

export interface SingleSignOnArgs {
  /** Hosted-UI domain prefix, unique within the region. */
  domainPrefix: pulumi.Input<string>;
  /** "OFF", "OPTIONAL" (users may enrol a TOTP app) or "ON" (every user must). */
  mfa: "OFF" | "OPTIONAL" | "ON";
  /**
   * Cognito's deletion protection (default on). Turn it off through config and `pulumi up` before deleting the
   * pool on purpose: `aws cognito-idp update-user-pool` would reset every setting it is not given.
   */
  deletionProtection: boolean;
  /** Group whose members administer the platform (Kargo admins). */
  adminGroup: string;
  /** One group per approval duty; pipeline gates name the group that approves them. */
  approverGroups: string[];
  tags: Record<string, string>;
}

/**
 * The Cognito user pool the platform UIs sign in with: email addresses as usernames, a strong password
 * policy, users created by admins only, and groups that carry roles (the `cognito:groups` claim). The pool is
 * protected twice over, by Pulumi and by Cognito's deletion protection: losing it loses every user.
 * App clients are created where their callback URLs are known (the `kargo` project).
 */
export class SingleSignOn extends pulumi.ComponentResource {
  readonly userPoolId: pulumi.Output<string>;
  readonly userPoolArn: pulumi.Output<string>;
  readonly issuerUrl: pulumi.Output<string>;
  /** Hosted UI base URL, `https://<prefix>.auth.<region>.amazoncognito.com`. */
  readonly domainUrl: pulumi.Output<string>;
  /** Region of the pool, which app clients must be created in. */
  readonly region: pulumi.Output<string>;

  constructor(name: string, args: SingleSignOnArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster-setup:SingleSignOn", name, {}, opts);
    const region = aws.getRegionOutput({}, { parent: this }).region;

    const pool = new aws.cognito.UserPool(
      name,
      {
        usernameAttributes: ["email"],
        autoVerifiedAttributes: ["email"],
        usernameConfiguration: { caseSensitive: false },
        passwordPolicy: {
          minimumLength: 14,
          requireLowercase: true,
          requireUppercase: true,
          requireNumbers: true,
          requireSymbols: true,
          temporaryPasswordValidityDays: 3,
        },
        mfaConfiguration: args.mfa,
        softwareTokenMfaConfiguration: args.mfa === "OFF" ? undefined : { enabled: true },
        adminCreateUserConfig: { allowAdminCreateUserOnly: true },
        accountRecoverySetting: { recoveryMechanisms: [{ name: "verified_email", priority: 1 }] },
        deletionProtection: args.deletionProtection ? "ACTIVE" : "INACTIVE",
        tags: args.tags,
      },
      { parent: this, protect: true },
    );

    const groups = [
      { name: args.adminGroup, description: "Platform administrators: Kargo admins" },
      ...args.approverGroups.map((group) => ({
        name: group,
        description: `Approvers: may promote into their gates`,
      })),
    ];
    groups.forEach(
      (group, precedence) =>
        new aws.cognito.UserGroup(
          `${name}-${group.name}`,
          { userPoolId: pool.id, name: group.name, description: group.description, precedence },
          { parent: this },
        ),
    );

    const domain = new aws.cognito.UserPoolDomain(
      name,
      {
        userPoolId: pool.id,
        domain: args.domainPrefix,
        // The classic hosted UI works with the code flow as configured; managed login (2) would also need a
        // branding style per app client before its pages render.
        managedLoginVersion: 1,
      },
      { parent: this },
    );

    this.userPoolId = pool.id;
    this.userPoolArn = pool.arn;
    this.issuerUrl = pulumi.interpolate`https://cognito-idp.${region}.amazonaws.com/${pool.id}`;
    this.domainUrl = pulumi.interpolate`https://${domain.domain}.auth.${region}.amazoncognito.com`;
    this.region = region;
    this.registerOutputs({
      userPoolId: this.userPoolId,
      userPoolArn: this.userPoolArn,
      issuerUrl: this.issuerUrl,
      domainUrl: this.domainUrl,
      region: this.region,
    });
  }
}
