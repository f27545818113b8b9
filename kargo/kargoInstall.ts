import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import { HelmAddon, type AddonSpec, type Values } from "../lib/helmAddon";

export const kargoChart: Omit<AddonSpec, "values"> = {
  name: "kargo",
  chart: "oci://ghcr.io/akuity/kargo-charts/kargo",
  version: "1.11.2",
  namespace: "kargo",
};

/** The node port the Kargo API listens on behind the load balancer. */
export const KARGO_NODE_PORT = 30443;

export interface KargoInstallArgs {
  provider: k8s.Provider;
  awsProvider: aws.Provider;
  /** A DNS name you point at the load balancer; empty to use the load balancer's own name. */
  hostname: string;
  /** Who may reach the API and UI. */
  allowedCidrs: string[];
  network: {
    vpcId: pulumi.Input<string>;
    publicSubnetIds: pulumi.Input<string[]>;
    clusterSecurityGroupId: pulumi.Input<string>;
    nodeAutoScalingGroupNames: pulumi.Input<string[]>;
  };
  cognito: {
    userPoolId: pulumi.Input<string>;
    issuerUrl: pulumi.Input<string>;
    adminGroup: pulumi.Input<string>;
  };
  argocdNamespace: pulumi.Input<string>;
  /** The break-glass admin login (a generated password); off by default, Cognito is the way in. */
  adminAccount: boolean;
  values?: pulumi.Input<Values>;
  tags: Record<string, string>;
}

/**
 * Kargo from its pinned chart, reachable through a network load balancer whose name becomes Kargo's host
 * (and the Cognito callback) in the same `pulumi up`; signing in with Cognito, the platform-admin group as
 * Kargo admins, and, only when asked for, a generated admin account as the break-glass way in.
 */
export class KargoInstall extends pulumi.ComponentResource {
  readonly host: pulumi.Output<string>;
  readonly loadBalancerHostname: pulumi.Output<string>;
  /** The admin account's password, when the account is enabled. */
  readonly adminPassword: pulumi.Output<string> | undefined;
  readonly oidcClientId: pulumi.Output<string>;
  readonly release: k8s.helm.v3.Release;

  constructor(name: string, args: KargoInstallArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:KargoInstall", name, {}, opts);
    const awsOpts = { parent: this, provider: args.awsProvider };

    // A Pulumi-managed NLB has its DNS name before Kargo exists; a Service-made one would only after.
    const lbSecurityGroup = new aws.ec2.SecurityGroup(
      `${name}-lb`,
      {
        description: "Kargo API load balancer",
        vpcId: args.network.vpcId,
        ingress: [{ protocol: "tcp", fromPort: 443, toPort: 443, cidrBlocks: args.allowedCidrs }],
        egress: [
          { protocol: "tcp", fromPort: KARGO_NODE_PORT, toPort: KARGO_NODE_PORT, cidrBlocks: ["0.0.0.0/0"] },
        ],
        tags: args.tags,
      },
      awsOpts,
    );
    new aws.vpc.SecurityGroupIngressRule(
      `${name}-lb-to-nodes`,
      {
        description: "Kargo API load balancer to the API node port",
        securityGroupId: args.network.clusterSecurityGroupId,
        referencedSecurityGroupId: lbSecurityGroup.id,
        ipProtocol: "tcp",
        fromPort: KARGO_NODE_PORT,
        toPort: KARGO_NODE_PORT,
      },
      awsOpts,
    );
    const loadBalancer = new aws.lb.LoadBalancer(
      name,
      {
        loadBalancerType: "network",
        internal: false,
        subnets: args.network.publicSubnetIds,
        securityGroups: [lbSecurityGroup.id],
        tags: args.tags,
      },
      awsOpts,
    );
    const targetGroup = new aws.lb.TargetGroup(
      name,
      {
        port: KARGO_NODE_PORT,
        protocol: "TCP",
        targetType: "instance",
        vpcId: args.network.vpcId,
        healthCheck: { protocol: "TCP", port: String(KARGO_NODE_PORT) },
        tags: args.tags,
      },
      awsOpts,
    );
    new aws.lb.Listener(
      name,
      {
        loadBalancerArn: loadBalancer.arn,
        port: 443,
        protocol: "TCP",
        defaultActions: [{ type: "forward", targetGroupArn: targetGroup.arn }],
        tags: args.tags,
      },
      awsOpts,
    );
    // EKS runs each managed node group in a single Auto Scaling group.
    new aws.autoscaling.Attachment(
      name,
      {
        autoscalingGroupName: pulumi
          .output(args.network.nodeAutoScalingGroupNames)
          .apply((groups) => groups[0]!),
        lbTargetGroupArn: targetGroup.arn,
      },
      awsOpts,
    );
    this.loadBalancerHostname = loadBalancer.dnsName;
    this.host = args.hostname ? pulumi.output(args.hostname) : loadBalancer.dnsName;

    // Kargo uses PKCE: a public client without a secret; the CLI signs in through localhost.
    const client = new aws.cognito.UserPoolClient(
      name,
      {
        name: "kargo",
        userPoolId: args.cognito.userPoolId,
        generateSecret: false,
        allowedOauthFlowsUserPoolClient: true,
        allowedOauthFlows: ["code"],
        allowedOauthScopes: ["openid", "email", "profile"],
        supportedIdentityProviders: ["COGNITO"],
        callbackUrls: [pulumi.interpolate`https://${this.host}/login`, "http://localhost/auth/callback"],
        explicitAuthFlows: ["ALLOW_REFRESH_TOKEN_AUTH"],
        preventUserExistenceErrors: "ENABLED",
      },
      awsOpts,
    );
    this.oidcClientId = client.id;

    // A password login on an internet-facing API skips Cognito's MFA: it exists only when asked for.
    let adminAccount: Values = { enabled: false };
    if (args.adminAccount) {
      const adminPassword = new random.RandomPassword(
        `${name}-admin`,
        { length: 32, special: false },
        { parent: this },
      );
      const signingKey = new random.RandomPassword(
        `${name}-token-signing-key`,
        { length: 64, special: false },
        { parent: this },
      );
      this.adminPassword = adminPassword.result;
      adminAccount = {
        enabled: true,
        passwordHash: adminPassword.bcryptHash,
        tokenSigningKey: signingKey.result,
        tokenTTL: "1h",
      };
    }

    const defaults: Values = {
      api: {
        host: this.host,
        service: { type: "NodePort", nodePort: KARGO_NODE_PORT },
        adminAccount,
        oidc: {
          enabled: true,
          issuerURL: args.cognito.issuerUrl,
          clientID: client.id,
          cliClientID: client.id,
          // Cognito rejects a `groups` scope; its ID tokens carry `cognito:groups` anyway.
          additionalScopes: [],
          usernameClaim: "email",
          admins: { claims: { "cognito:groups": [args.cognito.adminGroup] } },
        },
      },
      controller: { argocd: { namespace: args.argocdNamespace } },
    };
    const addon = new HelmAddon(
      { ...kargoChart, values: defaults },
      { provider: args.provider, values: args.values },
      { parent: this },
    );
    this.release = addon.release;
    this.registerOutputs({ host: this.host, oidcClientId: this.oidcClientId });
  }
}
