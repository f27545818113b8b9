import * as aws from "@pulumi/aws";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import { HelmAddon, mergeValues, type AddonSpec, type Values } from "../lib/helmAddon";
import { platformNamespaces } from "../lib/namespaces";
import { kargoSizing } from "./kargoSizing";

export const kargoChart: Omit<AddonSpec, "values"> = {
  name: "kargo",
  chart: "oci://ghcr.io/akuity/kargo-charts/kargo",
  version: "1.11.2",
  namespace: platformNamespaces.kargo,
};

/** The node port the Kargo API listens on behind the load balancer. */
export const KARGO_NODE_PORT = 30443;

/**
 * The port `kargo login --sso --port` listens on for the sign-in callback. Without `--port` the CLI picks a
 * random one (akuity/kargo v1.11.2 pkg/cli/cmd/login/login.go), which Cognito, accepting only registered
 * redirect URIs, would refuse.
 */
export const KARGO_CLI_CALLBACK_PORT = 8085;
/** The redirect URI the Kargo CLI sends: its callback path on localhost (same file). */
export const kargoCliCallbackUrl = `http://localhost:${KARGO_CLI_CALLBACK_PORT}/auth/callback`;

export interface KargoInstallArgs {
  provider: k8s.Provider;
  awsProvider: aws.Provider;
  /** A DNS name you point at the load balancer; empty to use the load balancer's own name. */
  hostname: string;
  /**
   * Route 53 hosted zone that holds `hostname`. With both set: an ACM certificate validated through DNS, a
   * TLS listener, and the alias record; without, the API's self-signed certificate passes through.
   */
  hostedZoneId: string;
  /**
   * How many of the public subnets (zones) the load balancer spans; each costs a public IPv4 address.
   * Undefined: all of them, so no single zone's outage takes the UI, the API and the webhook receiver down.
   */
  loadBalancerZones?: number;
  /** Who may reach the API and UI. */
  allowedCidrs: string[];
  network: {
    vpcId: pulumi.Input<string>;
    publicSubnetIds: pulumi.Input<string[]>;
    /** The group the managed nodes carry (the EKS-created cluster security group). */
    nodeSecurityGroupId: pulumi.Input<string>;
    /** Every Auto Scaling group of the node group, known when this program runs. */
    nodeAutoScalingGroupNames: string[];
  };
  cognito: {
    userPoolId: pulumi.Input<string>;
    issuerUrl: pulumi.Input<string>;
    adminGroup: pulumi.Input<string>;
    /** Groups that get Kargo's cluster-level read (`kargo-user`), e.g. every gate's approvers. */
    userGroups: string[];
  };
  argocdNamespace: pulumi.Input<string>;
  /** The break-glass admin login (a generated password); off by default, Cognito is the way in. */
  adminAccount: boolean;
  values?: pulumi.Input<Values>;
  tags: Record<string, string>;
  /** Kargo's external webhooks server on its own listener of the same load balancer (see WebhookIngress). */
  externalWebhooks?: {
    listenerPort: number;
    nodePort: number;
    securityGroupId: pulumi.Input<string>;
    targetGroupArn: pulumi.Input<string>;
  };
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
  /** ARN of the ACM certificate, when a hostname and hosted zone are configured. */
  readonly certificateArn?: pulumi.Output<string>;
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
    // On the group the nodes carry; referencing the load balancer's group admits its traffic even with client
    // IP preservation on (instance targets): docs.aws.amazon.com/elasticloadbalancing/latest/network/load-balancer-security-groups.html
    new aws.vpc.SecurityGroupIngressRule(
      `${name}-lb-to-nodes`,
      {
        description: "Kargo API load balancer to the API node port",
        securityGroupId: args.network.nodeSecurityGroupId,
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
        // Every zone by default: an NLB node serves only its own zone's address, so a zone the load balancer
        // is not in is one it cannot fail over to. Each zone's subnet costs a public IPv4 address ($3.65/month),
        // and with cross-zone load balancing traffic to a node in another zone is billed as inter-zone transfer.
        subnets: pulumi
          .output(args.network.publicSubnetIds)
          .apply((ids) => ids.slice(0, args.loadBalancerZones ?? ids.length)),
        enableCrossZoneLoadBalancing: true,
        securityGroups: [
          lbSecurityGroup.id,
          ...(args.externalWebhooks ? [args.externalWebhooks.securityGroupId] : []),
        ],
        tags: args.tags,
      },
      awsOpts,
    );
    const tls = args.hostname !== "" && args.hostedZoneId !== "";
    const targetGroup = new aws.lb.TargetGroup(
      name,
      {
        port: KARGO_NODE_PORT,
        // With a certificate the listener terminates TLS and re-encrypts to the API's own (self-signed)
        // certificate, which NLBs do not verify; without, TLS passes through untouched.
        protocol: tls ? "TLS" : "TCP",
        targetType: "instance",
        vpcId: args.network.vpcId,
        healthCheck: { protocol: "TCP", port: String(KARGO_NODE_PORT) },
        tags: args.tags,
      },
      awsOpts,
    );
    if (tls) {
      const certificate = new aws.acm.Certificate(
        name,
        { domainName: args.hostname, validationMethod: "DNS", tags: args.tags },
        awsOpts,
      );
      const validationRecord = new aws.route53.Record(
        `${name}-certificate-validation`,
        {
          zoneId: args.hostedZoneId,
          name: certificate.domainValidationOptions.apply((o) => o[0]!.resourceRecordName),
          type: certificate.domainValidationOptions.apply((o) => o[0]!.resourceRecordType),
          records: [certificate.domainValidationOptions.apply((o) => o[0]!.resourceRecordValue)],
          ttl: 300,
          allowOverwrite: true,
        },
        awsOpts,
      );
      // Waits until ACM has issued the certificate, so the listener never gets a pending one.
      const validation = new aws.acm.CertificateValidation(
        name,
        { certificateArn: certificate.arn, validationRecordFqdns: [validationRecord.fqdn] },
        awsOpts,
      );
      new aws.lb.Listener(
        name,
        {
          loadBalancerArn: loadBalancer.arn,
          port: 443,
          protocol: "TLS",
          certificateArn: validation.certificateArn,
          sslPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06",
          defaultActions: [{ type: "forward", targetGroupArn: targetGroup.arn }],
          tags: args.tags,
        },
        awsOpts,
      );
      new aws.route53.Record(
        `${name}-host`,
        {
          zoneId: args.hostedZoneId,
          name: args.hostname,
          type: "A",
          aliases: [{ name: loadBalancer.dnsName, zoneId: loadBalancer.zoneId, evaluateTargetHealth: true }],
        },
        awsOpts,
      );
      this.certificateArn = validation.certificateArn;
    } else {
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
    }
    // One attachment per Auto Scaling group, named after it: when EKS replaces the node group, the next
    // `pulumi up` of kargo attaches the new groups and drops the old (the deploy workflow runs it).
    for (const group of args.network.nodeAutoScalingGroupNames) {
      new aws.autoscaling.Attachment(
        `${name}-${group}`,
        { autoscalingGroupName: group, lbTargetGroupArn: targetGroup.arn },
        awsOpts,
      );
    }
    // Webhook deliveries: their own listener, forwarded to the external webhooks server's node port.
    if (args.externalWebhooks) {
      new aws.lb.Listener(
        `${name}-webhooks`,
        {
          loadBalancerArn: loadBalancer.arn,
          port: args.externalWebhooks.listenerPort,
          protocol: "TCP",
          defaultActions: [{ type: "forward", targetGroupArn: args.externalWebhooks.targetGroupArn }],
          tags: args.tags,
        },
        awsOpts,
      );
    }
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
        callbackUrls: [pulumi.interpolate`https://${this.host}/login`, kargoCliCallbackUrl],
        // Where Cognito's /logout endpoint may send a signed-out user back to.
        logoutUrls: [pulumi.interpolate`https://${this.host}/login`],
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
          users: { claims: { "cognito:groups": args.cognito.userGroups } },
        },
      },
      controller: { argocd: { namespace: args.argocdNamespace } },
      ...(args.externalWebhooks
        ? {
            // The host names the (self-signed) certificate, so it carries no port; the listener adds it.
            externalWebhooksServer: {
              host: this.host,
              service: { type: "NodePort", nodePort: args.externalWebhooks.nodePort },
            },
          }
        : {}),
    };
    const addon = new HelmAddon(
      { ...kargoChart, values: mergeValues(defaults, kargoSizing) },
      { provider: args.provider, values: args.values },
      { parent: this },
    );
    this.release = addon.release;
    this.registerOutputs({
      host: this.host,
      oidcClientId: this.oidcClientId,
      certificateArn: this.certificateArn,
    });
  }
}
