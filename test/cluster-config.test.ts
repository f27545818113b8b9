import { describe, expect, it } from "vitest";
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
      /cluster:ebsCsiDriver: must be true \(install the EBS CSI driver add-on\) or false \(the default\)/,
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

  it("reports every problem at once", async () => {
    const error = await planError("cluster", {
      "cluster:availabilityZoneCount": 1,
      "cluster:nodeInstanceTypes": [],
    });
    expect(error.message).toMatch(/availabilityZoneCount/);
    expect(error.message).toMatch(/nodeInstanceTypes/);
  });
});
