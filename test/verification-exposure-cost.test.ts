// The risk classifier's exposure and cost rules (kargo/verification/rules.mjs, cost-rules.mjs), one step in,
// its classes out; test/verification-classify.test.ts holds the classes, loss, privilege and the matcher.
import { describe, expect, it } from "vitest";
import { UNKNOWN, classifyStep, type Step } from "../kargo/verification/classify.mjs";

import { OPEN, create, update } from "./verification-steps-support";

describe("exposure", () => {
  const sg = "aws:ec2/securityGroup:SecurityGroup";
  const cases: [string, Step][] = [
    ["a security group open to 0.0.0.0/0", create(sg, { ingress: [{ cidrBlocks: ["10.0.0.0/8", OPEN] }] })],
    ["a security group open to ::/0", create(sg, { ingress: [{ ipv6CidrBlocks: ["::/0"] }] })],
    ["a security group whose ingress is unknown at preview", create(sg, { ingress: UNKNOWN })],
    [
      "a security group whose CIDR is unknown at preview",
      create(sg, { ingress: [{ cidrBlocks: [UNKNOWN] }] }),
    ],
    ["an ingress opened to all", update(sg, { ingress: [] }, { ingress: [{ cidrBlocks: [OPEN] }] })],
    [
      "a native security group open to all",
      create("aws-native:ec2:SecurityGroup", { securityGroupIngress: [{ cidrIp: OPEN }] }),
    ],
    [
      "a native security group open to ::/0",
      create("aws-native:ec2:SecurityGroup", { securityGroupIngress: [{ cidrIpv6: "::/0" }] }),
    ],
    [
      "an ingress rule from anywhere",
      create("aws:ec2/securityGroupRule:SecurityGroupRule", { type: "ingress", cidrBlocks: [OPEN] }),
    ],
    [
      "a VPC ingress rule from anywhere",
      create("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", { cidrIpv4: OPEN }),
    ],
    [
      "a VPC ingress rule from anywhere on IPv6",
      create("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", { cidrIpv6: "::/0" }),
    ],
    [
      "a network ACL allowing all in",
      create("aws:ec2/networkAclRule:NetworkAclRule", {
        egress: false,
        ruleAction: "allow",
        cidrBlock: OPEN,
      }),
    ],
    [
      "a network ACL allowing all in on IPv6",
      create("aws:ec2/networkAclRule:NetworkAclRule", { ruleAction: "allow", ipv6CidrBlock: "::/0" }),
    ],
    [
      "a public access block turned off",
      update(
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        { blockPublicPolicy: true },
        {
          blockPublicAcls: true,
          blockPublicPolicy: false,
          ignorePublicAcls: true,
          restrictPublicBuckets: true,
        },
      ),
    ],
    [
      "a public access block left at its defaults (false)",
      create("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", { bucket: "b" }),
    ],
    [
      "a public access block deleted",
      { op: "delete", type: "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock" },
    ],
    [
      "an account public access block deleted",
      { op: "delete-replaced", type: "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock" },
    ],
    [
      "a native bucket without a public access block",
      create("aws-native:s3:Bucket", { bucketName: "b", accessControl: "Private" }),
    ],
    [
      "a native bucket with a public ACL",
      create("aws-native:s3:Bucket", { accessControl: "PublicRead", publicAccessBlockConfiguration: full() }),
    ],
    [
      "a native bucket blocking all but ACLs",
      create("aws-native:s3:Bucket", {
        publicAccessBlockConfiguration: { ...full(), ignorePublicAcls: false },
      }),
    ],
    ["a public-read bucket ACL", create("aws:s3/bucketAclV2:BucketAclV2", { acl: "public-read" })],
    [
      "a bucket made public-read-write",
      update("aws:s3/bucketV2:BucketV2", { acl: "private" }, { acl: "public-read-write" }),
    ],
    [
      "an internet-facing load balancer (internal unset)",
      create("aws:lb/loadBalancer:LoadBalancer", { name: "x" }),
    ],
    [
      "a load balancer made internet-facing",
      update("aws:lb/loadBalancer:LoadBalancer", { internal: true }, { internal: false }),
    ],
    [
      "a native internet-facing load balancer",
      create("aws-native:elasticloadbalancingv2:LoadBalancer", { scheme: "internet-facing" }),
    ],
    [
      "a native load balancer without a scheme",
      create("aws-native:elasticloadbalancingv2:LoadBalancer", { name: "x" }),
    ],
    ["an instance with a public IP", create("aws:ec2/instance:Instance", { associatePublicIpAddress: true })],
    ["a subnet mapping public IPs", create("aws:ec2/subnet:Subnet", { mapPublicIpOnLaunch: true })],
    [
      "a launch template with public IPs",
      create("aws:ec2/launchTemplate:LaunchTemplate", {
        networkInterfaces: [{ associatePublicIpAddress: "true" }],
      }),
    ],
    [
      "a publicly accessible database",
      update("aws:rds/instance:Instance", { publiclyAccessible: false }, { publiclyAccessible: true }),
    ],
    ["an EKS endpoint open to all", create("aws:eks/cluster:Cluster", { vpcConfig: { subnetIds: [] } })],
    [
      "an EKS endpoint without vpcConfig",
      create("aws:eks/cluster:Cluster", { name: "c", roleArn: "r", vpcConfig: UNKNOWN }),
    ],
    [
      "a function URL without auth",
      create("aws:lambda/functionUrl:FunctionUrl", { authorizationType: "NONE" }),
    ],
    ["a native function URL without auth", create("aws-native:lambda:Url", { authType: "NONE" })],
    ["an internet gateway", create("aws:ec2/internetGateway:InternetGateway", {})],
    ["an API gateway", create("aws:apigatewayv2/api:Api", {})],
    ["an Ingress", create("kubernetes:networking.k8s.io/v1:Ingress", {})],
    ["a LoadBalancer Service", create("kubernetes:core/v1:Service", { spec: { type: "LoadBalancer" } })],
    [
      "a NodePort Service",
      update("kubernetes:core/v1:Service", undefined, { spec: { type: "NodePort" } }, ["spec"]),
    ],
  ];
  for (const [name, step] of cases)
    it(`is ${name}`, () => {
      expect(classifyStep(step)).toContain("exposure");
    });

  const not: [string, Step][] = [
    [
      "a security group open to the VPC only",
      create(sg, { ingress: [{ cidrBlocks: ["10.0.0.0/8"], ipv6CidrBlocks: [] }] }),
    ],
    ["a security group with no ingress", create(sg, { egress: [{ cidrBlocks: [OPEN] }] })],
    [
      "a security group's tags changed",
      update(sg, undefined, { ingress: [{ cidrBlocks: [OPEN] }] }, ["tags"]),
    ],
    [
      "a native security group open to the VPC",
      create("aws-native:ec2:SecurityGroup", { securityGroupIngress: [{ cidrIp: "10.0.0.0/8" }] }),
    ],
    [
      "an egress rule to anywhere",
      create("aws:ec2/securityGroupRule:SecurityGroupRule", { type: "egress", cidrBlocks: [OPEN] }),
    ],
    [
      "an ingress rule from a peer group",
      create("aws:ec2/securityGroupRule:SecurityGroupRule", {
        type: "ingress",
        sourceSecurityGroupId: "sg-1",
      }),
    ],
    [
      "a VPC ingress rule from the VPC",
      create("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", { cidrIpv4: "10.0.0.0/16" }),
    ],
    [
      "a network ACL egress rule",
      create("aws:ec2/networkAclRule:NetworkAclRule", { egress: true, ruleAction: "allow", cidrBlock: OPEN }),
    ],
    [
      "a network ACL deny rule",
      create("aws:ec2/networkAclRule:NetworkAclRule", { egress: false, ruleAction: "deny", cidrBlock: OPEN }),
    ],
    [
      "a network ACL allow from the VPC",
      create("aws:ec2/networkAclRule:NetworkAclRule", { ruleAction: "allow", cidrBlock: "10.0.0.0/8" }),
    ],
    ["a full public access block", create("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", full())],
    [
      "a native bucket blocking all",
      create("aws-native:s3:Bucket", { publicAccessBlockConfiguration: full() }),
    ],
    ["a private bucket ACL", create("aws:s3/bucketAclV2:BucketAclV2", { acl: "private" })],
    ["an internal load balancer", create("aws:lb/loadBalancer:LoadBalancer", { internal: true })],
    [
      "a native internal load balancer",
      create("aws-native:elasticloadbalancingv2:LoadBalancer", { scheme: "internal" }),
    ],
    [
      "a load balancer's tags changed",
      update("aws:alb/loadBalancer:LoadBalancer", undefined, { internal: false }, ["tags"]),
    ],
    [
      "an instance without a public IP",
      create("aws:ec2/instance:Instance", { associatePublicIpAddress: false }),
    ],
    ["an instance that does not say", create("aws:ec2/instance:Instance", { ami: "ami-1" })],
    ["a private subnet", create("aws:ec2/subnet:Subnet", { mapPublicIpOnLaunch: false })],
    [
      "a launch template without public IPs",
      create("aws:ec2/launchTemplate:LaunchTemplate", {
        networkInterfaces: [{ associatePublicIpAddress: "false" }],
      }),
    ],
    [
      "a private database",
      create("aws:rds/instance:Instance", { publiclyAccessible: false, instanceClass: "db.t4g.micro" }),
    ],
    [
      "a private EKS endpoint",
      create("aws:eks/cluster:Cluster", { vpcConfig: { endpointPublicAccess: false } }),
    ],
    [
      "an EKS endpoint open to one network",
      create("aws:eks/cluster:Cluster", {
        vpcConfig: { endpointPublicAccess: true, publicAccessCidrs: ["203.0.113.0/24"] },
      }),
    ],
    [
      "a function URL with IAM auth",
      create("aws:lambda/functionUrl:FunctionUrl", { authorizationType: "AWS_IAM" }),
    ],
    ["an API gateway updated", update("aws:apigatewayv2/api:Api", undefined, undefined, ["description"])],
    [
      "a public access block updated to block all",
      update("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", {}, full()),
    ],
    [
      "a public access block unchanged",
      { op: "same", type: "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock" },
    ],
    ["a ClusterIP Service", create("kubernetes:core/v1:Service", { spec: { type: "ClusterIP" } })],
  ];
  for (const [name, step] of not)
    it(`is not ${name}`, () => {
      expect(classifyStep(step)).not.toContain("exposure");
    });

  it("reads a value test only on an update that changes its keys", () => {
    const open = { ingress: [{ cidrBlocks: [OPEN] }] };
    const cases: [string, Record<string, unknown>][] = [
      ["aws-native:ec2:SecurityGroup", { securityGroupIngress: [{ cidrIp: OPEN }] }],
      ["aws-native:s3:Bucket", { accessControl: "PublicRead" }],
      ["aws-native:elasticloadbalancingv2:LoadBalancer", { scheme: "internet-facing" }],
      ["aws:ec2/instance:Instance", { associatePublicIpAddress: true }],
      ["aws:ec2/subnet:Subnet", { mapPublicIpOnLaunch: true }],
      ["aws:ec2/launchTemplate:LaunchTemplate", { networkInterfaces: [{ associatePublicIpAddress: true }] }],
      ["aws:eks/cluster:Cluster", { vpcConfig: {} }],
      [sg, open],
    ];
    for (const [type, inputs] of cases) {
      expect(classifyStep(update(type, undefined, inputs, ["tags"])), type).not.toContain("exposure");
      expect(classifyStep(update(type, {}, inputs)), type).toContain("exposure");
    }
  });

  it("takes a public access block with any setting missing or null as not blocking", () => {
    const partial = {
      publicAccessBlockConfiguration: {
        blockPublicAcls: true,
        blockPublicPolicy: true,
        ignorePublicAcls: true,
      },
    };
    expect(classifyStep(create("aws-native:s3:Bucket", partial))).toContain("exposure");
    expect(
      classifyStep(
        create("aws-native:s3:Bucket", {
          publicAccessBlockConfiguration: { ...full(), restrictPublicBuckets: null },
        }),
      ),
    ).toContain("exposure");
    expect(classifyStep(create("aws:lb/loadBalancer:LoadBalancer", { internal: null }))).toContain(
      "exposure",
    );
    expect(classifyStep(create(sg, { ingress: null }))).not.toContain("exposure");
  });

  it("holds a step whose new inputs are unknown to match a value test (what cannot be told stops)", () => {
    expect(classifyStep(create(sg))).toContain("exposure");
    expect(classifyStep(create("aws:ec2/securityGroupRule:SecurityGroupRule"))).toContain("exposure");
    expect(
      classifyStep(
        create("aws:ec2/securityGroupRule:SecurityGroupRule", { type: UNKNOWN, cidrBlocks: [OPEN] }),
      ),
    ).toContain("exposure");
  });

  function full() {
    return {
      blockPublicAcls: true,
      blockPublicPolicy: true,
      ignorePublicAcls: true,
      restrictPublicBuckets: true,
    };
  }
});

describe("cost", () => {
  const cases: [string, Step][] = [
    ["a new instance", create("aws:ec2/instance:Instance", { instanceType: "t3.micro" })],
    ["a new database", create("aws:rds/instance:Instance", { instanceClass: "db.t4g.micro" })],
    ["a new NAT gateway", create("aws:ec2/natGateway:NatGateway", {})],
    ["a new node group", create("aws:eks/nodeGroup:NodeGroup", {})],
    [
      "a native instance replaced",
      { op: "create-replacement", type: "aws-native:ec2:Instance", newInputs: {} },
    ],
    ["a Karpenter NodePool", create("kubernetes:karpenter.sh/v1:NodePool", {})],
    [
      "a resized instance",
      update("aws:ec2/instance:Instance", { instanceType: "t3.micro" }, { instanceType: "m7i.large" }),
    ],
    [
      "a database's storage grown",
      update("aws:rds/instance:Instance", undefined, undefined, ["allocatedStorage"]),
    ],
    ["a node group scaled", update("aws:eks/nodeGroup:NodeGroup", undefined, undefined, ["scalingConfig"])],
    [
      "a NodePool's limits raised",
      update("kubernetes:karpenter.sh/v1:NodePool", undefined, undefined, ["limits"]),
    ],
    [
      "a native cluster's class changed",
      update("aws-native:rds:DBCluster", undefined, undefined, ["dbInstanceClass"]),
    ],
    ["an update whose keys are unknown", update("aws:rds/instance:Instance", undefined, undefined)],
  ];
  for (const [name, step] of cases)
    it(`is ${name}`, () => {
      expect(classifyStep(step)).toContain("cost");
    });

  const not: [string, Step][] = [
    ["a new bucket", create("aws:s3/bucketV2:BucketV2", {})],
    ["an instance's tags", update("aws:ec2/instance:Instance", { tags: {} }, { tags: { a: "b" } })],
    [
      "a Kubernetes Deployment's replicas",
      update("kubernetes:apps/v1:Deployment", undefined, undefined, ["spec"]),
    ],
    ["an instance deleted", { op: "delete", type: "aws:ec2/instance:Instance" }],
    [
      "an instance imported",
      { op: "import", type: "aws:ec2/instance:Instance", newInputs: { instanceType: "m7i.large" } },
    ],
  ];
  for (const [name, step] of not)
    it(`is not ${name}`, () => {
      expect(classifyStep(step)).not.toContain("cost");
    });
});
