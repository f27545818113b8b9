import { z } from "zod";
import { configFields, loadConfig } from "../lib/config";

const cidr = z
  .string()
  .regex(/^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/, "must be an IPv4 CIDR such as 203.0.113.0/24");

export const kargoConfigSchema = z.object({
  clusterSetupStack: configFields.stackName("cluster-setup"),
  /** Git user Kargo pushes promotions as; with a GitHub token any non-empty name works. */
  gitUsername: z.string().min(1).default("git"),
  gitToken: z
    .string()
    .min(
      1,
      "must be set: pulumi config set --secret gitToken <token that can push to the pipeline's repository>",
    ),
  kargoHostname: z
    .string()
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,}$/,
      "must be a DNS name such as kargo.example.com, without a scheme",
    )
    .or(z.literal(""))
    .default(""),
  kargoHostedZoneId: z
    .string()
    .regex(/^Z[A-Z0-9]{1,31}$/, "must be a Route 53 hosted zone ID such as Z0123456789ABCDEFGHIJ")
    .or(z.literal(""))
    .default(""),
  kargoLoadBalancerZones: z
    .number()
    .int()
    .min(1, "must be at least 1")
    .max(6, "must be at most 6 (one per public subnet)")
    .default(1),
  kargoAllowedCidrs: z
    .array(cidr)
    .min(1, 'must list at least one CIDR; ["0.0.0.0/0"] allows any address')
    .default(["0.0.0.0/0"]),
  kargoValues: z.record(z.string(), z.unknown()).default({}),
  /**
   * Register the Warehouse's push webhook on the pipeline's GitHub repository with gitToken (which then needs
   * admin:repo_hook, or Webhooks: write); false only outputs its URL and secret, to add it by hand.
   */
  githubWebhook: z.boolean().default(true),
  /** Who may deliver webhooks: GitHub's `hooks` ranges (https://api.github.com/meta), IPv4 as the load balancer. */
  webhookAllowedCidrs: z
    .array(cidr)
    .min(1, "must list at least one CIDR")
    .default(["192.30.252.0/22", "185.199.108.0/22", "140.82.112.0/20", "143.55.64.0/20"]),
});

// Hostname and zone come together: a zone alone has no name to certify.
const hostnameWithZone = kargoConfigSchema.superRefine((c, ctx) => {
  if (c.kargoHostedZoneId && !c.kargoHostname) {
    ctx.addIssue({
      code: "custom",
      path: ["kargoHostedZoneId"],
      message: "needs kargo:kargoHostname, the name in that zone to give Kargo a certificate for",
    });
  }
});

export const loadKargoConfig = () => loadConfig(hostnameWithZone, { secrets: ["gitToken"] });
