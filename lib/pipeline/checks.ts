// Checks of a schema-valid pipeline definition against what the systems it drives accept at run time and
// against what it may touch on disk. Each returns problems as `<field path>: ...` or `stage "<name>": ...`
// messages naming what is allowed; validatePipeline reports them before any resource is registered.
import * as fs from "node:fs";
import * as path from "node:path";
import { Region } from "@pulumi/aws/types/enums";
import YAML from "yaml";
import { RE2JS } from "re2js";
import { isReservedNamespace, reservedNamespaces } from "../namespaces";
import { names, stackConfigFile, stackManifestFile, stageBranchPrefix } from "./derive";
import { PULUMI_CLOUD_API, ancestors, type EnvironmentStage, type Pipeline, type Stage } from "./model";

/** The repository this file lives in: the only place `programDir` and `stacks.dir` may point. */
export const defaultRepoRoot = path.resolve(__dirname, "..", "..");

/**
 * Top-level folders the repository uses for something else: the platform's Pulumi projects, shared code,
 * tests, CI and tooling. The stacks directory may be none of them nor inside one.
 */
export const RESERVED_FOLDERS = [
  "cluster",
  "cluster-setup",
  "kargo",
  "lib",
  "test",
  ".github",
  ".ci",
  ".git",
  "node_modules",
] as const;

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
    if (interval >= 1 && durationSeconds(v[field]) < interval) {
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

type PathSelector =
  | { kind: "glob"; regexp: PathMatcher }
  | { kind: "regexp"; regexp: PathMatcher }
  | { kind: "baseDir"; base: string };

/**
 * Parses an include/exclude path selector as Kargo does (akuity/kargo pkg/pattern/matcher.go,
 * ParsePathPattern, v1.11.2): `glob:` (doublestar), `regex:`/`regexp:` (Go RE2), else a base directory.
 * Returns the reason Kargo would refuse it, as Kargo's Warehouse then fails on every discovery.
 */
export function parsePathSelector(selector: string): PathSelector | string {
  if (selector.startsWith("glob:")) {
    const matcher = globMatcher(selector.slice("glob:".length));
    return typeof matcher === "string" ? `"${selector}" ${matcher}` : { kind: "glob", regexp: matcher };
  }
  for (const prefix of ["regex:", "regexp:"]) {
    if (selector.startsWith(prefix)) {
      const source = selector.slice(prefix.length);
      const compiled = compileGoRegexp(source);
      return typeof compiled === "string"
        ? `"${selector}" ${compiled}`
        : { kind: "regexp", regexp: compiled };
    }
  }
  if (
    path.posix.isAbsolute(selector) ||
    path.win32.isAbsolute(selector) ||
    selector.split("/").includes("..")
  ) {
    return `"${selector}" must be a path relative to the repository root without ".."`;
  }
  return { kind: "baseDir", base: path.posix.normalize(selector) };
}

/** Whether a parsed selector matches a repository path, with Kargo's semantics. */
export function selectorMatches(selector: PathSelector, file: string): boolean {
  if (selector.kind !== "baseDir") return selector.regexp.test(file);
  // Kargo: filepath.Rel(base, path) must not contain "..".
  return !path.posix.relative(selector.base, path.posix.normalize(file)).includes("..");
}

/** In a refusal of a glob Kargo would accept but whose matching this platform does not reproduce exactly. */
export const unsupportedGlob = "uses glob syntax this platform does not check";

const unsupported = (what: string) =>
  `${unsupportedGlob} (${what}); write it with "**" only as a whole path component, or as a regexp: selector`;

/**
 * Kargo's globs are doublestar's (bmatcuk/doublestar v4.9.2, which akuity/kargo v1.11.2 pkg/pattern uses):
 * a pattern is valid when every "\\" escapes a character, every "[...]" class is closed and not empty, and
 * braces balance outside classes (validate.go). Matching expands "{a,b}" alternatives in place (match.go), so
 * each alternative is matched as a glob of its own here too; within one, `*` and `?` stay inside a path
 * component, a class matches one character ("/" included), and `**` as a whole component spans any number of
 * components. Corner cases doublestar resolves in its own way (`**` glued to other characters, a trailing "/",
 * more than 2000 alternatives) are refused rather than guessed; test/differential checks the rest against
 * doublestar itself.
 */
function globMatcher(glob: string): PathMatcher | string {
  const invalid = `is not a valid glob (unclosed "[" or "{", an empty "[]", or a trailing "\\")`;
  if (!validGlob(glob)) return invalid;
  const alternatives = expandAlternatives(glob);
  if (typeof alternatives === "string") return alternatives;
  const compiled: RegExp[] = [];
  for (const alternative of [glob, ...alternatives]) {
    const tail = emptyTail(alternative);
    if (tail) return unsupported(`"${tail}" at the end, which can match nothing in more than one way`);
  }
  for (const alternative of alternatives) {
    const regexp = globToRegExp(alternative);
    if (typeof regexp === "string") return regexp;
    compiled.push(regexp);
  }
  return { test: (file) => compiled.some((r) => r.test(file)) };
}

function validGlob(glob: string): boolean {
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "\\") {
      if (++i >= glob.length) return false;
    } else if (c === "[") {
      i++;
      if (glob[i] === "!" || glob[i] === "^") i++;
      if (i >= glob.length || glob[i] === "]") return false;
      for (; i < glob.length && glob[i] !== "]"; i++) if (glob[i] === "\\") i++;
      if (i >= glob.length) return false;
    } else if (c === "{") depth++;
    else if (c === "}" && depth-- === 0) return false;
  }
  return depth === 0;
}

const escapedAt = (glob: string, i: number) => {
  let backslashes = 0;
  while (i - backslashes - 1 >= 0 && glob[i - backslashes - 1] === "\\") backslashes++;
  return backslashes % 2 === 1;
};

/**
 * When a path runs out before its glob does, doublestar accepts only a rest that is one of "", "*", "**",
 * "/**" (or an alternative group leading to one), without trying other ways to match nothing (match.go,
 * isZeroLengthPattern). A glob ending in two or more parts that can each match nothing ("*\/**", "*{,a}")
 * would be decided by that order, so it is refused: returns that ending, or "" when the glob is fine.
 */
function emptyTail(glob: string): string {
  let rest = glob;
  let parts = 0;
  let group = false;
  for (;;) {
    if (rest.endsWith("/**") && !escapedAt(rest, rest.length - 3)) rest = rest.slice(0, -3);
    else if (rest.endsWith("*") && !escapedAt(rest, rest.length - 1)) rest = rest.replace(/\*+$/, "");
    else if (rest.endsWith("}") && !escapedAt(rest, rest.length - 1)) {
      const open = rest.lastIndexOf("{");
      if (open < 0 || !/(^|,)[*{},/]*(,|$)/.test(rest.slice(open + 1, -1))) break;
      rest = rest.slice(0, open);
      group = true;
    } else break;
    parts++;
  }
  return parts > 1 || group ? glob.slice(rest.length) : "";
}

/** Index of the "]" closing the class opened at `open`, or of its end. */
function classEnd(glob: string, open: number): number {
  let i = open + 1;
  if (glob[i] === "!" || glob[i] === "^") i++;
  for (; i < glob.length && glob[i] !== "]"; i++) if (glob[i] === "\\") i++;
  return i;
}

/** Every brace-free glob the alternatives of `glob` stand for, outermost first. */
function expandAlternatives(glob: string): string[] | string {
  const done: string[] = [];
  const pending = [glob];
  while (pending.length) {
    const current = pending.pop()!;
    let open = -1;
    for (let i = 0; i < current.length && open < 0; i++) {
      if (current[i] === "\\") i++;
      else if (current[i] === "[") {
        const end = classEnd(current, i);
        if (/[{},]/.test(current.slice(i, end))) return unsupported(`"{", "}" or "," inside "[...]"`);
        i = end;
      } else if (current[i] === "{") open = i;
    }
    if (open < 0) {
      done.push(current);
      if (done.length > 2000) return unsupported("more than 2000 alternatives");
      continue;
    }
    const parts: string[] = [];
    let depth = 0;
    let from = open + 1;
    let close = -1;
    for (let i = open + 1; i < current.length && close < 0; i++) {
      if (current[i] === "\\") i++;
      else if (current[i] === "{") depth++;
      else if (current[i] === "}" && depth-- === 0) close = i;
      else if (current[i] === "," && depth === 0) {
        parts.push(current.slice(from, i));
        from = i + 1;
      }
    }
    parts.push(current.slice(from, close));
    for (const part of parts.reverse())
      pending.push(current.slice(0, open) + part + current.slice(close + 1));
  }
  return done;
}

/** A brace-free glob as an anchored RegExp, or why it is refused. */
function globToRegExp(glob: string): RegExp | string {
  if (glob.endsWith("/")) return unsupported('a trailing "/"');
  let out = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "\\") {
      out += escapeRegExp(glob[++i]!);
    } else if (c === "*") {
      let run = 1;
      for (; glob[i + 1] === "*"; i++) run++;
      if (run === 1) {
        out += "[^/]*";
        continue;
      }
      const atStart = i - run < 0 || glob[i - run] === "/";
      const atEnd = i + 1 === glob.length || glob[i + 1] === "/";
      if (run > 2 || !atStart || !atEnd) return unsupported(`"${"*".repeat(run)}" inside a path component`);
      if (glob[i + 1] === "/") {
        out += "(?:[^/]*/)*";
        i++;
      } else if (glob[i - 2] === "/" && !escapedAt(glob, i - 2)) {
        // A trailing "/**" matches the folder itself too.
        out = `${out.slice(0, -2)}(?:/.*)?`;
      } else out += ".*";
    } else if (c === "?") out += "[^/]";
    else if (c === "[") {
      const end = classEnd(glob, i);
      let j = i + 1;
      const negate = glob[j] === "!" || glob[j] === "^";
      if (negate) j++;
      let body = "";
      for (; j < end; j++) {
        if (glob[j] === "\\") j++;
        body += glob[j] === "-" && body && glob[j + 1] !== "]" ? "-" : escapeRegExp(glob[j]!);
      }
      out += negate ? `[^${body}]` : `[${body}]`;
      i = end;
    } else out += escapeRegExp(c);
  }
  try {
    return new RegExp(`^${out}$`);
  } catch {
    return unsupported("a character range whose ends are reversed");
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** A compiled pattern: whether it finds a match in a path, as Go's `Regexp.MatchString` does. */
export interface PathMatcher {
  test(file: string): boolean;
}

/**
 * Compiles a Go regular expression with Go's own syntax and semantics, or says why Go's regexp.Compile
 * refuses it. re2js is a port of RE2/J, itself a port of Go's regexp package: no lookaround or backreferences,
 * repeats up to 1000, `(?P<name>)`, `\Q...\E`, `[[:alpha:]]`, Unicode classes, as Go (test/differential).
 */
export function compileGoRegexp(source: string): PathMatcher | string {
  try {
    const compiled = RE2JS.compile(source);
    return { test: (file) => compiled.matcher(file).find() };
  } catch (err) {
    return `is not a regular expression Go accepts: ${(err as Error).message}`;
  }
}

/**
 * What a stage runs, as files on the branch the Warehouse watches: the program's Pulumi.yaml, each
 * environment's Pulumi.<stack>.yaml and each stage's Stack template. Promotions write none of them (they push
 * only to stage/<stage>); a change to any must become Freight and pass the gates.
 */
export function stageInputPaths(p: Pipeline): string[] {
  const dir = path.posix.normalize(p.stacks.dir);
  return [
    path.posix.join(p.source.programDir, "Pulumi.yaml"),
    ...Object.keys(p.environments).map((env) => stackConfigFile(p, env)),
    ...p.stages.filter((s) => s.kind !== "gate").map((s) => path.posix.join(dir, stackManifestFile(s.name))),
  ];
}

export function sourcePathProblems(p: Pipeline): string[] {
  const problems: string[] = [];
  const parse = (field: "includePaths" | "excludePaths") =>
    p.source[field].map((selector, i) => {
      const parsed = parsePathSelector(selector);
      if (typeof parsed === "string")
        problems.push(
          `source.${field}[${i}]: ${parsed}; allowed: a path (the folder or file and everything under it), "glob:<doublestar glob>" or "regex:<Go regular expression>"`,
        );
      return typeof parsed === "string" ? undefined : { selector, parsed };
    });
  parse("includePaths");
  const excludes = parse("excludePaths");
  for (const [index, exclude] of excludes.entries()) {
    const hidden = exclude && stageInputPaths(p).find((file) => selectorMatches(exclude.parsed, file));
    if (hidden) {
      problems.push(
        `source.excludePaths[${index}]: "${exclude.selector}" excludes ${hidden}, which a stage runs: a change to it would reach the stages without passing the gates; exclude only files no stage uses`,
      );
    }
  }
  return problems;
}

// A reference as the distribution library parses it: [registry[:port]/]name[:tag][@sha256:digest].
const imageReference =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\d{1,5})?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::(?<tag>\w[\w.-]{0,127}))?(?<digest>@sha256:[a-f0-9]{64})?$/;

export function workspaceImageProblems(image: string): string[] {
  const at = "stacks.workspaceImage";
  const allowed =
    'allowed: an image with a version tag or digest, such as "pulumi/pulumi:3.270.0-nonroot" or "pulumi/pulumi@sha256:<64 hex>"';
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

function badConfigValue(value: unknown, depth = 0): string | undefined {
  if (depth > 32) return "is nested too deeply";
  if (value === null || value === undefined) return "has no value";
  if (typeof value === "number")
    return Number.isFinite(value) ? undefined : `${value} is not a finite number`;
  if (typeof value === "string" || typeof value === "boolean") return undefined;
  if (Array.isArray(value)) return value.map((v) => badConfigValue(v, depth + 1)).find(Boolean);
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype)
    return Object.values(value)
      .map((v) => badConfigValue(v, depth + 1))
      .find(Boolean);
  return `a ${typeof value} is not a config value`;
}

/** Top-level keys of a Pulumi stack settings file (pulumi/pulumi sdk/go/common/workspace/project.go, ProjectStack). */
const stackFileKeys = ["config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt"];

/**
 * An environment's config: `Pulumi.<pulumiStack>.yaml` beside the promoted program, which the same Freight
 * moves. It must exist (PKO runs the stack with whatever it holds), be a stack settings file, and hold
 * config {@link stackConfigProblems} accepts.
 */
export function stackConfigFileProblems(p: Pipeline, environment: string, repoRoot: string): string[] {
  const file = stackConfigFile(p, environment);
  const full = path.join(repoRoot, file);
  if (!fs.lstatSync(full, { throwIfNoEntry: false })?.isFile()) {
    return [
      `environments.${environment}: ${file} is missing; each environment's stack config lives beside the promoted program in Pulumi.<pulumiStack>.yaml ("config: {}" if it needs none)`,
    ];
  }
  let doc: unknown;
  try {
    doc = YAML.parse(fs.readFileSync(full, "utf8"));
  } catch (err) {
    return [`${file}: is not valid YAML (${(err as Error).message.split("\n")[0]})`];
  }
  if (doc === null || doc === undefined) return [];
  const isMap = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isMap(doc))
    return [
      `${file}: must be a map of stack settings such as "config:", not a ${Array.isArray(doc) ? "list" : typeof doc}`,
    ];
  const problems = Object.keys(doc)
    .filter((key) => !stackFileKeys.includes(key))
    .map((key) => `${file}: unknown key "${key}"; allowed: ${stackFileKeys.join(", ")}`);
  if (doc.config !== undefined && !isMap(doc.config)) {
    return [...problems, `${file}: config must be a map of <namespace>:<key> to values`];
  }
  return [...problems, ...stackConfigProblems(doc.config ?? {}, `${file}: config`)];
}

export function environmentProblems(p: Pipeline, repoRoot: string): string[] {
  const problems: string[] = [];
  const byStack = new Map<string, string>();
  const used = new Set(environmentStagesOf(p).map((s) => s.environment));
  for (const [name, env] of Object.entries(p.environments)) {
    const other = byStack.get(env.pulumiStack);
    if (other !== undefined) {
      problems.push(
        `environments.${name}.pulumiStack: "${env.pulumiStack}" is also environment "${other}"'s stack; each environment needs its own Pulumi stack`,
      );
    } else byStack.set(env.pulumiStack, name);
    // An environment no stage uses is reported as such (unusedEnvironmentProblems), not for its file.
    if (used.has(name)) problems.push(...stackConfigFileProblems(p, name, repoRoot));
  }
  return problems;
}

const environmentStagesOf = (p: Pipeline) => p.stages.filter((s): s is EnvironmentStage => s.kind !== "gate");

/** An environment no stage uses is a typo or a leftover; reported with the graph checks. */
export function unusedEnvironmentProblems(p: Pipeline): string[] {
  const used = new Set(
    p.stages.filter((s): s is EnvironmentStage => s.kind !== "gate").map((s) => s.environment),
  );
  return Object.keys(p.environments)
    .filter((name) => !used.has(name))
    .map(
      (name) =>
        `environments.${name}: no stage uses it; add stages for it or remove it (environments in use: ${[...used].join(", ") || "none"})`,
    );
}

/** Names a stage may not have: the Warehouse literal and the project's other Kargo objects. */
const reservedStageNames = (): ReadonlyMap<string, string> =>
  new Map([
    ["warehouse", 'the word "from" uses for the Warehouse'],
    [names.warehouse, "the Warehouse's name"],
    [names.promotionTask, "the PromotionTask's name"],
    [names.analysis.preview, "the preview AnalysisTemplate's name"],
    [names.analysis.update, "the update AnalysisTemplate's name"],
    [names.gitCredentials, "the git credentials Secret's name"],
    [names.verificationToken, "the verification token Secret's name"],
  ]);

export function stageProblems(p: Pipeline): string[] {
  const problems: string[] = [];
  const reserved = reservedStageNames();
  for (const s of p.stages) {
    const owner = reserved.get(s.name);
    if (owner)
      problems.push(
        `stage "${s.name}": the name is ${owner}; choose another (reserved: ${[...reserved.keys()].join(", ")})`,
      );
    if (s.from !== "warehouse") {
      const twice = [...new Set(s.from.filter((up, i) => s.from.indexOf(up) !== i))];
      for (const up of twice)
        problems.push(`stage "${s.name}": lists upstream stage "${up}" more than once; list each once`);
    }
  }
  return problems;
}

/** Needs an acyclic graph: a preview must not come after the update of its own environment. */
export function orderProblems(stages: Stage[]): string[] {
  const problems: string[] = [];
  for (const s of stages) {
    if (s.kind !== "preview") continue;
    const before = ancestors(stages, s.name);
    const update = stages.find(
      (u) => u.kind === "update" && u.environment === s.environment && before.has(u.name),
    );
    if (update)
      problems.push(
        `stage "${s.name}": previews environment "${s.environment}" after its update stage "${update.name}" has applied; a preview must come before its update (or beside it), never after`,
      );
  }
  return problems;
}

/** Why a repository-relative directory is not one this pipeline may use, if it is not. */
function relativeDirProblem(dir: string): string | undefined {
  if (dir.includes("\\") || path.posix.isAbsolute(dir) || path.win32.isAbsolute(dir))
    return `"${dir}" is not a relative path; allowed: a folder of the repository such as "stacks", with "/" separators`;
  if (dir.split("/").includes(".."))
    return `"${dir}" leaves the repository; allowed: a folder of the repository without ".."`;
  // Promotions pass the folder on as a Kargo expression variable; nothing in it may read as syntax.
  if (!/^[A-Za-z0-9._/-]*$/.test(dir))
    return `"${dir}" has characters other than letters, digits, ".", "_", "-" and "/"`;
  return undefined;
}

/**
 * Resolves symlinks in the longest existing prefix of `dir`: where a write there would really land.
 * Undefined for a broken or looping symlink on the way, where nobody can tell.
 */
function realLocation(dir: string): string | undefined {
  let existing = dir;
  const rest: string[] = [];
  while (!fs.lstatSync(existing, { throwIfNoEntry: false })) {
    const parent = path.dirname(existing);
    if (parent === existing) break;
    rest.unshift(path.basename(existing));
    existing = parent;
  }
  try {
    return path.join(fs.realpathSync(existing), ...rest);
  } catch {
    return undefined;
  }
}

const brokenLink = (at: string, dir: string) =>
  `${at}: "${dir}" goes through a broken or looping symlink; allowed: a real folder of the repository`;

const inside = (root: string, target: string) => {
  const rel = path.relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
};

/**
 * Problems with the stacks directory, a path relative to `repoRoot`: it must resolve (symlinks included)
 * inside the repository, be neither a reserved folder nor inside one, not be the program's folder, and hold no
 * Pulumi project. `npm run stacks` writes and deletes there, so these hold for it as for the pipeline.
 */
export function stacksDirProblems(dir: string, programDir: string, repoRoot = defaultRepoRoot): string[] {
  const at = "stacks.dir";
  const relative = relativeDirProblem(dir);
  if (relative) return [`${at}: ${relative}`];
  const normal = path.posix.normalize(dir).replace(/\/$/, "");
  if (normal === ".")
    return [`${at}: must be a folder of its own, not the repository root; allowed: e.g. "stacks"`];
  const root = fs.realpathSync(repoRoot);
  const real = realLocation(path.join(repoRoot, normal));
  if (real === undefined) return [brokenLink(at, dir)];
  if (!inside(root, real))
    return [`${at}: "${dir}" resolves to ${real}, outside the repository (through a symlink)`];
  const realRelative = path.relative(root, real).split(path.sep);
  if (realRelative[0] === "")
    return [`${at}: "${dir}" resolves to the repository root; allowed: a folder of its own`];
  const reserved = RESERVED_FOLDERS.find((f) => f === realRelative[0]);
  if (reserved)
    return [
      `${at}: "${dir}" is ${realRelative.length === 1 ? "" : "inside "}the repository's ${reserved}/ folder; allowed: a folder of its own such as "stacks" (not ${RESERVED_FOLDERS.join(", ")})`,
    ];
  // A program at the root holds every folder; only a program in a folder of its own has one to keep out of.
  const program = path.posix.normalize(programDir).replace(/\/$/, "");
  const realProgram = realLocation(path.join(repoRoot, program)) ?? "";
  if (program !== "." && realProgram && (real === realProgram || inside(realProgram, real)))
    return [
      `${at}: "${dir}" is ${real === realProgram ? "" : "inside "}the promoted program's folder (source.programDir); allowed: a folder of its own`,
    ];
  for (let d = real; inside(root, d) && d !== root; d = path.dirname(d)) {
    if (["Pulumi.yaml", "Pulumi.yml"].some((f) => fs.existsSync(path.join(d, f))))
      return [
        `${at}: "${dir}" is ${d === real ? "" : "inside "}a Pulumi project (${path.relative(root, d)}/Pulumi.yaml); allowed: a folder that holds only the generated Stack manifests`,
      ];
  }
  return [];
}

/** `source.programDir`: a folder of the repository, symlinks included, holding the promoted Pulumi.yaml. */
export function programDirProblems(programDir: string, repoRoot = defaultRepoRoot): string[] {
  const at = "source.programDir";
  const relative = relativeDirProblem(programDir);
  if (relative) return [`${at}: ${relative}`];
  const root = fs.realpathSync(repoRoot);
  const real = realLocation(path.join(repoRoot, programDir));
  if (real === undefined) return [brokenLink(at, programDir)];
  if (!inside(root, real))
    return [`${at}: "${programDir}" resolves to ${real}, outside the repository (through a symlink)`];
  if (!fs.existsSync(path.join(real, "Pulumi.yaml")))
    return [
      `${at}: "${programDir}" holds no Pulumi.yaml; allowed: the repository folder of the promoted program ("." for the root)`,
    ];
  return [];
}

/**
 * Namespaces the pipeline's own may not be. The Kargo project owns its namespace (Kargo creates it, and
 * deleting the Project deletes it), and the stacks namespace is cluster-setup's: the same rule cluster-setup
 * applies to its stacksNamespace (the cluster's own `default` and `kube-*`, every add-on's, Kargo's).
 */
export function namespaceProblems(p: Pipeline): string[] {
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

export interface CheckOptions {
  /** Repository the paths of the definition are relative to; this checkout by default. */
  repoRoot?: string;
}

/** Every check above that needs no graph order, for validatePipeline's first round of problems. */
export function inputProblems(p: Pipeline, options: CheckOptions = {}): string[] {
  const repoRoot = options.repoRoot ?? defaultRepoRoot;
  return [
    ...namespaceProblems(p),
    ...branchProblems(p.source.branch),
    ...programDirProblems(p.source.programDir, repoRoot),
    ...sourcePathProblems(p),
    ...apiUrlProblems(p.pulumi),
    ...stacksDirProblems(p.stacks.dir, p.source.programDir, repoRoot),
    ...workspaceImageProblems(p.stacks.workspaceImage),
    ...verificationProblems(p.verification),
    ...environmentProblems(p, repoRoot),
    ...stageProblems(p),
  ];
}
