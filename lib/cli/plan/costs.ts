// What the planned resources cost idle, a month, in us-east-1 on-demand list prices: the cost table of
// docs/capacity-and-cost.md (checked by test/costs.test.ts) and the cost heading of `npm run plan -- --diff` both come from here.
import { markdownTable, replaceBetweenMarkers } from "../../markdown";

const HOURS_PER_MONTH = 730;

/** us-east-1 on-demand list prices (USD), from the AWS pricing pages of each service. */
export const price = {
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
  /** gp3 storage; its baseline 3,000 IOPS and 125 MB/s cost nothing more. EKS add-ons themselves are free. */
  volumePerGBMonth: { gp3: 0.08 } as Record<string, number>,
  /** EBS snapshots (standard tier), billed on the blocks they hold, at most the source volume's size. */
  snapshotPerGBMonth: 0.05,
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

export const cents = (usd: number) => Math.round(usd * 100) / 100;

export interface CostItem {
  item: string;
  monthly: number;
}

export interface CostEstimate {
  items: CostItem[];
  /** Sum of the rounded items, as the cost table adds them up. */
  total: number;
  /** Resources that cost money but that this model cannot price (an instance type without a price, ...). */
  unpriced: string[];
  /** What a workspace the base has no room for adds: a burst node (when the plan has a NodePool). */
  perPromotion?: BurstCost;
}

/** The part of a planned resource the model reads (resources.json and the in-memory plan both have it). */
export interface PricedResource {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

const num = (v: unknown, fallback = 0) => (typeof v === "number" ? v : fallback);

/** The idle monthly cost of every resource in `resources` (all projects of one plan together). */
export function monthlyCost(resources: PricedResource[]): CostEstimate {
  const ofType = (type: string) => resources.filter((r) => r.type === type);
  const items: CostItem[] = [];
  const unpriced: string[] = [];
  const add = (item: string, monthly: number) => items.push({ item, monthly: cents(monthly) });

  const logGroups = ofType("aws:cloudwatch/logGroup:LogGroup");
  const retentionDays = Math.max(0, ...logGroups.map((g) => num(g.inputs.retentionInDays)));
  const clusters = ofType("eks:index:Cluster");
  for (const eks of clusters) {
    const support = String((eks.inputs.upgradePolicy as { supportType?: string })?.supportType ?? "STANDARD");
    add(`EKS control plane, ${support.toLowerCase()} support`, price.eksPerHour[support]! * HOURS_PER_MONTH);
  }

  const vpcs = ofType("awsx:ec2:Vpc");
  const natCount = vpcs.reduce((n, vpc) => {
    const strategy = (vpc.inputs.natGateways as { strategy?: string } | undefined)?.strategy ?? "OnePerAz";
    return (
      n + (strategy === "None" ? 0 : strategy === "Single" ? 1 : num(vpc.inputs.numberOfAvailabilityZones, 3))
    );
  }, 0);
  if (vpcs.length > 0) {
    add(`NAT gateway × ${natCount}`, natCount * price.natGatewayPerHour * HOURS_PER_MONTH);
    add(
      `NAT gateway public IPv4 address × ${natCount}`,
      natCount * price.publicIpv4PerHour * HOURS_PER_MONTH,
    );
  }

  for (const nodes of ofType("eks:index:ManagedNodeGroup")) {
    const type = (nodes.inputs.instanceTypes as string[] | undefined)?.[0] ?? "t3.medium";
    const count = num((nodes.inputs.scalingConfig as { desiredSize?: number } | undefined)?.desiredSize);
    const hourly = price.instancePerHour[type];
    if (hourly === undefined) unpriced.push(`node group ${nodes.name}: no hourly price for ${type}`);
    else add(`${type} node × ${count}`, count * hourly * HOURS_PER_MONTH);
    // A launch template of our own decides the root volume type and size instead. With nodeadm options
    // pulumi-eks writes one from diskSize on the AL2023 EKS AMI, whose root volume is gp3 (pulumi-eks v4.3.0
    // nodejs/eks/nodes/nodegroup.ts createMNGCustomLaunchTemplate; amazon-eks-ami
    // templates/al2023/variables-default.json).
    if (nodes.inputs.launchTemplate !== undefined)
      unpriced.push(`node group ${nodes.name}: root volumes from its launch template`);
    else if (nodes.inputs.nodeadmExtraOptions !== undefined) {
      const disk = num(nodes.inputs.diskSize, 20);
      add(`${disk} GiB gp3 root volume × ${count}`, count * disk * price.volumePerGBMonth.gp3!);
    } else {
      const disk = num(nodes.inputs.diskSize, 20);
      add(`${disk} GiB gp2 root volume × ${count}`, count * disk * price.gp2PerGBMonth);
    }
  }

  // Claims of an EBS StorageClass the plan declares: one volume each, of the size claimed. A claim a
  // VolumeSnapshot is taken of is the plugin cache's seed; the snapshot holds at most the seed's blocks.
  const classes = new Map(
    ofType("kubernetes:storage.k8s.io/v1:StorageClass").map((c) => [
      (c.inputs.metadata as { name?: string } | undefined)?.name,
      (c.inputs.parameters as { type?: string } | undefined)?.type,
    ]),
  );
  const snapshots = ofType("kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot").map((snapshot) => ({
    snapshot,
    source: (snapshot.inputs.spec as { source?: { persistentVolumeClaimName?: string } }).source
      ?.persistentVolumeClaimName,
  }));
  const claimGiB = new Map<string, number>();
  const volumes = new Map<string, number>();
  for (const claim of ofType("kubernetes:core/v1:PersistentVolumeClaim")) {
    const spec = claim.inputs.spec as {
      storageClassName?: string;
      resources?: { requests?: { storage?: string } };
    };
    const volumeType = classes.get(spec.storageClassName);
    const gib = /^(\d+)Gi$/.exec(spec.resources?.requests?.storage ?? "")?.[1];
    if (volumeType === undefined || price.volumePerGBMonth[volumeType] === undefined || gib === undefined) {
      unpriced.push(`claim ${claim.name}: no price for its class "${spec.storageClassName}" or its size`);
      continue;
    }
    const name = (claim.inputs.metadata as { name: string }).name;
    claimGiB.set(name, Number(gib));
    const use = snapshots.some((s) => s.source === name) ? "plugin cache seed volume" : "volume";
    const key = `${gib} GiB ${volumeType} ${use}`;
    volumes.set(key, (volumes.get(key) ?? 0) + 1);
  }
  for (const [key, count] of volumes) {
    const [gib, , volumeType] = key.split(" ");
    add(count === 1 ? key : `${key} × ${count}`, count * Number(gib) * price.volumePerGBMonth[volumeType!]!);
  }
  let pluginCacheGiB: number | undefined;
  for (const { snapshot, source } of snapshots) {
    const gib = source === undefined ? undefined : claimGiB.get(source);
    if (gib === undefined) {
      unpriced.push(`snapshot ${snapshot.name}: its source claim is not in the plan`);
      continue;
    }
    pluginCacheGiB = gib;
    add(`plugin cache snapshot, at most ${gib} GB`, gib * price.snapshotPerGBMonth);
  }

  const keys = ofType("aws:kms/key:Key");
  if (keys.length > 0)
    add(
      `KMS key × ${keys.length}, after its second yearly rotation`,
      keys.length * price.kmsKeyPerMonthAfterRotations,
    );

  const loadBalancers = ofType("aws:lb/loadBalancer:LoadBalancer");
  if (loadBalancers.length > 0) {
    const addresses = loadBalancers
      .filter((lb) => lb.inputs.internal !== true)
      .reduce((n, lb) => n + ((lb.inputs.subnets as unknown[] | undefined)?.length ?? 0), 0);
    add(
      `Network load balancer × ${loadBalancers.length} (Kargo)`,
      loadBalancers.length * price.nlbPerHour * HOURS_PER_MONTH,
    );
    add(
      `Load balancer public IPv4 address × ${addresses}`,
      addresses * price.publicIpv4PerHour * HOURS_PER_MONTH,
    );
    const zones = Math.max(0, ...vpcs.map((vpc) => num(vpc.inputs.numberOfAvailabilityZones)));
    if (loadBalancers.some((lb) => lb.inputs.enableCrossZoneLoadBalancing === true) && zones > 1)
      add(
        `Cross-zone data transfer (load balancer to nodes in ${zones} zones), ~${CROSS_ZONE_GB_PER_MONTH} GB (estimate)`,
        CROSS_ZONE_GB_PER_MONTH * price.interZonePerGB,
      );
  }

  for (const eks of clusters) {
    const types = (eks.inputs.enabledClusterLogTypes as string[] | undefined) ?? [];
    if (types.length === 0) continue;
    const logGB = types.reduce((gb, type) => gb + (logGBPerMonth[type] ?? 0), 0);
    // Kept for the retention period: the group holds that many days of ingestion at any time.
    const storedGB = (logGB * retentionDays) / 30;
    add(
      `Control-plane logs (${types.join(", ")}), ~${logGB} GB ingested, ${retentionDays} days kept (estimate)`,
      logGB * price.logIngestionPerGB + storedGB * price.logStoragePerGBMonth,
    );
  }
  if (natCount > 0)
    add(
      `NAT data processing, ~${IMAGE_PULL_GB_PER_MONTH} GB of image pulls (estimate)`,
      IMAGE_PULL_GB_PER_MONTH * price.natDataPerGB,
    );

  // A burst node of the base's type (Karpenter may pick a smaller one of its families) for a workspace's run
  // (about eight minutes with the AWS provider, an estimate) plus the wait before it goes.
  const pool = ofType("kubernetes:karpenter.sh/v1:NodePool")[0];
  const baseType = (
    ofType("eks:index:ManagedNodeGroup")[0]?.inputs.instanceTypes as string[] | undefined
  )?.[0];
  let perPromotion: BurstCost | undefined;
  if (pool && baseType && price.instancePerHour[baseType] !== undefined) {
    const wait = /^(\d+)s$/.exec(
      String(
        (pool.inputs.spec as { disruption?: { consolidateAfter?: string } }).disruption?.consolidateAfter,
      ),
    )?.[1];
    perPromotion = burstCost(baseType, BURST_RUN_MINUTES + Number(wait ?? 0) / 60, pluginCacheGiB);
  }
  return { items, total: cents(items.reduce((sum, i) => sum + i.monthly, 0)), unpriced, perPromotion };
}

/** A workspace's run with the AWS provider and a burst node's start, minutes (an estimate). */
const BURST_RUN_MINUTES = 8;

/** What one promotion's burst adds, when the base has no room for its workspace: priced per node-minute. */
export interface BurstCost {
  instanceType: string;
  minutes: number;
  node: number;
  rootVolume: number;
  /** The run's own plugins volume restored from the cache's snapshot, GiB; none without the cache. */
  pluginCacheGiB?: number;
  pluginVolume: number;
  pulledGB: number;
  imagePull: number;
  total: number;
}

/**
 * A burst node for `minutes` (a workspace's run plus the wait before Karpenter removes the empty node):
 * the instance, its 20 GiB gp3 root volume (cluster-setup/karpenter.ts), the run's plugins volume when the
 * cache is on, and what is pulled through the NAT gateway: the workspace image (~0.3 GB), and the AWS
 * provider (~0.2 GB) only without the cache.
 */
export function burstCost(instanceType: string, minutes: number, pluginCacheGiB?: number): BurstCost {
  const hourly = price.instancePerHour[instanceType];
  if (hourly === undefined) throw new Error(`no hourly price for ${instanceType} in lib/cli/plan/costs.ts`);
  const volumeMinutes = (gib: number) =>
    (gib * price.volumePerGBMonth.gp3! * minutes) / (HOURS_PER_MONTH * 60);
  const node = (hourly * minutes) / 60;
  const rootVolume = volumeMinutes(20);
  const pluginVolume = pluginCacheGiB ? volumeMinutes(pluginCacheGiB) : 0;
  const pulledGB = pluginCacheGiB ? 0.3 : 0.5;
  const imagePull = pulledGB * price.natDataPerGB;
  return {
    instanceType,
    minutes,
    node,
    rootVolume,
    pluginCacheGiB,
    pluginVolume,
    pulledGB,
    imagePull,
    total: node + rootVolume + pluginVolume + imagePull,
  };
}

const COST_START = "<!-- cost table: generated by `npm run docs` from the plan -->";
const COST_END = "<!-- end of cost table -->";

/** The idle-cost table (docs/capacity-and-cost.md), laid out as prettier lays out a Markdown table. */
export function costTable({ items, total }: CostEstimate): string {
  const usd = (n: number) => `$${n.toFixed(2)}`;
  const rows = [
    ["item", "monthly"],
    ...items.map((i) => [i.item, usd(i.monthly)]),
    ["**Total**", `**${usd(total)}**`],
  ];
  return markdownTable(rows);
}

/** `text` with the idle total it states ("about **$N a month**") rewritten: the README and the cost page. */
export function withCostTotal(text: string, estimate: CostEstimate): string {
  const idle = text.replace(
    /about \*\*\$[\d.]+ a month\*\*/,
    `about **$${estimate.total.toFixed(2)} a month**`,
  );
  const burst = estimate.perPromotion;
  return burst
    ? idle.replace(
        /about \*\*\$[\d.]+ per workspace run\*\*/,
        `about **$${burst.total.toFixed(2)} per workspace run**`,
      )
    : idle;
}

const PROMOTION_START = "<!-- promotion cost table: generated by `npm run docs` from the plan -->";
const PROMOTION_END = "<!-- end of promotion cost table -->";

/** What a workspace the base has no room for costs, with the source of each price. */
export function promotionTable(b: BurstCost): string {
  // Cents to four places, and a smaller figure to its first significant digit rather than as nothing.
  const usd = (n: number) => (n > 0 && n < 0.00005 ? `$${n.toPrecision(1)}` : `$${n.toFixed(4)}`);
  return markdownTable([
    ["per workspace on a burst node", "cost", "from"],
    [
      `${b.instanceType} for ${b.minutes} minutes (the run, then the wait before Karpenter removes it)`,
      usd(b.node),
      `EC2 on-demand, $${price.instancePerHour[b.instanceType]}/h`,
    ],
    [
      `its 20 GiB gp3 root volume for ${b.minutes} minutes`,
      usd(b.rootVolume),
      `EBS gp3, $${price.volumePerGBMonth.gp3}/GB-month`,
    ],
    ...(b.pluginCacheGiB
      ? [
          [
            `its ${b.pluginCacheGiB} GiB gp3 plugins volume, restored from the cache's snapshot, for ${b.minutes} minutes`,
            usd(b.pluginVolume),
            `EBS gp3, $${price.volumePerGBMonth.gp3}/GB-month; restoring from a snapshot is free`,
          ],
        ]
      : []),
    [
      b.pluginCacheGiB
        ? `workspace image pulled through the NAT gateway, ~${b.pulledGB} GB (estimate; the provider comes from the cache)`
        : `workspace image and AWS provider pulled through the NAT gateway, ~${b.pulledGB} GB (estimate)`,
      usd(b.imagePull),
      `NAT gateway data processing, $${price.natDataPerGB}/GB`,
    ],
    ["**total**", `**${usd(b.total)}**`, "us-east-1 list prices"],
  ]);
}

/** The cost page with its cost tables, and the total it states above them, rewritten. */
export function withCostTable(page: string, estimate: CostEstimate): string {
  const idle = replaceBetweenMarkers(
    withCostTotal(page, estimate),
    COST_START,
    COST_END,
    costTable(estimate),
  );
  return estimate.perPromotion
    ? replaceBetweenMarkers(idle, PROMOTION_START, PROMOTION_END, promotionTable(estimate.perPromotion))
    : idle;
}
