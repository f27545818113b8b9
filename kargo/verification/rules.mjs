// The risk rules of kargo/verification/classify.mjs, as data: which steps carry which class, each row
// saying why. Read classify.mjs first for what a step is and how a row matches one. Covered: AWS through the
// `aws:` (pulumi-aws) and `aws-native:` (CloudFormation-based) type tokens, and Kubernetes RBAC, Services,
// Ingresses and Karpenter NodePools through `kubernetes:` tokens; add a provider by adding rows. The cost
// rows are in cost-rules.mjs.

import { COST_RULES } from "./cost-rules.mjs";

export const RISK_CLASSES = ["loss", "privilege", "exposure", "cost"];

/** The engine ops that remove or replace a resource (sdk/go/common/apitype OpType). */
export const LOSS_OPS = ["delete", "replace", "create-replacement", "delete-replaced"];

/**
 * The ops that make a resource's new state real in the cloud: creating it, changing it, creating its
 * replacement. `same`, `read`, `refresh`, `import` (adopting what exists), `discard`s and
 * `remove-pending-replace` change nothing in the cloud; `replace` is the logical step between a
 * create-replacement and its delete-replaced and carries the same new inputs.
 */
export const CHANGE_OPS = ["create", "update", "replace", "create-replacement"];

/**
 * The string Pulumi's engine puts where a value is unknown at preview time (pulumi/pulumi
 * sdk/go/common/resource/plugin UnknownStringValue), as it reaches the engine events' inputs.
 */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

const OPEN_CIDRS = ["0.0.0.0/0", "::/0"];
const PUBLIC_ACLS = ["public-read", "public-read-write", "authenticated-read"];

export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const list = (v) => (Array.isArray(v) ? v : v === undefined || v === null ? [] : [v]);
/** True when a value is, or holds, the engine's unknown sentinel. */
const unknown = (v) =>
  v === UNKNOWN || (Array.isArray(v) ? v.some(unknown) : isObject(v) && Object.values(v).some(unknown));
/** A value that is one of `values`, or unknown. */
const oneOf = (v, values) => unknown(v) || list(v).some((x) => values.includes(x));
/** A boolean input that is false, unset (every provider default it stands for here is false), or unknown. */
const isFalse = (v) => unknown(v) || v === undefined || v === null || v === false;
const isTrue = (v, absent = false) =>
  unknown(v) || (v === undefined || v === null ? absent === true : v === true);
const anyOf = (items, test) =>
  unknown(items) || list(items).some((i) => unknown(i) || (isObject(i) && test(i)));

/** Ingress from anywhere in a security group's rule list (classic and native shapes). */
const openIngress = (rules) =>
  anyOf(
    rules,
    (r) =>
      oneOf(r.cidrBlocks, OPEN_CIDRS) ||
      oneOf(r.ipv6CidrBlocks, OPEN_CIDRS) ||
      oneOf(r.cidrIp, OPEN_CIDRS) ||
      oneOf(r.cidrIpv4, OPEN_CIDRS) ||
      oneOf(r.cidrIpv6, OPEN_CIDRS),
  );

const ANY = ["*"];

/**
 * The rules, in no particular order: a step has a class when any rule of that class matches. `types` are
 * type tokens; a trailing `*` matches any token with that prefix. `ops` defaults to CHANGE_OPS.
 */
export const RULES = [
  // loss: by the op alone, whatever the type.
  { class: "loss", types: ANY, ops: LOSS_OPS, why: "deletes or replaces the resource" },

  // privilege: identity and access.
  {
    class: "privilege",
    types: ["aws:iam/*", "aws-native:iam:*"],
    ignoreKeys: ["tags", "tagsAll", "description"],
    why: "IAM: who may do what",
  },
  {
    class: "privilege",
    types: ["aws:kms/keyPolicy:KeyPolicy", "aws:kms/grant:Grant", "aws-native:kms:*"],
    ignoreKeys: ["tags", "tagsAll", "description"],
    why: "a KMS key policy or grant",
  },
  { class: "privilege", types: ["aws:kms/key:Key"], keys: ["policy"], why: "a KMS key's policy" },
  {
    class: "privilege",
    types: [
      "aws:s3/bucketPolicy:BucketPolicy",
      "aws:sqs/queuePolicy:QueuePolicy",
      "aws:sns/topicPolicy:TopicPolicy",
      "aws:lambda/permission:Permission",
      "aws:ecr/repositoryPolicy:RepositoryPolicy",
      "aws:ecr/registryPolicy:RegistryPolicy",
      "aws:secretsmanager/secretPolicy:SecretPolicy",
      "aws:cloudwatch/logResourcePolicy:LogResourcePolicy",
      "aws:efs/fileSystemPolicy:FileSystemPolicy",
      "aws:backup/vaultPolicy:VaultPolicy",
      "aws:glue/resourcePolicy:ResourcePolicy",
      "aws:apigateway/restApiPolicy:RestApiPolicy",
      "aws:opensearch/domainPolicy:DomainPolicy",
      "aws:eks/accessEntry:AccessEntry",
      "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
      "aws:eks/podIdentityAssociation:PodIdentityAssociation",
      "aws:ssoadmin/*",
      "aws:organizations/policy:Policy",
      "aws:organizations/policyAttachment:PolicyAttachment",
      "aws:lakeformation/permissions:Permissions",
      "aws:ram/resourceShare:ResourceShare",
      "aws:ram/principalAssociation:PrincipalAssociation",
      "aws-native:s3:BucketPolicy",
      "aws-native:sqs:QueuePolicy",
      "aws-native:sqs:QueueInlinePolicy",
      "aws-native:sns:TopicPolicy",
      "aws-native:sns:TopicInlinePolicy",
      "aws-native:lambda:Permission",
      "aws-native:secretsmanager:ResourcePolicy",
      "aws-native:ecr:RegistryPolicy",
      "aws-native:eks:AccessEntry",
      "aws-native:eks:PodIdentityAssociation",
      "aws-native:sso:*",
    ],
    why: "a resource policy or grant of access",
  },
  {
    class: "privilege",
    types: [
      "aws:s3/bucket:Bucket",
      "aws:s3/bucketV2:BucketV2",
      "aws:sqs/queue:Queue",
      "aws:sns/topic:Topic",
      "aws:secretsmanager/secret:Secret",
      "aws:ecr/repository:Repository",
      "aws:glacier/vault:Vault",
    ],
    keys: ["policy", "accessPolicy"],
    why: "the resource's own access policy",
  },
  {
    class: "privilege",
    types: ["aws:opensearch/domain:Domain", "aws:elasticsearch/domain:Domain"],
    keys: ["accessPolicies"],
    why: "the domain's access policy",
  },
  {
    class: "privilege",
    types: ["aws-native:ecr:Repository"],
    keys: ["repositoryPolicyText"],
    why: "the repository's policy",
  },
  {
    class: "privilege",
    types: [
      "aws:lambda/function:Function",
      "aws:ec2/instance:Instance",
      "aws:ec2/launchTemplate:LaunchTemplate",
    ],
    keys: ["role", "iamInstanceProfile"],
    why: "the identity the resource runs as",
  },
  {
    class: "privilege",
    types: [
      "kubernetes:rbac.authorization.k8s.io/v1:Role",
      "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
      "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
      "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
      "kubernetes:rbac.authorization.k8s.io/v1:RolePatch",
      "kubernetes:rbac.authorization.k8s.io/v1:ClusterRolePatch",
      "kubernetes:rbac.authorization.k8s.io/v1:RoleBindingPatch",
      "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBindingPatch",
    ],
    keys: ["rules", "aggregationRule", "roleRef", "subjects"],
    why: "Kubernetes RBAC",
  },

  // exposure: network reach and public access.
  {
    class: "exposure",
    types: ["aws:ec2/securityGroup:SecurityGroup"],
    keys: ["ingress"],
    when: (i) => openIngress(i.ingress),
    why: "ingress from anywhere (0.0.0.0/0 or ::/0)",
  },
  {
    class: "exposure",
    types: ["aws-native:ec2:SecurityGroup"],
    keys: ["securityGroupIngress"],
    when: (i) => openIngress(i.securityGroupIngress),
    why: "ingress from anywhere (0.0.0.0/0 or ::/0)",
  },
  {
    class: "exposure",
    types: ["aws:ec2/securityGroupRule:SecurityGroupRule"],
    when: (i) => oneOf(i.type, ["ingress"]) && openIngress([i]),
    why: "ingress from anywhere (0.0.0.0/0 or ::/0)",
  },
  {
    class: "exposure",
    types: [
      "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
      "aws-native:ec2:SecurityGroupIngress",
    ],
    when: (i) => openIngress([i]),
    why: "ingress from anywhere (0.0.0.0/0 or ::/0)",
  },
  {
    class: "exposure",
    types: ["aws:ec2/networkAclRule:NetworkAclRule"],
    when: (i) =>
      isFalse(i.egress) &&
      oneOf(i.ruleAction, ["allow"]) &&
      (oneOf(i.cidrBlock, OPEN_CIDRS) || oneOf(i.ipv6CidrBlock, OPEN_CIDRS)),
    why: "a network ACL allowing traffic in from anywhere",
  },
  {
    class: "exposure",
    types: [
      "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock",
    ],
    when: (i) =>
      ["blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"].some((k) =>
        isFalse(i[k]),
      ),
    why: "S3 public access not blocked",
  },
  {
    class: "exposure",
    types: [
      "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock",
    ],
    ops: ["delete", "delete-replaced"],
    why: "removes an S3 public access block",
  },
  {
    class: "exposure",
    types: ["aws-native:s3:Bucket"],
    keys: ["publicAccessBlockConfiguration", "accessControl"],
    when: (i) =>
      oneOf(i.accessControl, ["PublicRead", "PublicReadWrite", "AuthenticatedRead"]) ||
      !isObject(i.publicAccessBlockConfiguration) ||
      ["blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"].some((k) =>
        isFalse(i.publicAccessBlockConfiguration[k]),
      ),
    why: "S3 public access not blocked, or a public ACL",
  },
  {
    class: "exposure",
    types: [
      "aws:s3/bucket:Bucket",
      "aws:s3/bucketV2:BucketV2",
      "aws:s3/bucketAclV2:BucketAclV2",
      "aws:s3/bucketObject:BucketObject",
      "aws:s3/bucketObjectv2:BucketObjectv2",
    ],
    keys: ["acl"],
    when: (i) => oneOf(i.acl, PUBLIC_ACLS),
    why: "a public S3 ACL",
  },
  {
    class: "exposure",
    types: [
      "aws:lb/loadBalancer:LoadBalancer",
      "aws:alb/loadBalancer:LoadBalancer",
      "aws:elb/loadBalancer:LoadBalancer",
    ],
    keys: ["internal"],
    // Internet-facing unless `internal` is true (pulumi-aws lb.LoadBalancer: internal defaults to false).
    when: (i) => isFalse(i.internal),
    why: "an internet-facing load balancer",
  },
  {
    class: "exposure",
    types: ["aws-native:elasticloadbalancingv2:LoadBalancer", "aws-native:elasticloadbalancing:LoadBalancer"],
    keys: ["scheme"],
    when: (i) => i.scheme === undefined || oneOf(i.scheme, ["internet-facing"]),
    why: "an internet-facing load balancer",
  },
  {
    class: "exposure",
    types: ["aws:ec2/instance:Instance", "aws:ec2/spotInstanceRequest:SpotInstanceRequest"],
    keys: ["associatePublicIpAddress"],
    when: (i) => isTrue(i.associatePublicIpAddress),
    why: "a public IP address",
  },
  {
    class: "exposure",
    types: ["aws:ec2/subnet:Subnet", "aws-native:ec2:Subnet"],
    keys: ["mapPublicIpOnLaunch"],
    when: (i) => isTrue(i.mapPublicIpOnLaunch),
    why: "a subnet giving public IPs",
  },
  {
    class: "exposure",
    types: ["aws:ec2/launchTemplate:LaunchTemplate"],
    keys: ["networkInterfaces"],
    when: (i) => anyOf(i.networkInterfaces, (n) => oneOf(n.associatePublicIpAddress, [true, "true"])),
    why: "a launch template giving public IPs",
  },
  {
    class: "exposure",
    types: [
      "aws:rds/instance:Instance",
      "aws:rds/clusterInstance:ClusterInstance",
      "aws-native:rds:DBInstance",
      "aws:redshift/cluster:Cluster",
      "aws:dms/replicationInstance:ReplicationInstance",
    ],
    keys: ["publiclyAccessible"],
    when: (i) => isTrue(i.publiclyAccessible),
    why: "a publicly accessible database",
  },
  {
    class: "exposure",
    types: ["aws:eks/cluster:Cluster"],
    keys: ["vpcConfig"],
    // EKS's endpoint is public unless endpointPublicAccess is false (pulumi-aws eks.Cluster vpcConfig).
    when: (i) =>
      !isObject(i.vpcConfig) ||
      (isTrue(i.vpcConfig.endpointPublicAccess, true) &&
        oneOf(i.vpcConfig.publicAccessCidrs ?? OPEN_CIDRS, OPEN_CIDRS)),
    why: "a Kubernetes API endpoint open to the internet",
  },
  {
    class: "exposure",
    types: ["aws:lambda/functionUrl:FunctionUrl", "aws-native:lambda:Url"],
    when: (i) => oneOf(i.authorizationType ?? i.authType, ["NONE"]),
    why: "a function URL without authentication",
  },
  {
    class: "exposure",
    types: [
      "aws:ec2/internetGateway:InternetGateway",
      "aws:ec2/eip:Eip",
      "aws:ec2/eipAssociation:EipAssociation",
      "aws:apigateway/restApi:RestApi",
      "aws:apigatewayv2/api:Api",
      "aws:cloudfront/distribution:Distribution",
      "aws-native:ec2:InternetGateway",
      "aws-native:ec2:Eip",
      "aws-native:apigateway:RestApi",
      "aws-native:apigatewayv2:Api",
      "aws-native:cloudfront:Distribution",
      "kubernetes:networking.k8s.io/v1:Ingress",
    ],
    ops: ["create", "create-replacement", "replace"],
    why: "a new public endpoint",
  },
  {
    class: "exposure",
    types: ["kubernetes:core/v1:Service"],
    keys: ["spec"],
    when: (i) => !isObject(i.spec) || oneOf(i.spec.type, ["LoadBalancer", "NodePort"]),
    why: "a Service reachable from outside the cluster",
  },

  ...COST_RULES,
];
