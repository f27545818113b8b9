import * as aws from "@pulumi/aws";
import * as github from "@pulumi/github";
import * as pulumi from "@pulumi/pulumi";
import { ConfigError } from "../lib/config";
import { webhookAllowList } from "./config";

/**
 * GitHub's IPv4 `hooks` ranges as its meta API lists them at deploy time (https://docs.github.com/en/rest/meta/meta),
 * checked like a configured kargo:webhookAllowedCidrs: a change on GitHub's side that a security group
 * cannot hold (more than 60 ranges, a range that is not public) stops the deploy here, naming the key that
 * overrides them. The load balancer listens on IPv4 only, so the IPv6 ranges are not used.
 */
export function checkedHookRanges(ranges: string[]): string[] {
  const checked = webhookAllowList.safeParse(ranges);
  if (!checked.success) {
    throw new ConfigError("kargo", [
      `kargo:webhookAllowedCidrs: unset, and GitHub's hooks ranges (${ranges.join(", ") || "none"}) cannot be used: ${checked.error.issues.map((i) => i.message).join("; ")}; set the key to the ranges to allow`,
    ]);
  }
  return checked.data;
}

/** The node port Kargo's external webhooks server listens on behind the load balancer. */
export const WEBHOOKS_NODE_PORT = 30444;
/** The load balancer port GitHub delivers to (443 is the Kargo API and UI). */
export const WEBHOOKS_LISTENER_PORT = 8443;

export interface WebhookIngressArgs {
  vpcId: pulumi.Input<string>;
  /** The security group the nodes carry (the EKS-created cluster group): the node port opens there. */
  nodeSecurityGroupId: pulumi.Input<string>;
  /** Every Auto Scaling group of the node group; each gets an attachment, as for the Kargo API. */
  nodeAutoScalingGroupNames: string[];
  /** Who may deliver webhooks: GitHub's `hooks` ranges by default. */
  allowedCidrs: string[];
  tags: Record<string, string>;
}

/**
 * The way from GitHub to Kargo's external webhooks server: a security group the platform's load balancer
 * wears for the webhook listener, a target group on the server's node port, and the nodes accepting that
 * port from the load balancer. `KargoInstall` adds the listener to its load balancer.
 */
export class WebhookIngress extends pulumi.ComponentResource {
  readonly securityGroupId: pulumi.Output<string>;
  readonly targetGroupArn: pulumi.Output<string>;

  constructor(name: string, args: WebhookIngressArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:WebhookIngress", name, {}, opts);
    const child = { parent: this };
    const securityGroup = new aws.ec2.SecurityGroup(
      name,
      {
        description: "Webhook deliveries to Kargo's external webhooks server",
        vpcId: args.vpcId,
        ingress: [
          {
            protocol: "tcp",
            fromPort: WEBHOOKS_LISTENER_PORT,
            toPort: WEBHOOKS_LISTENER_PORT,
            cidrBlocks: args.allowedCidrs,
          },
        ],
        egress: [
          {
            protocol: "tcp",
            fromPort: WEBHOOKS_NODE_PORT,
            toPort: WEBHOOKS_NODE_PORT,
            cidrBlocks: ["0.0.0.0/0"],
          },
        ],
        tags: args.tags,
      },
      child,
    );
    new aws.vpc.SecurityGroupIngressRule(
      `${name}-to-nodes`,
      {
        description: "Load balancer to Kargo's external webhooks server node port",
        securityGroupId: args.nodeSecurityGroupId,
        referencedSecurityGroupId: securityGroup.id,
        ipProtocol: "tcp",
        fromPort: WEBHOOKS_NODE_PORT,
        toPort: WEBHOOKS_NODE_PORT,
      },
      child,
    );
    const targetGroup = new aws.lb.TargetGroup(
      name,
      {
        port: WEBHOOKS_NODE_PORT,
        protocol: "TCP",
        targetType: "instance",
        vpcId: args.vpcId,
        healthCheck: { protocol: "TCP", port: String(WEBHOOKS_NODE_PORT) },
        tags: args.tags,
      },
      child,
    );
    for (const group of args.nodeAutoScalingGroupNames) {
      new aws.autoscaling.Attachment(
        `${name}-${group}`,
        { autoscalingGroupName: group, lbTargetGroupArn: targetGroup.arn },
        child,
      );
    }
    this.securityGroupId = securityGroup.id;
    this.targetGroupArn = targetGroup.arn;
    this.registerOutputs({ securityGroupId: this.securityGroupId, targetGroupArn: this.targetGroupArn });
  }
}

export interface GitHubWebhookArgs {
  /** `owner/name` of the pipeline's repository on github.com. */
  repository: { owner: string; name: string };
  /** Signed in with a token allowed to manage the repository's webhooks (`admin:repo_hook`, or Webhooks: write). */
  provider: github.Provider;
  url: pulumi.Input<string>;
  secret: pulumi.Input<string>;
  /** Deliver even though the server's certificate is self-signed: the payload is signed with the secret. */
  insecureSsl: pulumi.Input<boolean>;
}

/** The repository's push webhook that makes the Warehouse look for new Freight at once. */
export class GitHubWebhook extends pulumi.ComponentResource {
  readonly id: pulumi.Output<string>;

  constructor(name: string, args: GitHubWebhookArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:kargo:GitHubWebhook", name, {}, opts);
    const hook = new github.RepositoryWebhook(
      name,
      {
        repository: args.repository.name,
        events: ["push"],
        active: true,
        configuration: {
          url: args.url,
          contentType: "json",
          secret: args.secret,
          insecureSsl: args.insecureSsl,
        },
      },
      { parent: this, provider: args.provider },
    );
    this.id = hook.id;
    this.registerOutputs({ id: this.id });
  }
}
