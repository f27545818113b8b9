import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import * as runtimeConfig from "@pulumi/pulumi/runtime/config";
import * as ipaddr from "ipaddr.js";
import { z } from "zod";

/**
 * Thrown for stack configuration that would deploy something broken. Extends `pulumi.RunError` so the CLI
 * prints the message alone, without a stack trace.
 */
export class ConfigError extends pulumi.RunError {
  constructor(
    readonly project: string,
    readonly problems: string[],
  ) {
    super(
      `Invalid configuration for project "${project}":\n` +
        problems.map((p) => `  - ${p}`).join("\n") +
        `\nSee ${project}/Pulumi.yaml for the keys with a default or that must be set, and ${project}/Pulumi.example.yaml for the optional ones.`,
    );
    this.name = "ConfigError";
  }
}

type Loaded<T, K extends keyof T, M extends keyof T> = Omit<T, K | M> & {
  [P in K]: pulumi.Output<NonNullable<T[P]>>;
} & { [P in M]: pulumi.Input<T[P]> };

export interface LoadConfigOptions<K extends string, M extends string> {
  /** Keys declared `secret: true`: they must be set encrypted, and come back as Pulumi secrets. */
  secrets?: readonly K[];
  /**
   * Keys a user may choose to set with `--secret` (chart values holding a credential, say): they come back as
   * Pulumi secrets when set so, and as plain values otherwise. Any other key set as a secret is an error: the
   * program uses it in names and plain properties, where its secrecy would be lost.
   */
  secretCapable?: readonly M[];
  /** Require `aws:region` (for projects that use the default AWS provider). */
  requireRegion?: boolean;
  project?: string;
}

/**
 * AWS regions, as @pulumi/aws 7.48.0 knows them (`aws.Region`, from the provider's schema): the same list a
 * deploy would accept.
 */
export const awsRegions: readonly string[] = Object.values(aws.Region);

/** The chained projects: a key of one set in another's stack file is silently ignored by the CLI. */
const chainProjects = ["cluster", "cluster-setup", "kargo"];

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** Why a key outside `project`'s namespace is surely a mistake, or undefined when it may be legitimate. */
function foreignKeyProblem(
  project: string,
  fullKey: string,
  namespace: string,
  key: string,
): string | undefined {
  // A provider's namespace (aws, kubernetes, ...) is neither a chain project nor near any project's name.
  if (namespace === project) return undefined;
  if (chainProjects.includes(namespace)) {
    return `${fullKey}: belongs to project "${namespace}", not "${project}", and would be ignored; this project's keys are ${project}:<key>`;
  }
  const typo = editDistance(namespace.toLowerCase(), project) <= Math.max(1, Math.floor(project.length / 4));
  if (typo) {
    return `${fullKey}: namespace "${namespace}" looks like a typo of "${project}" and would be ignored; did you mean ${project}:${key}?`;
  }
  return undefined;
}

// The SDK knows which config keys the CLI handed over encrypted, but marks the lookup internal.
const { isConfigSecret } = runtimeConfig as typeof runtimeConfig & { isConfigSecret(key: string): boolean };

/**
 * Reads the current project's namespace of stack configuration, validates it against `schema` and returns
 * the typed values. Call it first in a program: it throws a {@link ConfigError} naming every bad key and what
 * it allows before any resource is registered.
 *
 * Values arrive as strings (the CLI stores arrays and numbers as JSON text), so a value the schema rejects as
 * a string is parsed as JSON and validated again. Keys under the namespace that the schema does not know are
 * errors too: a misspelt key would otherwise be ignored silently, and so are keys under a namespace that is a
 * typo of the project's. Declared secrets must be set encrypted and come back as Pulumi secrets; a key the
 * user set as a secret stays one (see {@link LoadConfigOptions.secretCapable}), and no message repeats it.
 */
export function loadConfig<T extends z.ZodObject>(
  schema: T,
  options?: { requireRegion?: boolean; project?: string },
): z.output<T>;
export function loadConfig<
  T extends z.ZodObject,
  K extends keyof z.output<T> & string,
  M extends keyof z.output<T> & string = never,
>(schema: T, options: LoadConfigOptions<K, M>): Loaded<z.output<T>, K, M>;
export function loadConfig(
  schema: z.ZodObject,
  options: LoadConfigOptions<string, string> = {},
): Record<string, unknown> {
  const project = options.project ?? pulumi.getProject();
  const config = new pulumi.Config(project);
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};
  const declaredSecret = new Set<string>(options.secrets ?? []);
  const secretCapable = new Set<string>(options.secretCapable ?? []);
  const userSecret = new Set<string>();
  // Stryker disable next-line ArrayDeclaration: a seeded text is redacted only where a message holds it, and none does
  const secretTexts: string[] = [];

  for (const [key, field] of Object.entries(schema.shape)) {
    const text = config.get(key);
    if (text === undefined) continue;
    raw[key] = coerce(field as z.ZodType, text);
    const fullKey = `${project}:${key}`;
    const encrypted = isConfigSecret(fullKey);
    if (encrypted || declaredSecret.has(key)) secretTexts.push(text);
    // An empty value reveals nothing; the schema says whether the key may be empty.
    if (declaredSecret.has(key) && !encrypted && text !== "") {
      problems.push(
        `${fullKey}: must be encrypted as it's secret; set it with pulumi config set --secret ${key} <value>`,
      );
    } else if (encrypted && !declaredSecret.has(key)) {
      if (secretCapable.has(key)) userSecret.add(key);
      else {
        const mayBe = [...declaredSecret, ...secretCapable].sort();
        problems.push(
          `${fullKey}: is set as a secret, but the program uses it in resource names and plain properties where it cannot stay secret; set it without --secret` +
            (mayBe.length > 0 ? ` (keys that may be secret: ${mayBe.join(", ")})` : ""),
        );
      }
    }
  }

  for (const [key, value] of Object.entries(raw)) {
    for (const at of prototypeKeyPaths(value)) {
      problems.push(
        `${project}:${key} (at ${at}): the key "__proto__" is not allowed; JavaScript and Pulumi's SDK treat it as an object's prototype and would drop it with its value. Rename it`,
      );
    }
  }

  const known = new Set(Object.keys(schema.shape));
  for (const fullKey of Object.keys(pulumi.runtime.allConfig())) {
    // The CLI hands every key over as <namespace>:<key>; a key may hold more colons.
    const separator = fullKey.indexOf(":");
    const [namespace, key] = [fullKey.slice(0, separator), fullKey.slice(separator + 1)];
    if (namespace === project && !known.has(key)) {
      problems.push(`${fullKey}: unknown key; known keys are ${[...known].sort().join(", ")}`);
    } else {
      const problem = foreignKeyProblem(project, fullKey, namespace, key);
      if (problem) problems.push(problem);
    }
  }

  const region = pulumi.runtime.allConfig()["aws:region"];
  if (region === undefined && options.requireRegion) {
    problems.push(
      "aws:region: is required; set it with pulumi config set aws:region <region>, e.g. us-west-2",
    );
  } else if (region !== undefined && !awsRegions.includes(region)) {
    problems.push(`aws:region: "${region}" is not an AWS region; allowed: ${awsRegions.join(", ")}`);
  }

  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const [key, ...rest] = issue.path.map(String);
      const where = rest.length > 0 ? `${project}:${key} (at ${rest.join(".")})` : `${project}:${key}`;
      // A key that is not set has no value to find an issue inside of, so its issue is the key's own.
      const missing = key !== undefined && raw[key] === undefined;
      // A rule of our own on an unset key (one key needing another) says more than "is required".
      const message =
        missing && issue.code !== "custom"
          ? `is required; set it with pulumi config set ${declaredSecret.has(key) ? "--secret " : ""}${key} <value>`
          : issue.message;
      problems.push(`${key === undefined ? project : where}: ${message}`);
    }
  }
  if (problems.length > 0) {
    // No message repeats a secret value, not even a rejected one.
    const redact = (problem: string) =>
      secretTexts.filter((t) => t.length >= 4).reduce((p, t) => p.split(t).join("[secret]"), problem);
    throw new ConfigError(project, problems.map(redact));
  }

  const values = { ...(parsed.data as Record<string, unknown>) };
  for (const key of [...declaredSecret, ...userSecret]) {
    if (values[key] !== undefined) values[key] = pulumi.secret(values[key]);
  }
  return values;
}

/**
 * Where `value` holds an own key `__proto__`, as a path ("" for the value itself). JSON.parse makes it an
 * ordinary key, but every later assignment of it (zod's record parsing, Pulumi's input serialization,
 * @pulumi/pulumi 3.270.0 runtime/rpc.js serializeProperty `obj[k] = v`) sets an object's prototype instead, so
 * the key and its value would vanish without a word.
 */
export function prototypeKeyPaths(value: unknown, at: string[] = [], depth = 0): string[] {
  if (typeof value !== "object" || value === null || depth > 64) return [];
  const here = Object.hasOwn(value, "__proto__") ? [[...at, "__proto__"].join(".")] : [];
  return [...here, ...Object.entries(value).flatMap(([k, v]) => prototypeKeyPaths(v, [...at, k], depth + 1))];
}

function coerce(field: z.ZodType, text: string): unknown {
  const asText = field.safeParse(text);
  // Only a value of the wrong type is re-read as JSON: "1.29" stays the string a version field expects.
  // (A string is refused whole, so its issues are at the top level.)
  if (asText.success || !asText.error.issues.some((i) => i.code === "invalid_type")) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text; // validation reports it against the expected type
  }
}

/**
 * An IPv4 CIDR checked for real (octets, prefix length, host bits), then by `check`, which gets the range
 * ipaddr.js assigns the network address ("private", "loopback", "multicast", "unicast", ...) and the prefix.
 */
export const cidr = (check: (range: string, prefix: number) => string | undefined = () => undefined) =>
  z.string().superRefine((value, ctx) => {
    if (!ipaddr.IPv4.isValidCIDR(value)) {
      ctx.addIssue({
        code: "custom",
        message: `"${value}" is not an IPv4 CIDR such as 10.0.0.0/16 (four octets of 0-255, a prefix of 0-32)`,
      });
      return;
    }
    const [address, prefix] = ipaddr.IPv4.parseCIDR(value);
    if (ipaddr.IPv4.networkAddressFromCIDR(value).toString() !== address.toString()) {
      ctx.addIssue({
        code: "custom",
        message: `"${value}" has host bits set; use its network address ${ipaddr.IPv4.networkAddressFromCIDR(value).toString()}/${prefix}`,
      });
      return;
    }
    const problem = check(address.range(), prefix);
    if (problem) ctx.addIssue({ code: "custom", message: `"${value}" ${problem}` });
  });

/**
 * A list of source ranges allowed to reach an internet-facing endpoint: public unicast ranges, or 0.0.0.0/0
 * for any address. Private, loopback, multicast and reserved ranges never arrive from the internet, so listing
 * one is a mistake that leaves the endpoint either unreachable or open to less than was meant.
 */
export const internetAllowList = (limit: number, why: string) =>
  z
    .array(
      cidr((range, prefix) => {
        if (prefix === 0) return undefined; // 0.0.0.0/0, the only /0 without host bits: any address
        if (range === "unicast") return undefined;
        const article = /^[aeiou]/.test(range) ? "an" : "a";
        return `is ${article} ${range} range, which never reaches an internet-facing endpoint; list public ranges, or 0.0.0.0/0 for any address`;
      }),
    )
    .min(1, 'must list at least one CIDR; use ["0.0.0.0/0"] to allow any address')
    .max(limit, `must list at most ${limit} CIDRs (${why})`)
    .refine((cidrs) => new Set(cidrs).size === cidrs.length, { message: "must not repeat a CIDR" });

/** A DNS name: labels of 1-63 lower-case letters, digits and inner hyphens, at most 253 characters in all. */
export const hostname = z.string().superRefine((name, ctx) => {
  const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  const labels = name.split(".");
  const problem =
    name.length > 253
      ? `is ${name.length} characters; a DNS name has at most 253`
      : labels.length < 2
        ? "must be a fully qualified DNS name such as kargo.example.com, without a scheme"
        : labels.find((l) => l.length > 63)
          ? `has a label of more than 63 characters ("${labels.find((l) => l.length > 63)!.slice(0, 20)}...")`
          : !labels.every((l) => label.test(l)) || !/[a-z]/.test(labels[labels.length - 1]!)
            ? "must be a DNS name such as kargo.example.com: lower-case letters, digits and inner '-' in each dot-separated label, no scheme or port"
            : undefined;
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** Schema pieces that several projects validate the same way. */
export const configFields = {
  /** `org/project/stack` of an upstream stack read through a StackReference. */
  stackName: (what: string) =>
    z
      .string()
      .regex(
        /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/,
        `must name the ${what} stack as <org>/<project>/<stack>`,
      ),
  iamRoleArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/,
      "must be an IAM role ARN such as arn:aws:iam::123456789012:role/Admins",
    ),
  iamPolicyArn: z
    .string()
    .regex(
      /^arn:aws[a-z-]*:iam::(\d{12}|aws):policy\/[\w+=,.@/-]{1,512}$/,
      "must be an IAM policy ARN such as arn:aws:iam::aws:policy/ReadOnlyAccess",
    ),
  /** A Kubernetes object name that is a DNS label (namespaces, ServiceAccounts we create). */
  dnsLabel: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
      "must be a DNS label: 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit",
    ),
};
