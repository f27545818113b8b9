// The README's idle-cost table, recomputed from what the plan creates: when node sizing, log types, NAT or
// the load balancer change, this fails until the README says what the platform really costs.
import * as fs from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { PlannedResource, ProgramPlan } from "../lib/plan/harness";
import { planChain, repoRoot } from "../lib/plan/projects";
import { ofType, one } from "./helpers";

const HOURS_PER_MONTH = 730;

/** us-east-1 on-demand list prices (USD), from the AWS pricing pages of each service. */
const price = {
  eksPerHour: { STANDARD: 0.1, EXTENDED: 0.6 } as Record<string, number>,
  natGatewayPerHour: 0.045,
  natDataPerGB: 0.045,
  publicIpv4PerHour: 0.005,
  instancePerHour: { "t4g.medium": 0.0336, "t3a.medium": 0.0376, "t3.medium": 0.0416 } as Record<
    string,
    number
  >,
  /** Managed node groups without a launch template get gp2 root volumes (aws/containers-roadmap#1417). */
  gp2PerGBMonth: 0.1,
  /** $1 a key, plus $1 for each of its first two rotations; later rotations are free. */
  kmsKeyPerMonthAfterRotations: 3,
  nlbPerHour: 0.0225,
  /** Data transfer between zones of a region: $0.01/GB out of one zone and $0.01/GB into the other. */
  interZonePerGB: 0.02,
  logIngestionPerGB: 0.5,
  logStoragePerGBMonth: 0.03,
};

/** Estimated idle control-plane log volume per type (GB/month) for this platform's controllers. */
const logGBPerMonth: Record<string, number> = {
  audit: 5,
  api: 3,
  authenticator: 1,
  controllerManager: 2,
  scheduler: 0.5,
};
/**
 * Traffic that crosses zones between the load balancer and the nodes, GB/month: with cross-zone load
 * balancing an NLB node forwards to nodes in other zones, and a node port may forward to a pod on a node in
 * another zone. Idle, that is people using the UI and CLI and GitHub's webhook deliveries.
 */
const CROSS_ZONE_GB_PER_MONTH = 5;
/** Images pulled through the NAT gateway when nodes are replaced (AMI updates), GB/month. */
const IMAGE_PULL_GB_PER_MONTH = 5;

const cents = (usd: number) => Math.round(usd * 100) / 100;

interface Item {
  item: string;
  monthly: number;
}

function idleCost(cluster: ProgramPlan, kargo: ProgramPlan): Item[] {
  const eks = one(cluster, "eks:index:Cluster").inputs as {
    upgradePolicy: { supportType: string };
    enabledClusterLogTypes: string[];
  };
  const vpc = one(cluster, "awsx:ec2:Vpc").inputs as {
    natGateways: { strategy: string };
    numberOfAvailabilityZones: number;
  };
  const nodes = one(cluster, "eks:index:ManagedNodeGroup").inputs as {
    instanceTypes: string[];
    scalingConfig: { desiredSize: number };
    diskSize: number;
    launchTemplate?: unknown;
  };
  const logGroup = one(cluster, "aws:cloudwatch/logGroup:LogGroup").inputs as { retentionInDays: number };
  const keys = ofType(cluster, "aws:kms/key:Key");
  const loadBalancers = ofType(kargo, "aws:lb/loadBalancer:LoadBalancer");

  const natCount = vpc.natGateways.strategy === "Single" ? 1 : vpc.numberOfAvailabilityZones;
  const instanceType = nodes.instanceTypes[0]!;
  const instancePrice = price.instancePerHour[instanceType];
  if (instancePrice === undefined) throw new Error(`add the hourly price of ${instanceType} to this test`);
  expect(nodes.launchTemplate, "a launch template changes the root volume type").toBeUndefined();
  const count = nodes.scalingConfig.desiredSize;
  const lbAddresses = loadBalancers.reduce(
    (n, lb: PlannedResource) => n + (lb.inputs.subnets as []).length,
    0,
  );
  const crossZone = loadBalancers.some((lb) => lb.inputs.enableCrossZoneLoadBalancing === true);
  const zones = vpc.numberOfAvailabilityZones;
  const logGB = eks.enabledClusterLogTypes.reduce((gb, type) => gb + logGBPerMonth[type]!, 0);
  // Kept for the retention period: the group holds that many days of ingestion at any time.
  const storedGB = (logGB * logGroup.retentionInDays) / 30;

  return [
    {
      item: `EKS control plane, ${eks.upgradePolicy.supportType.toLowerCase()} support`,
      monthly: price.eksPerHour[eks.upgradePolicy.supportType]! * HOURS_PER_MONTH,
    },
    { item: `NAT gateway × ${natCount}`, monthly: natCount * price.natGatewayPerHour * HOURS_PER_MONTH },
    {
      item: `NAT gateway public IPv4 address × ${natCount}`,
      monthly: natCount * price.publicIpv4PerHour * HOURS_PER_MONTH,
    },
    {
      item: `${instanceType} node × ${count}`,
      monthly: count * instancePrice * HOURS_PER_MONTH,
    },
    {
      item: `${nodes.diskSize} GiB gp2 root volume × ${count}`,
      monthly: count * nodes.diskSize * price.gp2PerGBMonth,
    },
    {
      item: `KMS key × ${keys.length}, after its second yearly rotation`,
      monthly: keys.length * price.kmsKeyPerMonthAfterRotations,
    },
    {
      item: `Network load balancer × ${loadBalancers.length} (Kargo)`,
      monthly: loadBalancers.length * price.nlbPerHour * HOURS_PER_MONTH,
    },
    {
      item: `Load balancer public IPv4 address × ${lbAddresses}`,
      monthly: lbAddresses * price.publicIpv4PerHour * HOURS_PER_MONTH,
    },
    ...(crossZone && zones > 1
      ? [
          {
            item: `Cross-zone data transfer (load balancer to nodes in ${zones} zones), ~${CROSS_ZONE_GB_PER_MONTH} GB (estimate)`,
            monthly: CROSS_ZONE_GB_PER_MONTH * price.interZonePerGB,
          },
        ]
      : []),
    {
      item: `Control-plane logs (${eks.enabledClusterLogTypes.join(", ")}), ~${logGB} GB ingested, ${logGroup.retentionInDays} days kept (estimate)`,
      monthly: logGB * price.logIngestionPerGB + storedGB * price.logStoragePerGBMonth,
    },
    {
      item: `NAT data processing, ~${IMAGE_PULL_GB_PER_MONTH} GB of image pulls (estimate)`,
      monthly: IMAGE_PULL_GB_PER_MONTH * price.natDataPerGB,
    },
  ].map(({ item, monthly }) => ({ item, monthly: cents(monthly) }));
}

/** The rows of the README table between the cost-table markers, as (item, amount). */
function readmeCostTable(): { rows: Item[]; total: number } {
  const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8");
  const match =
    /<!-- cost table: checked by test\/costs\.test\.ts -->([\s\S]*?)<!-- end of cost table -->/.exec(readme);
  expect(match, "README.md has the cost table between its markers").not.toBeNull();
  const rows = match![1]!
    .split("\n")
    .filter((line) => /^\|.*\$\d/.test(line))
    .map((line) => line.split("|").map((cell) => cell.trim()))
    .map(([, item, monthly]) => ({
      item: item!.replace(/\*\*/g, ""),
      monthly: Number(monthly!.replace(/[$*]/g, "")),
    }));
  const total = rows.find((r) => r.item === "Total");
  return { rows: rows.filter((r) => r !== total), total: total?.monthly ?? NaN };
}

describe("what the platform costs idle", () => {
  let items: Item[];
  beforeAll(async () => {
    const [cluster, , kargo] = await planChain();
    items = idleCost(cluster!, kargo!);
  });

  it("is itemized in the README exactly as the plan prices out", () => {
    expect(readmeCostTable().rows).toEqual(items);
  });

  it("adds up, and stays within $195 a month all-in by default", () => {
    const total = cents(items.reduce((sum, i) => sum + i.monthly, 0));
    expect(readmeCostTable().total).toBe(total);
    expect(total).toBeLessThanOrEqual(195);
    const readme = fs.readFileSync(path.join(repoRoot, "README.md"), "utf8");
    expect(readme).toContain(`**$${total.toFixed(2)} a month**`);
  });
});
