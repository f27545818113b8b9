// The risk classifier (kargo/verification/classify.mjs): one step in, its classes out. The verification Job
// and the plan diff both call it, so what is pinned here is what stops Freight and what the plan's headings say.
import { describe, expect, it } from "vitest";
import {
  CHANGE_OPS,
  LOSS_OPS,
  RISK_CLASSES,
  RULES,
  UNKNOWN,
  classifyStep,
  matchingRules,
  ruleMatches,
  stepFromEngineEvent,
  type Step,
} from "../kargo/verification/classify.mjs";

const OPEN = "0.0.0.0/0";
const create = (type: string, newInputs?: Record<string, unknown>): Step => ({
  op: "create",
  type,
  newInputs,
});
const update = (
  type: string,
  oldInputs: Record<string, unknown> | undefined,
  newInputs: Record<string, unknown> | undefined,
  diffs?: string[],
): Step => ({ op: "update", type, oldInputs, newInputs, ...(diffs ? { diffs } : {}) });

describe("the classes", () => {
  it("are loss, privilege, exposure and cost, in that order, and every rule names one and says why", () => {
    expect(RISK_CLASSES).toEqual(["loss", "privilege", "exposure", "cost"]);
    for (const r of RULES) {
      expect(RISK_CLASSES).toContain(r.class);
      expect(r.why.length).toBeGreaterThan(0);
      expect(r.types.length).toBeGreaterThan(0);
      // Only the providers the module says it covers, or any type for loss by op.
      for (const t of r.types) expect(t).toMatch(/^(\*|aws:|aws-native:|kubernetes:)/);
    }
    for (const c of RISK_CLASSES) expect(RULES.some((r) => r.class === c)).toBe(true);
  });

  it("returns the classes in RISK_CLASSES order, each once, and [] for a step without risk", () => {
    // A replaced IAM role with a policy: loss by its op and privilege by its type.
    const step = { op: "replace", type: "aws:iam/role:Role", newInputs: { assumeRolePolicy: "{}" } };
    expect(classifyStep(step)).toEqual(["loss", "privilege"]);
    expect(classifyStep(create("aws:s3/bucketV2:BucketV2", { bucket: "b" }))).toEqual([]);
    expect(classifyStep(create("random:index/randomPet:RandomPet", {}))).toEqual([]);
  });

  it("refuses what is not a step: no op, no type, not an object", () => {
    for (const s of [
      null,
      undefined,
      "delete",
      { op: "delete" },
      { type: "aws:iam/role:Role" },
      { op: 1, type: "x" },
    ])
      expect(classifyStep(s as unknown as Step)).toEqual([]);
  });
});

describe("loss", () => {
  it("is every delete and replacement op, of any type, and no other op", () => {
    expect(LOSS_OPS).toEqual(["delete", "replace", "create-replacement", "delete-replaced"]);
    for (const op of LOSS_OPS)
      expect(classifyStep({ op, type: "random:index/randomPet:RandomPet" })).toEqual(["loss"]);
    const others = [
      "same",
      "create",
      "update",
      "read",
      "read-replacement",
      "refresh",
      "discard",
      "discard-replaced",
      "remove-pending-replace",
      "import",
      "import-replacement",
    ];
    for (const op of others)
      expect(classifyStep({ op, type: "random:index/randomPet:RandomPet" }), op).toEqual([]);
  });
});

describe("privilege", () => {
  const cases: [string, Step][] = [
    ["a new IAM role", create("aws:iam/role:Role", { assumeRolePolicy: "{}" })],
    [
      "a role's trust policy changed",
      update("aws:iam/role:Role", { assumeRolePolicy: "a" }, { assumeRolePolicy: "b" }),
    ],
    ["an inline role policy", create("aws:iam/rolePolicy:RolePolicy", { policy: "{}" })],
    [
      "a policy attachment",
      create("aws:iam/rolePolicyAttachment:RolePolicyAttachment", { policyArn: "arn" }),
    ],
    ["an IAM user", create("aws:iam/user:User", {})],
    ["an instance profile", create("aws:iam/instanceProfile:InstanceProfile", {})],
    ["a native IAM role", create("aws-native:iam:Role", {})],
    ["a KMS key policy", create("aws:kms/keyPolicy:KeyPolicy", { policy: "{}" })],
    ["a KMS grant", create("aws:kms/grant:Grant", {})],
    ["a KMS key with a policy", create("aws:kms/key:Key", { policy: "{}" })],
    ["a KMS key's policy changed", update("aws:kms/key:Key", undefined, undefined, ["policy"])],
    ["a native KMS key", create("aws-native:kms:Key", { keyPolicy: {} })],
    ["a bucket policy", create("aws:s3/bucketPolicy:BucketPolicy", { policy: "{}" })],
    ["a bucket's own policy", update("aws:s3/bucket:Bucket", { policy: "a" }, { policy: "b" })],
    ["a queue policy", create("aws:sqs/queuePolicy:QueuePolicy", {})],
    ["a queue's own policy", create("aws:sqs/queue:Queue", { policy: "{}" })],
    ["a topic policy", create("aws:sns/topicPolicy:TopicPolicy", {})],
    ["a Lambda permission", create("aws:lambda/permission:Permission", { principal: "s3.amazonaws.com" })],
    ["an ECR repository policy", create("aws:ecr/repositoryPolicy:RepositoryPolicy", {})],
    ["a native ECR repository's policy", create("aws-native:ecr:Repository", { repositoryPolicyText: {} })],
    ["a secret's resource policy", create("aws:secretsmanager/secretPolicy:SecretPolicy", {})],
    ["a native secret resource policy", create("aws-native:secretsmanager:ResourcePolicy", {})],
    [
      "an OpenSearch access policy",
      update("aws:opensearch/domain:Domain", undefined, undefined, ["accessPolicies"]),
    ],
    ["an EKS access entry", create("aws:eks/accessEntry:AccessEntry", {})],
    ["a function's role", update("aws:lambda/function:Function", { role: "a" }, { role: "b" })],
    ["a ClusterRole", create("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", { rules: [] })],
    [
      "a RoleBinding's subjects",
      update("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", undefined, undefined, ["subjects"]),
    ],
  ];
  for (const [name, step] of cases)
    it(`is ${name}`, () => {
      expect(classifyStep(step)).toContain("privilege");
    });

  const not: [string, Step][] = [
    ["a role's tags changed", update("aws:iam/role:Role", { tags: { a: "1" } }, { tags: { a: "2" } })],
    [
      "a role's description and tagsAll changed",
      update("aws:iam/role:Role", undefined, undefined, ["description", "tagsAll"]),
    ],
    ["an update that changed nothing", update("aws:iam/role:Role", { name: "r" }, { name: "r" }, [])],
    ["a bucket without a policy", create("aws:s3/bucket:Bucket", { bucket: "b" })],
    ["a bucket's versioning changed", update("aws:s3/bucket:Bucket", undefined, undefined, ["versioning"])],
    ["a KMS key without a policy", create("aws:kms/key:Key", { description: "k" })],
    ["a function's code changed", update("aws:lambda/function:Function", undefined, undefined, ["code"])],
    [
      "a ClusterRole's labels",
      update("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", undefined, undefined, ["metadata"]),
    ],
    ["an IAM policy read", { op: "read", type: "aws:iam/policy:Policy" }],
    ["an IAM policy imported", { op: "import", type: "aws:iam/policy:Policy", newInputs: { policy: "{}" } }],
    ["an IAM role unchanged", { op: "same", type: "aws:iam/role:Role" }],
  ];
  for (const [name, step] of not)
    it(`is not ${name}`, () => {
      expect(classifyStep(step)).not.toContain("privilege");
    });

  it("takes a key set to null as not set, and a KMS grant's tags as no change of access", () => {
    expect(classifyStep(create("aws:kms/key:Key", { policy: null }))).not.toContain("privilege");
    expect(classifyStep(update("aws:kms/grant:Grant", undefined, undefined, ["tags"]))).not.toContain(
      "privilege",
    );
    expect(classifyStep(update("aws:kms/grant:Grant", undefined, undefined, ["operations"]))).toContain(
      "privilege",
    );
  });

  it("holds an update whose changed keys cannot be told (no diffs, no inputs) to be privilege", () => {
    expect(classifyStep(update("aws:iam/role:Role", undefined, undefined))).toEqual(["privilege"]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", undefined, { policy: "{}" }))).toEqual(["privilege"]);
  });

  it("compares old and new inputs when the step names no changed keys, a removed key included", () => {
    expect(classifyStep(update("aws:s3/bucket:Bucket", { policy: "p" }, {}))).toEqual(["privilege"]);
    expect(
      classifyStep(update("aws:s3/bucket:Bucket", { policy: "p", a: 1 }, { policy: "p", a: 2 })),
    ).toEqual([]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", { a: 1 }, { a: 1, policy: "p" }))).toEqual([
      "privilege",
    ]);
  });

  it("reads a nested diff path by its top-level key", () => {
    expect(
      classifyStep(update("aws:s3/bucket:Bucket", undefined, undefined, ["policy.Statement[0]"])),
    ).toEqual(["privilege"]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", undefined, undefined, ["policyX"]))).toEqual([]);
    expect(classifyStep(update("aws:s3/bucket:Bucket", undefined, undefined, ["tags[0]"]))).toEqual([]);
  });
});

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

describe("the rules", () => {
  it("apply to the ops that make a new state real unless a rule names its own", () => {
    expect(CHANGE_OPS).toEqual(["create", "update", "replace", "create-replacement"]);
    const policy = RULES.find((r) => r.types.includes("aws:s3/bucketPolicy:BucketPolicy"))!;
    for (const op of CHANGE_OPS)
      expect(ruleMatches(policy, { op, type: "aws:s3/bucketPolicy:BucketPolicy" }), op).toBe(true);
    for (const op of ["same", "read", "delete", "import", "refresh"])
      expect(ruleMatches(policy, { op, type: "aws:s3/bucketPolicy:BucketPolicy" }), op).toBe(false);
  });

  it("match a type by its whole token, or by its prefix when the pattern ends in *", () => {
    const iam = RULES.find((r) => r.types.includes("aws:iam/*"))!;
    expect(ruleMatches(iam, create("aws:iam/anything:Anything"))).toBe(true);
    expect(ruleMatches(iam, create("aws:iamx/role:Role"))).toBe(false);
    const policy = RULES.find((r) => r.types.includes("aws:s3/bucketPolicy:BucketPolicy"))!;
    expect(ruleMatches(policy, create("aws:s3/bucketPolicy:BucketPolicyX"))).toBe(false);
    expect(ruleMatches(policy, create("aws:s3/bucketPolicy:BucketPolic"))).toBe(false);
  });

  it("say why a step matched", () => {
    const why = matchingRules(
      create("aws:ec2/securityGroup:SecurityGroup", { ingress: [{ cidrBlocks: [OPEN] }] }),
    ).map((r) => r.why);
    expect(why).toEqual(["ingress from anywhere (0.0.0.0/0 or ::/0)"]);
  });
});

describe("stepFromEngineEvent", () => {
  // An engine event's resourcePreEvent.metadata as Pulumi Cloud stores it (pulumi-cloud-sdk apitype
  // AppStepEventMetadata and AppStepEventStateMetadata).
  const metadata = {
    op: "update",
    urn: "urn:pulumi:dev::app::aws:s3/bucketV2:BucketV2::data",
    type: "aws:s3/bucketV2:BucketV2",
    old: {
      type: "aws:s3/bucketV2:BucketV2",
      urn: "u",
      id: "b",
      parent: "",
      provider: "p",
      inputs: { policy: "a" },
      outputs: {},
    },
    new: {
      type: "aws:s3/bucketV2:BucketV2",
      urn: "u",
      id: "b",
      parent: "",
      provider: "p",
      inputs: { policy: "b" },
      outputs: {},
    },
    diffs: ["policy"],
    detailedDiff: { "tags.team": { kind: "update", inputDiff: true } },
    provider: "p",
  };

  it("takes the op, type, URN, both states' inputs and the changed top-level keys", () => {
    expect(stepFromEngineEvent(metadata)).toEqual({
      op: "update",
      type: "aws:s3/bucketV2:BucketV2",
      urn: metadata.urn,
      oldInputs: { policy: "a" },
      newInputs: { policy: "b" },
      diffs: ["policy", "tags"],
    });
    expect(classifyStep(stepFromEngineEvent(metadata))).toEqual(["privilege"]);
  });

  it("reads the keys from detailedDiff alone, and leaves them unknown when neither says (then compares inputs)", () => {
    const { diffs: _d, ...noDiffs } = metadata;
    expect(stepFromEngineEvent(noDiffs).diffs).toEqual(["tags"]);
    const neither = { ...noDiffs, detailedDiff: {} };
    expect(stepFromEngineEvent(neither).diffs).toBeUndefined();
    expect(stepFromEngineEvent({ ...noDiffs, detailedDiff: null }).diffs).toBeUndefined();
    expect(classifyStep(stepFromEngineEvent(neither))).toEqual(["privilege"]);
  });

  it("leaves out a state that is null (a create has no old, a delete no new)", () => {
    const step = stepFromEngineEvent({
      ...metadata,
      op: "create",
      old: null,
      diffs: undefined,
      detailedDiff: null,
    });
    expect(step).toEqual({
      op: "create",
      type: metadata.type,
      urn: metadata.urn,
      newInputs: { policy: "b" },
    });
    const gone = stepFromEngineEvent({
      ...metadata,
      op: "delete",
      new: null,
      old: { ...metadata.old, inputs: null },
    });
    expect(gone).not.toHaveProperty("newInputs");
    expect(gone).not.toHaveProperty("oldInputs");
  });

  it("refuses metadata without an op, a type or a URN", () => {
    expect(() => stepFromEngineEvent(null)).toThrow(/not an object/);
    expect(() => stepFromEngineEvent([])).toThrow(/not an object/);
    for (const k of ["op", "type", "urn"]) {
      const { [k as "op"]: _gone, ...rest } = metadata;
      expect(() => stepFromEngineEvent(rest)).toThrow(/no op, type or urn/);
    }
  });
});
