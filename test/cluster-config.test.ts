import { describe, expect, it } from "vitest";
import { architectureOf, clusterConfigSchema } from "../cluster/config";
import { planError } from "./helpers";

describe("cluster rejects bad config before registering anything", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "one availability zone",
      { "cluster:availabilityZoneCount": 1 },
      /cluster:availabilityZoneCount: must be at least 2/,
    ],
    [
      "min above max",
      { "cluster:nodeMinSize": 4, "cluster:nodeMaxSize": 3, "cluster:nodeDesiredSize": 3 },
      /cluster:nodeMinSize: \(4\) must not exceed cluster:nodeMaxSize \(3\)/,
    ],
    [
      "desired outside min..max",
      { "cluster:nodeDesiredSize": 5 },
      /cluster:nodeDesiredSize: \(5\) must lie between/,
    ],
    [
      "a public VPC CIDR",
      { "cluster:vpcCidr": "8.8.0.0/16" },
      /cluster:vpcCidr: "8\.8\.0\.0\/16" is not in a private range/,
    ],
    [
      "a VPC CIDR larger than /16",
      { "cluster:vpcCidr": "10.0.0.0/12" },
      /cluster:vpcCidr: .*allowed sizes are \/16 to \/24/,
    ],
    ["a VPC CIDR with host bits", { "cluster:vpcCidr": "10.0.0.1/16" }, /cluster:vpcCidr: .*host bits set/],
    [
      "a CIDR that is not one",
      { "cluster:vpcCidr": "10.0.0.0" },
      /cluster:vpcCidr: "10\.0\.0\.0" is not an IPv4 CIDR/,
    ],
    [
      "no NAT gateway",
      { "cluster:natGatewayStrategy": "None" },
      /cluster:natGatewayStrategy: "None" would leave the private nodes without egress; allowed values are "Single" and "OnePerAz"/,
    ],
    [
      "an unknown NAT strategy",
      { "cluster:natGatewayStrategy": "Triple" },
      /cluster:natGatewayStrategy: allowed values are "Single"/,
    ],
    [
      "an EBS CSI driver switch that is not a boolean",
      { "cluster:ebsCsiDriver": "yes" },
      /cluster:ebsCsiDriver: must be true \(install the EBS CSI driver and snapshot controller add-ons, the default\) or false/,
    ],
    [
      "an EBS CSI driver version that is not an EKS add-on build",
      { "cluster:ebsCsiDriverVersion": "latest" },
      /cluster:ebsCsiDriverVersion: must be an EKS add-on version such as "v1\.67\.1-eksbuild\.1"/,
    ],
    [
      "no instance types",
      { "cluster:nodeInstanceTypes": [] },
      /cluster:nodeInstanceTypes: must list at least one EC2 instance type/,
    ],
    [
      "mixed architectures",
      { "cluster:nodeInstanceTypes": ["t4g.medium", "t3.medium"] },
      /cluster:nodeInstanceTypes: must not mix Graviton/,
    ],
    [
      "a malformed admin role ARN",
      { "cluster:clusterAdminRoleArns": ["arn:aws:iam::123:user/bob"] },
      /cluster:clusterAdminRoleArns \(at 0\): must be an IAM role ARN/,
    ],
    [
      "a repeated admin role",
      {
        "cluster:clusterAdminRoleArns": [
          "arn:aws:iam::123456789012:role/A",
          "arn:aws:iam::123456789012:role/A",
        ],
      },
      /cluster:clusterAdminRoleArns: must not repeat a role ARN/,
    ],
    [
      "a Kubernetes version that is not pinned",
      { "cluster:kubernetesVersion": "latest" },
      /cluster:kubernetesVersion: must be a Kubernetes minor version/,
    ],
    [
      "a private CIDR for the public endpoint",
      { "cluster:publicAccessCidrs": ["10.1.0.0/16"] },
      /cluster:publicAccessCidrs \(at 0\): "10\.1\.0\.0\/16" is a private range, which never reaches an internet-facing endpoint/,
    ],
    [
      "an unknown log type",
      { "cluster:clusterLogTypes": ["api", "kubelet"] },
      /cluster:clusterLogTypes \(at 1\): Invalid option: expected one of "api"\|"audit"/,
    ],
    [
      "a misspelt key",
      { "cluster:nodeInstanceType": "t3.large" },
      /cluster:nodeInstanceType: unknown key; known keys are .*nodeInstanceTypes/,
    ],
    [
      "seven availability zones",
      { "cluster:availabilityZoneCount": 7 },
      /cluster:availabilityZoneCount: must be at most 6/,
    ],
    [
      "a VPC CIDR smaller than /24",
      { "cluster:vpcCidr": "10.0.0.0/25" },
      /cluster:vpcCidr: .*is a \/25; allowed sizes are \/16 to \/24/,
    ],
    [
      "a cluster name starting with a hyphen",
      { "cluster:clusterName": "-platform" },
      /cluster:clusterName: must be 1-100 letters, digits, hyphens or underscores, starting with a letter or digit/,
    ],
    [
      "a cluster name of 101 characters",
      { "cluster:clusterName": "c".repeat(101) },
      /cluster:clusterName: must be 1-100 letters/,
    ],
    [
      "a cluster name with a space",
      { "cluster:clusterName": "my platform" },
      /cluster:clusterName: must be 1-100 letters/,
    ],
    [
      "an instance type that is not one",
      { "cluster:nodeInstanceTypes": ["t4g medium"] },
      /cluster:nodeInstanceTypes \(at 0\): must be an EC2 instance type such as t4g\.medium/,
    ],
    [
      "two instance types in one string",
      { "cluster:nodeInstanceTypes": ["t4g.medium,t4g.large"] },
      /cluster:nodeInstanceTypes \(at 0\): must be an EC2 instance type such as t4g\.medium/,
    ],
    [
      "an instance type in capitals",
      { "cluster:nodeInstanceTypes": ["T4G.MEDIUM"] },
      /cluster:nodeInstanceTypes \(at 0\): must be an EC2 instance type/,
    ],
    ["more than 100 nodes", { "cluster:nodeMaxSize": 101 }, /cluster:nodeMaxSize: must be at most 100/],
    ["no node", { "cluster:nodeMinSize": 0 }, /cluster:nodeMinSize: must be at least 1/],
    [
      "more pods per node than EKS allows a small instance",
      { "cluster:nodeMaxPods": 111 },
      /cluster:nodeMaxPods: must be at most 110/,
    ],
    [
      "too few pods for the platform",
      { "cluster:nodeMaxPods": 10 },
      /cluster:nodeMaxPods: must be at least 20/,
    ],
    [
      "a negative number of workspaces on the base",
      { "cluster:baseWorkspaces": -1 },
      /cluster:baseWorkspaces: must be 0 \(every workspace on a burst node\) or more/,
    ],
    ["half a workspace", { "cluster:baseWorkspaces": 1.5 }, /cluster:baseWorkspaces: must be a whole number/],
    [
      "more workspaces than a base is for",
      { "cluster:baseWorkspaces": 51 },
      /cluster:baseWorkspaces: must be at most 50/,
    ],
    [
      "a node disk under 20 GiB",
      { "cluster:nodeDiskSizeGiB": 19 },
      /cluster:nodeDiskSizeGiB: must be at least 20/,
    ],
    [
      "a node disk over 1000 GiB",
      { "cluster:nodeDiskSizeGiB": 1001 },
      /cluster:nodeDiskSizeGiB: must be at most 1000/,
    ],
    [
      "a log retention CloudWatch Logs does not offer",
      { "cluster:clusterLogRetentionDays": 10 },
      /cluster:clusterLogRetentionDays: must be one of the periods CloudWatch Logs accepts: 1, 3, 5, 7, 14, 30/,
    ],
    [
      "one CI role for deploys and previews",
      {
        "cluster:ciDeployRoleArn": "arn:aws:iam::123456789012:role/ci",
        "cluster:ciPreviewRoleArn": "arn:aws:iam::123456789012:role/ci",
      },
      /cluster:ciPreviewRoleArn: must differ from cluster:ciDeployRoleArn: previews run with less access than deploys/,
    ],
    [
      "the deploy role also a cluster admin",
      {
        "cluster:clusterAdminRoleArns": ["arn:aws:iam::123456789012:role/ci"],
        "cluster:ciDeployRoleArn": "arn:aws:iam::123456789012:role/ci",
      },
      /cluster:ciDeployRoleArn: "arn:aws:iam::123456789012:role\/ci" is also in cluster:clusterAdminRoleArns/,
    ],
    [
      "desired below min",
      { "cluster:nodeMinSize": 2, "cluster:nodeDesiredSize": 1 },
      /cluster:nodeDesiredSize: \(1\) must lie between cluster:nodeMinSize \(2\) and cluster:nodeMaxSize/,
    ],
    [
      "an unknown support type",
      { "cluster:supportType": "FOREVER" },
      /cluster:supportType: allowed values are "STANDARD" \(upgraded at end of standard support\) and "EXTENDED"/,
    ],
    [
      "a number where a list belongs",
      { "cluster:publicAccessCidrs": 5 },
      /cluster:publicAccessCidrs: Invalid input: expected array/,
    ],
  ];

  it.each(cases)("%s", async (_, overrides, message) => {
    const error = await planError("cluster", overrides);
    expect(error.message).toMatch(/^Invalid configuration for project "cluster":/);
    expect(error.message).toMatch(message);
  });

  // The edges of what each key allows, and the cases a refusal above must not catch.
  it("accepts every value at the edge of what a key allows", () => {
    const accepted: Record<string, unknown>[] = [
      { vpcCidr: "10.0.0.0/16" },
      { vpcCidr: "192.168.4.0/24" },
      { availabilityZoneCount: 6 },
      { clusterName: "p" },
      { clusterName: `P${"_-9".repeat(33)}` },
      { nodeInstanceTypes: ["m7i-flex.large", "c6in.32xlarge"] },
      { nodeMinSize: 1, nodeDesiredSize: 1, nodeMaxSize: 1 },
      { nodeMinSize: 100, nodeDesiredSize: 100, nodeMaxSize: 100 },
      { baseWorkspaces: 0 },
      { baseWorkspaces: 50 },
      { nodeDiskSizeGiB: 20 },
      { nodeDiskSizeGiB: 1000 },
      { clusterLogRetentionDays: 1 },
      { clusterLogRetentionDays: 3653 },
      { ciDeployRoleArn: "arn:aws:iam::123456789012:role/deploy", ciPreviewRoleArn: "" },
      // As `aws eks describe-addon-versions` lists them, parts of any length.
      { ebsCsiDriver: true, ebsCsiDriverVersion: "v10.123.45-eksbuild.12" },
    ];
    for (const config of accepted) {
      const result = clusterConfigSchema.safeParse(config);
      expect(result.error?.issues ?? [], JSON.stringify(config)).toEqual([]);
    }
  });

  it("refuses an EBS CSI add-on version with anything around it, which EKS would not find", () => {
    for (const version of [
      "1.67.1-eksbuild.1",
      "xv1.67.1-eksbuild.1",
      "v1.67.1-eksbuild.1-rc",
      "v1.67.1-eksbuild.1\n",
    ]) {
      const result = clusterConfigSchema.safeParse({ ebsCsiDriverVersion: version });
      expect(
        result.error?.issues.map((i) => i.path.join(".")),
        JSON.stringify(version),
      ).toEqual(["ebsCsiDriverVersion"]);
    }
  });

  it("tells Graviton (arm64) instance types from x86_64 ones, which pick the node group's AMI", () => {
    // Graviton: a "g" right after the generation digit (aws.amazon.com/ec2/instance-types/).
    for (const type of ["t4g.medium", "m7g.large", "c8gd.xlarge", "im4gn.large", "x2gd.medium", "g5g.xlarge"])
      expect(architectureOf(type), type).toBe("arm64");
    for (const type of [
      "t3.medium",
      "m7i.large",
      "m7i-flex.large",
      "g5.xlarge",
      "mac2.metal",
      "u7i-12tb.224xlarge",
    ])
      expect(architectureOf(type), type).toBe("x86_64");
  });

  it("reports every problem at once", async () => {
    const error = await planError("cluster", {
      "cluster:availabilityZoneCount": 1,
      "cluster:nodeInstanceTypes": [],
    });
    expect(error.message).toMatch(/availabilityZoneCount/);
    expect(error.message).toMatch(/nodeInstanceTypes/);
  });
});
