import * as awsx from "@pulumi/awsx";
import * as pulumi from "@pulumi/pulumi";

export interface NetworkArgs {
  /** VPC CIDR, a private range of /16 to /24. */
  cidrBlock: string;
  /** Number of availability zones, each with one public and one private subnet. */
  availabilityZoneCount: number;
  /** "Single" (default: one NAT gateway, ~$33/month) or "OnePerAz" (one per zone, highly available egress). */
  natGatewayStrategy: "Single" | "OnePerAz";
  /** Tagged `karpenter.sh/discovery` on the private subnets: where burst nodes of this cluster launch. */
  clusterName: string;
  tags: Record<string, string>;
}

/**
 * The VPC the cluster lives in: public subnets for load balancers and NAT, private subnets for the nodes.
 * Subnets carry the role tags Kubernetes load-balancer controllers use to place internet-facing and
 * internal load balancers.
 */
export class Network extends pulumi.ComponentResource {
  readonly vpcId: pulumi.Output<string>;
  readonly publicSubnetIds: pulumi.Output<string[]>;
  readonly privateSubnetIds: pulumi.Output<string[]>;

  constructor(name: string, args: NetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("platform:cluster:Network", name, {}, opts);

    const vpc = new awsx.ec2.Vpc(
      name,
      {
        cidrBlock: args.cidrBlock,
        numberOfAvailabilityZones: args.availabilityZoneCount,
        subnetStrategy: awsx.ec2.SubnetAllocationStrategy.Auto,
        subnetSpecs: [
          { type: awsx.ec2.SubnetType.Public, tags: { ...args.tags, "kubernetes.io/role/elb": "1" } },
          {
            type: awsx.ec2.SubnetType.Private,
            tags: {
              ...args.tags,
              "kubernetes.io/role/internal-elb": "1",
              "karpenter.sh/discovery": args.clusterName,
            },
          },
        ],
        natGateways: { strategy: args.natGatewayStrategy },
        enableDnsHostnames: true,
        enableDnsSupport: true,
        tags: args.tags,
      },
      { parent: this },
    );

    this.vpcId = vpc.vpcId;
    this.publicSubnetIds = vpc.publicSubnetIds;
    this.privateSubnetIds = vpc.privateSubnetIds;
    this.registerOutputs({
      vpcId: this.vpcId,
      publicSubnetIds: this.publicSubnetIds,
      privateSubnetIds: this.privateSubnetIds,
    });
  }
}
