// Checks of single fields against what the systems the pipeline drives accept at run time: verification
// durations, the Pulumi API address the token goes to, the Warehouse branch, the workspace image, stack config
// values, namespaces. Each returns problems as `<field path>: ...` naming what is allowed.
import { Region } from "@pulumi/aws/types/enums";
import { isReservedNamespace, reservedNamespaces } from "../namespaces";
import { stageBranchPrefix } from "./names";
import { PULUMI_CLOUD_API, type ParsedPipeline, type Pipeline } from "./schema";

const DURATION_UNITS = { s: 1, m: 60, h: 3600 } as const;
const durationSeconds = (d: string) =>
  Number(d.slice(0, -1)) * DURATION_UNITS[d.slice(-1) as keyof typeof DURATION_UNITS];

/** Bounds of each verification duration, in seconds. */
const DURATION_BOUNDS = {
  initialDelay: { min: 0, max: 3600, allowed: "0s to 1h" },
  interval: { min: 1, max: 3600, allowed: "1s to 1h" },
  previewTimeout: { min: 1, max: 86400, allowed: "1s to 24h" },
  updateTimeout: { min: 1, max: 86400, allowed: "1s to 24h" },
} as const;

export function verificationProblems(v: Pipeline["verification"]): string[] {
  const problems: string[] = [];
  for (const [field, { min, max, allowed }] of Object.entries(DURATION_BOUNDS)) {
    const value = v[field as keyof typeof DURATION_BOUNDS];
    const s = durationSeconds(value);
    if (s < min || s > max)
      problems.push(`verification.${field}: "${value}" is out of range; allowed: ${allowed}`);
  }
  const interval = durationSeconds(v.interval);
  for (const field of ["previewTimeout", "updateTimeout"] as const) {
    if (durationSeconds(v[field]) < interval) {
      problems.push(
        `verification.${field}: "${v[field]}" is shorter than verification.interval "${v.interval}"; it must be at least one interval`,
      );
    }
  }
  return problems;
}

/**
 * The verification token travels in an Authorization header to the Pulumi API on every measurement: Pulumi
 * Cloud's own by default, any other host only when named as pulumi.selfHostedApiUrl, and HTTPS only.
 */
export function apiUrlProblems(pulumi: Pipeline["pulumi"]): string[] {
  const selfHosted = "pulumi.selfHostedApiUrl";
  if (pulumi.apiUrl !== PULUMI_CLOUD_API)
    return [
      `pulumi.apiUrl: "${pulumi.apiUrl}" is not Pulumi Cloud's API, and the Pulumi access token is sent to it on every verification measurement; allowed: ${PULUMI_CLOUD_API} (the default). For a self-hosted Pulumi Cloud, leave pulumi.apiUrl out and set ${selfHosted} to its API's https:// address`,
    ];
  if (pulumi.selfHostedApiUrl === undefined) return [];
  const at = selfHosted;
  const apiUrl = pulumi.selfHostedApiUrl;
  const allowed = "allowed: the https://host[/path] address of your self-hosted Pulumi Cloud's API";
  let url: URL;
  try {
    url = new URL(apiUrl);
  } catch {
    return [`${at}: "${apiUrl}" is not a URL; ${allowed}`];
  }
  if (url.protocol !== "https:")
    return [`${at}: "${apiUrl}" is not HTTPS; the Pulumi token would travel in clear. ${allowed}`];
  const problems: string[] = [];
  if (url.username || url.password)
    problems.push(`${at}: must not hold credentials; the token comes from a Secret`);
  if (url.search || url.hash) problems.push(`${at}: must not have a query or fragment; ${allowed}`);
  if (apiUrl.endsWith("/"))
    problems.push(`${at}: must not end with "/" (verification appends /api/stacks/...); ${allowed}`);
  if (url.origin === PULUMI_CLOUD_API)
    problems.push(`${at}: "${apiUrl}" is Pulumi Cloud's own API; leave ${at} out to use it`);
  return problems;
}

// Kargo's git subscription schema (akuity/kargo pkg/subscription/schemas/git.json, v1.11.2) for `branch`.
const kargoBranchPattern = /^[a-zA-Z0-9]([a-zA-Z0-9._/-]*[a-zA-Z0-9_-])?$/;

/** The Warehouse branch: what Kargo's schema and `git check-ref-format --branch` accept, and not a promotion's. */
export function branchProblems(branch: string): string[] {
  const at = "source.branch";
  const allowed =
    "allowed: letters, digits and . _ / -, starting with a letter or digit, at most 255 characters, a valid git branch name";
  if (branch.length > 255 || !kargoBranchPattern.test(branch)) {
    return [`${at}: "${branch}" is not a branch name Kargo's Warehouse accepts; ${allowed}`];
  }
  // git-check-ref-format(1): what Kargo's pattern lets through but git refuses.
  const components = branch.split("/");
  if (
    branch === "HEAD" ||
    branch.includes("..") ||
    components.some((c) => c === "" || c.startsWith(".") || c.endsWith(".lock"))
  ) {
    return [
      `${at}: "${branch}" is not a valid git branch name (no "..", "//", component starting with "." or ending in ".lock", nor "HEAD"); ${allowed}`,
    ];
  }
  if (branch.startsWith(stageBranchPrefix)) {
    return [
      `${at}: "${branch}" is a branch promotions push to (${stageBranchPrefix}<stage>); the Warehouse must watch the branch people merge to, such as "main"`,
    ];
  }
  return [];
}

// A reference as the distribution library parses it: [registry[:port]/]name[:tag][@sha256:digest].
const imageReference =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d{1,5})?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::(?<tag>\w[\w.-]{0,127}))?(?<digest>@sha256:[a-f0-9]{64})?$/;

/** An image a pod runs, pinned: `at` names the key, `example` a pinned image of the kind expected there. */
export function imageProblems(image: string, at: string, example: { name: string; tag: string }): string[] {
  const allowed = `allowed: an image with a version tag or digest, such as "${example.name}:${example.tag}" or "${example.name}@sha256:<64 hex>"`;
  const match = imageReference.exec(image);
  if (!match)
    return [
      `${at}: must be an image with a pinned tag or digest; "${image}" is not an image reference; ${allowed}`,
    ];
  const { tag, digest } = match.groups!;
  if (digest) return [];
  if (!tag)
    return [`${at}: must be an image with a pinned tag or digest; "${image}" has neither; ${allowed}`];
  if (tag.toLowerCase() === "latest")
    return [
      `${at}: must be an image with a pinned tag or digest; "latest" moves with every release; ${allowed}`,
    ];
  return [];
}

export const workspaceImageProblems = (image: string, at: string) =>
  imageProblems(image, at, { name: "pulumi/pulumi", tag: "3.270.0-nonroot" });

/** The verification Jobs' image: a Node official image, which runs the script as its `node` user (uid 1000). */
export const verificationImageProblems = (image: string) =>
  imageProblems(image, "verification.image", { name: "node", tag: "22.20.0-alpine3.22" });

const awsRegions: ReadonlySet<string> = new Set(Object.values(Region));
const configKey = /^[A-Za-z0-9_.-]+:[^:\s]+$/;

/**
 * Stack config of the promoted program, as a Pulumi stack file or a PKO Stack's `spec.config` holds it:
 * `<namespace>:<key>` keys, and values that are strings, finite numbers, booleans or structured (lists and
 * maps of those). `where` is the place to report, e.g. `Pulumi.dev.yaml: config`.
 */
export function stackConfigProblems(config: Record<string, unknown>, where: string): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(config)) {
    const at = `${where}.${key}`;
    if (!configKey.test(key)) {
      problems.push(
        `${at}: "${key}" is not a Pulumi config key; allowed: <namespace>:<key> such as "aws:region" or "infra-program:bucketPrefix"`,
      );
      continue;
    }
    const bad = badConfigValue(value);
    if (bad) problems.push(`${at}: ${bad}; allowed: a string, number, boolean, or a list or map of those`);
    else if (key === "aws:region" && !awsRegions.has(value as string)) {
      problems.push(
        `${at}: "${String(value)}" is not an AWS region; allowed: a region such as us-west-2 or eu-central-1`,
      );
    }
  }
  return problems;
}

/** Lists and maps a config value may nest. */
const MAX_CONFIG_DEPTH = 32;

/** What is wrong with a value parsed from a stack file's YAML, if anything. */
function badConfigValue(value: unknown, depth = 0): string | undefined {
  if (depth > MAX_CONFIG_DEPTH) return `is nested more than ${MAX_CONFIG_DEPTH} lists or maps deep`;
  if (value === null) return "has no value";
  if (typeof value === "number")
    return Number.isFinite(value) ? undefined : `${value} is not a finite number`;
  if (typeof value === "string" || typeof value === "boolean") return undefined;
  if (Array.isArray(value)) return value.map((v) => badConfigValue(v, depth + 1)).find(Boolean);
  if (Object.getPrototypeOf(value) === Object.prototype)
    return Object.values(value as object)
      .map((v) => badConfigValue(v, depth + 1))
      .find(Boolean);
  // What a YAML tag such as !!timestamp, !!binary or !!set makes of a value: a Date, a Uint8Array, a Set.
  return `a ${Object.prototype.toString.call(value).slice(8, -1)} is not a config value`;
}

/**
 * Namespaces the pipeline's own may not be. The Kargo project owns its namespace (Kargo creates it, and
 * deleting the Project deletes it), and the stacks namespace is cluster-setup's: the same rule cluster-setup
 * applies to its stacksNamespace (the cluster's own `default` and `kube-*`, every add-on's, Kargo's).
 */
export function namespaceProblems(p: ParsedPipeline): string[] {
  const reserved = isReservedNamespace;
  const allowed = `allowed: a namespace of its own, not the cluster's or an add-on's (${reservedNamespaces.join(", ")}, kube-*)`;
  const problems: string[] = [];
  if (reserved(p.project))
    problems.push(
      `project: "${p.project}" is a namespace the platform or Kubernetes reserves, and Kargo's Project would own it; ${allowed}`,
    );
  if (reserved(p.stacks.namespace))
    problems.push(
      `stacks.namespace: "${p.stacks.namespace}" is a namespace the platform or Kubernetes reserves; ${allowed}`,
    );
  if (p.project === p.stacks.namespace)
    problems.push(
      `project: "${p.project}" is also stacks.namespace; the Kargo project and the stacks need a namespace each`,
    );
  return problems;
}
