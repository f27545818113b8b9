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

/**
 * The inputs of eks:index:ManagedNodeGroup that make pulumi-eks give the node group a launch template of its
 * own (v4.3.0 nodejs/eks/nodes/nodegroup.ts, customLaunchTemplateArgs). Gaining or losing that template
 * replaces the aws.eks.NodeGroup (its launch_template is ForceNew); with one on both sides, diskSize moves
 * into the template and amiType is dropped, so their changes roll the nodes onto a new template version
 * instead of replacing the group.
 */
const launchTemplateInputs = [
  "kubeletExtraArgs",
  "bootstrapExtraArgs",
  "bottlerocketSettings",
  "nodeadmExtraOptions",
  "enableIMDSv2",
  "userData",
  "amiId",
  "enableEfaSupport",
];
const hasLaunchTemplate = (inputs: Record<string, unknown>) =>
  launchTemplateInputs.some((k) => inputs[k] !== undefined && inputs[k] !== null);

/**
 * Why a change of these inputs replaces the resource; empty when it is an update in place. `before` and
 * `after` are the resource's whole inputs, for the types whose replacement depends on more than one input.
 */
export function replaceReasons(
  type: string,
  changes: PropertyChange[],
  before: Record<string, unknown> = {},
  after: Record<string, unknown> = {},
): string[] {
  const top = (path: string) => path.replace(/[.[].*$/, "");
  if (type === "eks:index:ManagedNodeGroup") {
    const templated = hasLaunchTemplate(after);
    if (hasLaunchTemplate(before) !== templated) {
      const changed = changes.map((c) => top(c.path)).filter((p) => launchTemplateInputs.includes(p));
      return [
        ...new Set(
          changed.map((p) => `${p} (the node group ${templated ? "gains" : "loses"} a launch template)`),
        ),
      ];
    }
    if (templated) changes = changes.filter((c) => !["diskSize", "amiType"].includes(top(c.path)));
  }
  return [
    ...new Set(
      changes.filter((c) => forcesNew(type, c.path)).map((c) => c.path.replace(/\[[^\]]*\].*$/, "")),
    ),
  ];
}
