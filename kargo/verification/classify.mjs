// The risk classes of one resource step: what a person must decide before it reaches an environment. One
// classifier for the in-cluster verification (verify.mjs, over Pulumi Cloud's engine events) and the plan
// diff's headings (lib/cli/plan/diff-*, over two offline plans), so the two never disagree.
//
// A step is normalized: { op, type, urn?, oldInputs?, newInputs?, diffs? }. `op` is a Pulumi engine step op
// (pulumi/pulumi v3.270.0 sdk/go/common/apitype/events.go OpType; the same list as pulumi-cloud-sdk
// apitype AppOpType), `type` the resource type token, `diffs` the changed top-level input keys.
//
// The classes:
// - loss: the step deletes or replaces a resource (its data, its identity, whatever depended on its ID).
// - privilege: the step changes who may do what: IAM, KMS key policies and grants, resource policies,
//   Kubernetes RBAC.
// - exposure: the step widens network reach or public access: ingress from anywhere, S3 public access,
//   internet-facing load balancers, public IPs, public endpoints.
// - cost: the step adds or resizes something billed by size or by the hour: instances, databases, node
//   groups, NAT gateways, load balancers and clusters.
//
// Covered, and only these: AWS through the `aws:` (pulumi-aws) and `aws-native:` (CloudFormation-based) type
// tokens, and Kubernetes RBAC, Services and Ingresses through `kubernetes:` tokens. A resource of another
// provider is only ever `loss` (by its op). Add a provider by adding rows to RULES below; each row says why.
//
// A rule matches a step when the step's op is among the rule's ops, its type among the rule's types, and:
// - `keys` (when given): on an update, one of the changed keys is among them (when the step does not say
//   which keys changed and its inputs cannot tell, the rule matches: what cannot be told stops); on a
//   create or replacement, one of them is set in the new inputs (or the new inputs are unknown);
// - `when` (when given): the new inputs say so (a value test such as "ingress from 0.0.0.0/0"); when the
//   new inputs are unknown (absent), the rule matches. A value unknown at preview time (the engine's
//   unknown sentinel) counts as matching, since it may turn out to be anything.

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

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
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

/** Resources billed by the hour or by size: a create adds cost, a change of their sizing keys may. */
const COST_TYPES = [
  "aws:ec2/instance:Instance",
  "aws:ec2/spotInstanceRequest:SpotInstanceRequest",
  "aws:ec2/natGateway:NatGateway",
  "aws:eks/cluster:Cluster",
  "aws:eks/nodeGroup:NodeGroup",
  "aws:autoscaling/group:Group",
  "aws:rds/instance:Instance",
  "aws:rds/cluster:Cluster",
  "aws:rds/clusterInstance:ClusterInstance",
  "aws:elasticache/cluster:Cluster",
  "aws:elasticache/replicationGroup:ReplicationGroup",
  "aws:elasticache/serverlessCache:ServerlessCache",
  "aws:opensearch/domain:Domain",
  "aws:redshift/cluster:Cluster",
  "aws:msk/cluster:Cluster",
  "aws:docdb/cluster:Cluster",
  "aws:docdb/clusterInstance:ClusterInstance",
  "aws:neptune/cluster:Cluster",
  "aws:neptune/clusterInstance:ClusterInstance",
  "aws:lb/loadBalancer:LoadBalancer",
  "aws:alb/loadBalancer:LoadBalancer",
  "aws:elb/loadBalancer:LoadBalancer",
  "aws:ecs/service:Service",
  "aws:sagemaker/endpoint:Endpoint",
  "aws-native:ec2:Instance",
  "aws-native:ec2:NatGateway",
  "aws-native:eks:Cluster",
  "aws-native:eks:Nodegroup",
  "aws-native:autoscaling:AutoScalingGroup",
  "aws-native:rds:DBInstance",
  "aws-native:rds:DBCluster",
  "aws-native:elasticache:*",
  "aws-native:elasticloadbalancingv2:LoadBalancer",
  "aws-native:ecs:Service",
  "kubernetes:karpenter.sh/v1:NodePool",
];

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

  // cost: new or resized compute, databases and other hourly-billed resources.
  {
    class: "cost",
    types: COST_TYPES,
    ops: ["create", "create-replacement", "replace"],
    why: "new hourly-billed capacity",
  },
  {
    class: "cost",
    types: [...COST_TYPES, "aws:ec2/launchTemplate:LaunchTemplate", "aws-native:ec2:LaunchTemplate"],
    ops: ["update"],
    keys: [
      "instanceType",
      "instanceTypes",
      "instanceClass",
      "dbInstanceClass",
      "nodeType",
      "cacheNodeType",
      "allocatedStorage",
      "maxAllocatedStorage",
      "iops",
      "storageType",
      "storageThroughput",
      "scalingConfig",
      "desiredSize",
      "desiredCapacity",
      "minSize",
      "maxSize",
      "numCacheNodes",
      "numNodeGroups",
      "replicasPerNodeGroup",
      "numberOfNodes",
      "numberOfBrokerNodes",
      "brokerNodeGroupInfo",
      "clusterConfig",
      "multiAz",
      "desiredCount",
      "serverlessv2ScalingConfiguration",
      "volumeSize",
      "limits",
    ],
    why: "resizes billed capacity",
  },
];

const typeMatches = (patterns, type) =>
  patterns.some((p) => (p.endsWith("*") ? type.startsWith(p.slice(0, -1)) : p === type));

/** The changed top-level keys: the step's own, else those whose inputs differ, else undefined (unknown). */
function changedKeys(step) {
  if (Array.isArray(step.diffs)) return step.diffs.map((k) => String(k).split(/[.[]/)[0]);
  if (!isObject(step.oldInputs) || !isObject(step.newInputs)) return undefined;
  const keys = new Set([...Object.keys(step.oldInputs), ...Object.keys(step.newInputs)]);
  return [...keys].filter((k) => JSON.stringify(step.oldInputs[k]) !== JSON.stringify(step.newInputs[k]));
}

/** Whether one rule matches the step. */
export function ruleMatches(rule, step) {
  if (!isObject(step) || typeof step.op !== "string" || typeof step.type !== "string") return false;
  if (!(rule.ops ?? CHANGE_OPS).includes(step.op)) return false;
  if (!typeMatches(rule.types, step.type)) return false;
  const inputs = isObject(step.newInputs) ? step.newInputs : undefined;
  if (step.op === "update" && (rule.keys || rule.ignoreKeys)) {
    const changed = changedKeys(step);
    if (changed !== undefined) {
      const relevant = changed.filter((k) => !(rule.ignoreKeys ?? []).includes(k));
      if (!relevant.some((k) => (rule.keys ? rule.keys.includes(k) : true))) return false;
    }
  } else if (rule.keys && !rule.when && inputs) {
    // A create or replacement: the keys matter when they are set (a value test decides for itself, since an
    // unset value may be the risky default).
    if (!rule.keys.some((k) => inputs[k] !== undefined && inputs[k] !== null)) return false;
  }
  return !rule.when || !inputs || rule.when(inputs);
}

/** The rules that match the step, for a message saying why. */
export const matchingRules = (step) => RULES.filter((r) => ruleMatches(r, step));

/** The step's risk classes, in RISK_CLASSES order; [] when none. */
export function classifyStep(step) {
  const classes = new Set(matchingRules(step).map((r) => r.class));
  return RISK_CLASSES.filter((c) => classes.has(c));
}

/**
 * The normalized step of a Pulumi Cloud engine event's `resourcePreEvent.metadata` (pulumi-cloud-sdk apitype
 * AppStepEventMetadata; pulumi/pulumi apitype StepEventMetadata): its op, type and URN, the old and new
 * states' inputs, and the changed keys (`diffs`, else the top-level keys of `detailedDiff`, else unknown).
 */
export function stepFromEngineEvent(metadata) {
  if (!isObject(metadata)) throw new Error("an engine event's step metadata is not an object");
  const { op, type, urn } = metadata;
  if (typeof op !== "string" || typeof type !== "string" || typeof urn !== "string")
    throw new Error("an engine event's step metadata has no op, type or urn");
  const step = { op, type, urn };
  if (isObject(metadata.old) && isObject(metadata.old.inputs)) step.oldInputs = metadata.old.inputs;
  if (isObject(metadata.new) && isObject(metadata.new.inputs)) step.newInputs = metadata.new.inputs;
  // `diffs` is omitted when empty, and an empty `detailedDiff` means none was available: neither says
  // "nothing changed", so the keys are then unknown and the inputs are compared instead.
  const paths = [
    ...(Array.isArray(metadata.diffs) ? metadata.diffs : []),
    ...(isObject(metadata.detailedDiff) ? Object.keys(metadata.detailedDiff) : []),
  ];
  if (paths.length) step.diffs = [...new Set(paths.map(topKey))];
  return step;
}

/** The top-level key of a property path (`ingress[0].cidrBlocks` is `ingress`). */
const topKey = (path) => String(path).split(/[.[]/)[0];
