// The risk rules of kargo/verification/classify.mjs, as data: which steps carry which class, each row
// saying why. Read classify.mjs first for what a step is and how a row matches one. Covered: AWS through the
// `aws:` (pulumi-aws) and `aws-native:` (CloudFormation-based) type tokens, and Kubernetes RBAC, Services,
// Ingresses and Karpenter NodePools through `kubernetes:` tokens; add a provider by adding rows. The cost
// rows are in cost-rules.mjs.

import { COST_RULES } from "./cost-rules.mjs";
import { OPEN_CIDRS, PUBLIC_ACLS, anyOf, isFalse, isTrue, notSet, oneOf, openIngress } from "./values.mjs";

export { UNKNOWN, isObject } from "./values.mjs";

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

const ANY = ["*"];

/** A provider resource: deleting or replacing one removes nothing; its resources' own steps say what goes. */
export const isProvider = (type) => type.startsWith("pulumi:providers:");

/**
 * A delete that leaves the resource in the cloud, only dropped from the stack: `retainOnDelete` (the
 * engine's DeleteStep.Apply skips the provider's Delete, pulumi/pulumi v3.274.1
 * pkg/resource/deploy/step.go). A replacement of such a resource still moves the stack to a new one.
 */
export const leftInCloud = (step) =>
  ["delete", "delete-replaced"].includes(step.op) && step.retainOnDelete === true && destroysKind(step);

/** What both users of the classifier say of a resource left in the cloud. */
export const LEFT_IN_CLOUD = "left in the cloud (retainOnDelete), only dropped from the stack";

/**
 * A custom resource other than a provider: a component (`custom` false) has no cloud object (DeleteStep.Apply
 * calls the provider only for custom resources; its children's own steps say what goes). A step that does not
 * say (`custom` absent) is taken as custom: what cannot be told stops.
 */
const destroysKind = (step) => step.custom !== false && !isProvider(step.type);
const destroys = (step) => destroysKind(step) && !leftInCloud(step);

/**
 * The rules, in no particular order: a step has a class when any rule of that class matches. `types` are
 * type tokens; a trailing `*` matches any token with that prefix. `ops` defaults to CHANGE_OPS.
 */
export const RULES = [
  // loss: by the op, whatever the type, when it removes something from the cloud.
  { class: "loss", types: ANY, ops: LOSS_OPS, step: destroys, why: "deletes or replaces the resource" },

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
      notSet(i.publicAccessBlockConfiguration) ||
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
      notSet(i.vpcConfig) ||
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
    when: (i) => notSet(i.spec) || oneOf(i.spec.type, ["LoadBalancer", "NodePort"]),
    why: "a Service reachable from outside the cluster",
  },

  ...COST_RULES,
];
