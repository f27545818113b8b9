// Which input changes make Pulumi replace a resource instead of updating it. The engine asks the provider
// (its Diff call answers with `replaces`), which needs the provider plugin; offline we keep, per type, the
// inputs the providers mark as forcing a new resource. A short list on purpose: the resources this platform
// declares, and the inputs a pull request plausibly changes. An input missing here shows as an update.
/** An input that differs; `before`/`after` are undefined where the input is absent. */
export interface PropertyChange {
  path: string;
  before?: unknown;
  after?: unknown;
}

/**
 * Inputs that force replacement, by type. AWS resources: the attributes marked `ForceNew: true` in
 * hashicorp/terraform-provider-aws (internal/service/<service>/<resource>.go), which pulumi-aws bridges as
 * replacements. eks:index:ManagedNodeGroup passes these through to aws.eks.NodeGroup.
 */
const forceNew: Record<string, string[]> = {
  "aws:s3/bucket:Bucket": ["bucket", "bucketPrefix"],
  "aws:iam/role:Role": ["name", "namePrefix", "path"],
  "aws:iam/rolePolicy:RolePolicy": ["name", "namePrefix", "role"],
  "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ["role", "policyArn"],
  "aws:ec2/securityGroup:SecurityGroup": ["name", "namePrefix", "description", "vpcId"],
  "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ["securityGroupId"],
  "aws:lb/loadBalancer:LoadBalancer": ["name", "namePrefix", "internal", "loadBalancerType"],
  "aws:lb/targetGroup:TargetGroup": ["name", "namePrefix", "port", "protocol", "vpcId", "targetType"],
  "aws:cloudwatch/logGroup:LogGroup": ["name", "namePrefix"],
  "aws:cognito/userPool:UserPool": ["name", "aliasAttributes", "usernameAttributes"],
  "aws:cognito/userPoolDomain:UserPoolDomain": ["domain", "userPoolId"],
  "aws:cognito/userGroup:UserGroup": ["name", "userPoolId"],
  "eks:index:ManagedNodeGroup": [
    "nodeGroupName",
    "nodeGroupNamePrefix",
    "instanceTypes",
    "diskSize",
    "amiType",
    "capacityType",
    "subnetIds",
    "nodeRoleArn",
  ],
  "eks:index:Cluster": ["name"],
  "awsx:ec2:Vpc": ["cidrBlock"],
  "github:index/repositoryFile:RepositoryFile": ["repository", "file"],
};

/**
 * Kubernetes objects are replaced when their identity or an immutable field changes (pulumi/pulumi-kubernetes
 * provider/pkg/provider: forceNewProperties, metadata.name and metadata.namespace for every kind, plus a
 * per-kind list holding roleRef of the RBAC bindings and a Secret's type); a Helm release when its name or
 * namespace does. random resources replace on any input change (every argument of pulumi-random is ForceNew).
 */
function forcesNew(type: string, path: string): boolean {
  const top = path.replace(/[.[].*$/, "");
  if (type.startsWith("random:")) return true;
  if (type.startsWith("kubernetes:helm.sh/")) return top === "name" || top === "namespace";
  if (type.startsWith("kubernetes:"))
    return (
      ["metadata.name", "metadata.namespace", "kind", "apiVersion"].includes(path) ||
      (/RoleBinding$/.test(type) && top === "roleRef") ||
      (type === "kubernetes:core/v1:Secret" && top === "type")
    );
  return forceNew[type]?.includes(top) ?? false;
}

/** Why a change of these inputs replaces the resource; empty when it is an update in place. */
export function replaceReasons(type: string, changes: PropertyChange[]): string[] {
  return [
    ...new Set(changes.filter((c) => forcesNew(type, c.path)).map((c) => c.path.replace(/\[\d+\].*$/, ""))),
  ];
}
