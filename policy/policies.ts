// The rules this platform promises, as CrossGuard resource policies. Kept apart from index.ts (which starts
// the analyzer when constructed) so that tests, and `npm run plan -- --diff`, run the same policies over the
// offline plan (policy/offline.ts).
import type { ResourceValidationArgs, ResourceValidationPolicy } from "@pulumi/policy";
import { PLUGIN_CACHE_STORAGE_CLASS } from "../lib/pipeline/plugin-cache";

const WORLD = ["0.0.0.0/0", "::/0"];
const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const asList = (v: unknown): unknown[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]);

/** Ports whose listeners are meant for everyone: the Kargo API and UI (sign-in with Cognito) on 443. */
export const PUBLIC_LISTENER_PORTS = [443];

const noWorldIngress: ResourceValidationPolicy = {
  name: "security-group-world-ingress",
  description:
    "No security group admits the whole internet (0.0.0.0/0 or ::/0) except on the listeners meant to be public.",
  configSchema: {
    properties: {
      publicListenerPorts: { type: "array", items: { type: "integer" }, default: PUBLIC_LISTENER_PORTS },
    },
  },
  validateResource: (args, report) => {
    // The engine hands over the schema's defaults; without a Configure call @pulumi/policy gives {}.
    const allowed =
      args.getConfig<{ publicListenerPorts?: number[] }>().publicListenerPorts ?? PUBLIC_LISTENER_PORTS;
    const check = (rule: Record<string, unknown>, cidrs: unknown[]) => {
      const from = Number(rule.fromPort);
      const to = Number(rule.toPort ?? rule.fromPort);
      const protocol = String(rule.protocol ?? rule.ipProtocol);
      const onlyPublicPorts = protocol !== "-1" && from === to && allowed.includes(from);
      for (const cidr of cidrs.filter((c) => WORLD.includes(String(c))))
        if (!onlyPublicPorts)
          report(
            `admits ${String(cidr)} on ${protocol} ${from}${to !== from ? `-${to}` : ""}; only ports ${allowed.join(", ")} may be open to the world`,
          );
    };
    const p = args.props;
    if (args.type === "aws:ec2/securityGroup:SecurityGroup")
      for (const rule of asList(p.ingress).filter(isMap))
        check(rule, [...asList(rule.cidrBlocks), ...asList(rule.ipv6CidrBlocks)]);
    if (args.type === "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
      check(p, [p.cidrIpv4, p.cidrIpv6]);
    if (args.type === "aws:ec2/securityGroupRule:SecurityGroupRule" && p.type === "ingress")
      check(p, [...asList(p.cidrBlocks), ...asList(p.ipv6CidrBlocks)]);
  },
};

/** Actions that only read: the prefixes AWS uses for its read and list access levels. */
const READ_ACTION =
  /^[a-z0-9-]+:(Get|List|Describe|BatchGet|Head|View|Search|Lookup|Query|Scan|Select)[A-Za-z0-9]*$/;
/** AWS managed policies that allow writing everything, or all of a service. */
const BROAD_MANAGED_POLICY =
  /:policy\/(AdministratorAccess|PowerUserAccess|IAMFullAccess|[A-Za-z0-9]+FullAccess)$/;

function statementsOf(document: unknown): Record<string, unknown>[] {
  let doc = document;
  if (typeof doc === "string") {
    try {
      doc = JSON.parse(doc);
    } catch {
      return [];
    }
  }
  return isMap(doc) ? asList(doc.Statement).filter(isMap) : [];
}

/** Each Allow statement that grants a write action on every resource, described. */
export function writesOnEverything(document: unknown): string[] {
  return statementsOf(document).flatMap((st) => {
    if (st.Effect !== "Allow" || !asList(st.Resource).includes("*")) return [];
    // NotAction with Allow grants everything but the listed actions: writes included.
    const writes =
      st.NotAction !== undefined
        ? [`everything but ${asList(st.NotAction).join(", ")}`]
        : asList(st.Action)
            .map(String)
            .filter((a) => !READ_ACTION.test(a));
    return writes.length > 0 ? [`${st.Sid ? `${String(st.Sid)}: ` : ""}${writes.join(", ")} on *`] : [];
  });
}

const noIamWriteOnStar: ResourceValidationPolicy = {
  name: "iam-no-write-on-star",
  description:
    "No IAM policy allows a write action on every resource (`*`), nor attaches a full-access managed policy.",
  validateResource: (args, report) => {
    const p = args.props;
    const documents: unknown[] = [];
    if (
      /^aws:iam\/(policy:Policy|rolePolicy:RolePolicy|userPolicy:UserPolicy|groupPolicy:GroupPolicy)$/.test(
        args.type,
      )
    )
      documents.push(p.policy);
    if (args.type === "aws:iam/role:Role")
      documents.push(
        ...asList(p.inlinePolicies)
          .filter(isMap)
          .map((ip) => ip.policy),
      );
    for (const doc of documents) for (const grant of writesOnEverything(doc)) report(`allows ${grant}`);
    const arns = [
      ...(/^aws:iam\/(rolePolicyAttachment|policyAttachment|userPolicyAttachment|groupPolicyAttachment):/.test(
        args.type,
      )
        ? [p.policyArn]
        : []),
      ...(args.type === "aws:iam/role:Role" ? asList(p.managedPolicyArns) : []),
    ];
    for (const arn of arns.map(String).filter((a) => BROAD_MANAGED_POLICY.test(a)))
      report(`attaches ${arn}, which allows writing every resource of its scope`);
  },
};

/** Resources that hold data a deletion would lose. */
export const DATA_HOLDING_TYPES = [
  "aws:s3/bucket:Bucket",
  "aws:s3/bucketV2:BucketV2",
  "aws:cognito/userPool:UserPool",
  "aws:rds/instance:Instance",
  "aws:rds/cluster:Cluster",
  "aws:dynamodb/table:Table",
  "aws:efs/fileSystem:FileSystem",
  "aws:ebs/volume:Volume",
  "aws:ecr/repository:Repository",
  "kubernetes:core/v1:PersistentVolumeClaim",
];

/**
 * A claim of the plugin cache's class holds only plugins its seed Job installs again (kargo/pluginCache.ts),
 * and is replaced whenever the providers change: protecting it would stop every reseed.
 */
const isPluginCacheClaim = (args: ResourceValidationArgs) =>
  args.type === "kubernetes:core/v1:PersistentVolumeClaim" &&
  (args.props as { spec?: { storageClassName?: unknown } }).spec?.storageClassName ===
    PLUGIN_CACHE_STORAGE_CLASS;

const dataProtected: ResourceValidationPolicy = {
  name: "data-protected",
  description:
    "Every resource that holds data is protected (`protect: true`), so no change deletes it unnoticed.",
  validateResource: (args, report) => {
    if (DATA_HOLDING_TYPES.includes(args.type) && !args.opts.protect && !isPluginCacheClaim(args))
      report(`${args.type} holds data and is not protected; set the resource option protect: true`);
  },
};

const EXACT_VERSION = /^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;
/** An image reference pinned to a release: a digest, or a tag that is not `latest`. */
const pinnedImage = (image: string) =>
  /@sha256:[0-9a-f]{64}$/.test(image) || /:[^/:]+$/.test(image.replace(/:latest$/, ""));

/** Every `image` string and `image: { tag }` map under `value`, with its path. */
function images(value: unknown, path: string, out: [string, unknown][] = []): [string, unknown][] {
  if (Array.isArray(value)) value.forEach((v, i) => images(v, `${path}[${i}]`, out));
  else if (isMap(value))
    for (const [k, v] of Object.entries(value)) {
      if (k === "image") out.push([`${path}.${k}`, v]);
      else images(v, `${path}.${k}`, out);
    }
  return out;
}

const versionsPinned: ResourceValidationPolicy = {
  name: "versions-pinned",
  description:
    "Every Helm chart has an exact version and every image a tag other than latest (or a digest); actions are pinned by the tests.",
  validateResource: (args, report) => {
    const p = args.props;
    const isChart = /^kubernetes:helm\.sh\/v\d:(Release|Chart)$/.test(args.type);
    if (isChart && !EXACT_VERSION.test(String(p.version ?? "")))
      report(`chart ${String(p.chart)} has version ${JSON.stringify(p.version)}; pin an exact version`);
    if (!args.type.startsWith("kubernetes:")) return;
    for (const [path, image] of images(isChart ? p.values : p, isChart ? "values" : "")) {
      if (typeof image === "string" && !pinnedImage(image))
        report(`${path} ${image} is not pinned to a tag or digest`);
      if (isMap(image) && image.tag !== undefined && (image.tag === "latest" || image.tag === ""))
        report(`${path}.tag ${JSON.stringify(image.tag)} is not a release`);
    }
  },
};

const WORKLOAD =
  /^kubernetes:(apps\/v1:(Deployment|StatefulSet|DaemonSet|ReplicaSet)|batch\/v1:(Job|CronJob)|core\/v1:Pod|argoproj\.io\/v1alpha1:Rollout)$/;

/** The pod spec of a workload object (a CronJob's is one level deeper). */
function podSpec(props: Record<string, unknown>): Record<string, unknown> | undefined {
  const spec = props.spec as Record<string, unknown> | undefined;
  if (props.kind === "Pod") return spec;
  if (props.kind === "CronJob")
    return (
      ((spec?.jobTemplate as Record<string, unknown>)?.spec as Record<string, unknown>)?.template as {
        spec?: Record<string, unknown>;
      }
    )?.spec;
  return (spec?.template as { spec?: Record<string, unknown> } | undefined)?.spec;
}

/** Every `resources` map in Helm values, with its path. */
function resourceMaps(value: unknown, path: string, out: [string, unknown][] = []): [string, unknown][] {
  if (isMap(value))
    for (const [k, v] of Object.entries(value)) {
      if (k === "resources") out.push([`${path}.${k}`, v]);
      else resourceMaps(v, `${path}.${k}`, out);
    }
  return out;
}

const requests = (r: unknown) => (isMap(r) && isMap(r.requests) ? r.requests : {});

const workloadRequests: ResourceValidationPolicy = {
  name: "workload-requests",
  description:
    "Every Kubernetes container, and every component whose resources a Helm release sets, requests CPU and memory.",
  validateResource: (args, report) => {
    if (WORKLOAD.test(args.type)) {
      const spec = podSpec(args.props);
      for (const c of [...asList(spec?.initContainers), ...asList(spec?.containers)].filter(isMap)) {
        const missing = ["cpu", "memory"].filter((k) => requests(c.resources)[k] === undefined);
        if (missing.length > 0) report(`container ${String(c.name)} requests no ${missing.join(" or ")}`);
      }
    }
    if (/^kubernetes:helm\.sh\//.test(args.type))
      for (const [path, r] of resourceMaps(args.props.values, "values")) {
        const missing = ["cpu", "memory"].filter((k) => requests(r)[k] === undefined);
        if (missing.length > 0) report(`${path} requests no ${missing.join(" or ")}`);
      }
  },
};

/** Shapes of credentials that must only ever reach a resource as a Pulumi secret. */
const CREDENTIAL: [string, RegExp][] = [
  ["an AWS access key", /\b(AKIA|ASIA)[0-9A-Z]{16}\b/],
  ["a private key", /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
  ["a GitHub token", /\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b/],
  ["a Pulumi access token", /\bpul-[0-9a-f]{40}\b/],
  ["a Slack token", /\bxox[abprs]-[A-Za-z0-9-]{10,}\b/],
];

/**
 * Inputs that exist to carry a secret, which their providers always store encrypted: a Kubernetes Secret's
 * data, a provider's credentials, a webhook's shared secret.
 */
const SECRET_INPUTS: Record<string, string[]> = {
  "kubernetes:core/v1:Secret": ["data", "stringData"],
  "pulumi:providers:github": ["token", "appAuth"],
  "pulumi:providers:kubernetes": ["kubeconfig"],
  "github:index/repositoryWebhook:RepositoryWebhook": ["configuration.secret"],
};

function strings(value: unknown, path: string, out: [string, string][] = []): [string, string][] {
  if (typeof value === "string") out.push([path, value]);
  else if (Array.isArray(value)) value.forEach((v, i) => strings(v, `${path}[${i}]`, out));
  else if (isMap(value))
    for (const [k, v] of Object.entries(value)) strings(v, path ? `${path}.${k}` : k, out);
  return out;
}

const noPlaintextSecrets: ResourceValidationPolicy = {
  name: "no-plaintext-secret",
  description:
    "No credential (AWS key, private key, GitHub, Pulumi or Slack token) appears in an input that is not meant to hold a secret.",
  validateResource: (args, report) => {
    const exempt = SECRET_INPUTS[args.type] ?? [];
    for (const [path, text] of strings(args.props, "")) {
      if (exempt.some((e) => path === e || path.startsWith(`${e}.`) || path.startsWith(`${e}[`))) continue;
      for (const [what, shape] of CREDENTIAL)
        if (shape.test(text))
          report(
            `${path} holds ${what} in plain text; pass it as a Pulumi secret into a Kubernetes Secret instead`,
          );
    }
  },
};

export const policies: ResourceValidationPolicy[] = [
  noWorldIngress,
  noIamWriteOnStar,
  dataProtected,
  versionsPinned,
  workloadRequests,
  noPlaintextSecrets,
];

export type { ResourceValidationArgs };
