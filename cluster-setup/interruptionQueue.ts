import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";

/**
 * The EC2 events Karpenter drains a burst node ahead of, for an on-demand pool: a scheduled change (AWS
 * Health: a retirement or maintenance) and an instance stopping or terminating outside Karpenter. Spot
 * interruption, rebalance and capacity-reservation events never concern on-demand nodes, so they are not
 * routed (aws/karpenter-provider-aws website/content/en/v1.14/getting-started/getting-started-with-karpenter/
 * cloudformation.yaml routes all five).
 */
export const interruptionEvents = [
  { name: "scheduled-change", source: "aws.health", detailType: "AWS Health Event" },
  { name: "state-change", source: "aws.ec2", detailType: "EC2 Instance State-change Notification" },
] as const;

/**
 * The SQS queue Karpenter reads those events from (settings.interruptionQueue), off by default
 * (cluster-setup:karpenterInterruptionQueue): without it Karpenter still replaces a node that goes, once a
 * pod is pending; with it, it drains the node first. Messages live five minutes, encrypted by SQS; only
 * EventBridge may send, only over TLS.
 */
export function interruptionQueue(
  name: string,
  args: { clusterName: pulumi.Input<string>; tags: Record<string, string> },
  parent: pulumi.Resource,
): aws.sqs.Queue {
  const opts = { parent };
  const queue = new aws.sqs.Queue(
    name,
    {
      name: pulumi.interpolate`${args.clusterName}-karpenter`,
      messageRetentionSeconds: 300,
      sqsManagedSseEnabled: true,
      tags: args.tags,
    },
    opts,
  );
  new aws.sqs.QueuePolicy(
    name,
    {
      queueUrl: queue.url,
      policy: queue.arn.apply((arn) =>
        JSON.stringify({
          Version: "2012-10-17",
          Statement: [
            {
              Sid: "EventBridgeSends",
              Effect: "Allow",
              Principal: { Service: "events.amazonaws.com" },
              Action: "sqs:SendMessage",
              Resource: arn,
            },
            {
              Sid: "DenyHTTP",
              Effect: "Deny",
              Principal: "*",
              Action: "sqs:*",
              Resource: arn,
              Condition: { Bool: { "aws:SecureTransport": "false" } },
            },
          ],
        }),
      ),
    },
    opts,
  );
  for (const event of interruptionEvents) {
    const rule = new aws.cloudwatch.EventRule(
      `${name}-${event.name}`,
      {
        eventPattern: JSON.stringify({ source: [event.source], "detail-type": [event.detailType] }),
        tags: args.tags,
      },
      opts,
    );
    new aws.cloudwatch.EventTarget(`${name}-${event.name}`, { rule: rule.name, arn: queue.arn }, opts);
  }
  return queue;
}
