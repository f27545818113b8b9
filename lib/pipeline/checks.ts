// Checks of a schema-valid pipeline definition against what the systems it drives accept at run time and
// against what it may touch on disk. Each returns problems as `<field path>: ...` or `stage "<name>": ...`
// messages naming what is allowed; validatePipeline reports them before any resource is registered.
import * as fs from "node:fs";
import * as path from "node:path";
import { Region } from "@pulumi/aws/types/enums";
import YAML from "yaml";
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
  { kind: "glob"; regexp: RegExp } | { kind: "regexp"; regexp: RegExp } | { kind: "baseDir"; base: string };

/**
 * Parses an include/exclude path selector as Kargo does (akuity/kargo pkg/pattern/matcher.go,
 * ParsePathPattern, v1.11.2): `glob:` (doublestar), `regex:`/`regexp:` (Go RE2), else a base directory.
 * Returns the reason Kargo would refuse it, as Kargo's Warehouse then fails on every discovery.
 */
export function parsePathSelector(selector: string): PathSelector | string {
  if (selector.startsWith("glob:")) {
    const glob = selector.slice("glob:".length);
    const regexp = globToRegExp(glob);
    if (regexp) return { kind: "glob", regexp };
    return `"${selector}" is not a valid glob (unclosed "[" or "{", an empty "[]", or a trailing "\\")`;
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

/**
 * doublestar's pattern syntax (bmatcuk/doublestar v4, validate.go and match.go) as a RegExp: `*` and `?` stay
 * within a path component, `**` as a whole component spans any number of them, `[...]`/`[!...]` classes,
 * `{a,b}` alternatives, `\` escapes. Undefined where doublestar's ValidatePattern fails.
 */
function globToRegExp(glob: string): RegExp | undefined {
  let out = "";
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "\\") {
      if (++i >= glob.length) return undefined;
      out += escapeRegExp(glob[i]!);
    } else if (c === "*") {
      const atStart = i === 0 || glob[i - 1] === "/";
      if (glob[i + 1] === "*") {
        while (glob[i + 1] === "*") i++;
        const atEnd = i + 1 === glob.length || glob[i + 1] === "/";
        if (atStart && atEnd) {
          if (glob[i + 1] === "/") {
            out += "(?:[^/]*/)*";
            i++;
          } else if (out.endsWith("\\/")) {
            // A trailing "/**" matches the folder itself too.
            out = `${out.slice(0, -2)}(?:/.*)?`;
          } else out += ".*";
          continue;
        }
      }
      out += "[^/]*";
    } else if (c === "?") out += "[^/]";
    else if (c === "[") {
      let j = i + 1;
      let negate = false;
      if (glob[j] === "!" || glob[j] === "^") {
        negate = true;
        j++;
      }
      if (j >= glob.length || glob[j] === "]") return undefined;
      let body = "";
      for (; j < glob.length && glob[j] !== "]"; j++) {
        if (glob[j] === "\\") j++;
        if (j >= glob.length) return undefined;
        body += glob[j] === "-" && body && glob[j + 1] !== "]" ? "-" : escapeRegExp(glob[j]!);
      }
      if (j >= glob.length) return undefined;
      out += negate ? `[^/${body}]` : `(?!/)[${body}]`;
      i = j;
    } else if (c === "{") {
      depth++;
      out += "(?:";
    } else if (c === "}") {
      if (depth === 0) return undefined;
      depth--;
      out += ")";
    } else if (c === "," && depth > 0) out += "|";
    else out += escapeRegExp(c);
  }
  if (depth !== 0) return undefined;
  try {
    return new RegExp(`^${out}$`);
  } catch {
    return undefined;
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** Letters Go's regexp/syntax accepts after a backslash. */
const goLetterEscapes = "afnrtvdDsSwWbBAzpPxQE";

/**
 * Compiles a Go (RE2) regular expression as a JavaScript RegExp, or says why Go's regexp.Compile refuses it.
 * RE2 has no lookaround, backreferences or atomic groups, which JavaScript would accept; Go-only syntax
 * (`(?P<name>`, flag groups, `\A`, `\z`, `[[:alpha:]]`) is rewritten to its JavaScript equivalent.
 */
export function compileGoRegexp(source: string): RegExp | string {
  if (/(^|[^\\])\(\?<?[=!]/.test(source))
    return "uses lookaround, which Go's RE2 regular expressions do not support";
  if (/(^|[^\\])\(\?>/.test(source))
    return "uses an atomic group, which Go's RE2 regular expressions do not support";
  // Escapes, read left to right so that "\\\\" is one escaped backslash (Go's regexp/syntax parse.go).
  for (let i = 0; i < source.length; i++) {
    if (source[i] !== "\\") continue;
    const next = source[++i] ?? "";
    if (next === "") return "ends with a lone \\";
    if (/[89]/.test(next) || (/[1-7]/.test(next) && !/[0-7]/.test(source[i + 1] ?? "")) || next === "k")
      return "uses a backreference, which Go's RE2 regular expressions do not support";
    if (/[a-zA-Z]/.test(next) && !goLetterEscapes.includes(next))
      return `uses the escape \\${next}, which Go's regular expressions do not know`;
  }
  const repeat = /\{(\d+)(?:,(\d*))?\}/g;
  for (let m = repeat.exec(source); m; m = repeat.exec(source)) {
    if (Number(m[1]) > 1000 || Number(m[2] || 0) > 1000)
      return `repeats more than 1000 times ("${m[0]}"), which Go's regular expressions refuse`;
  }
  const classes: Record<string, string> = {
    alpha: "A-Za-z",
    digit: "0-9",
    alnum: "A-Za-z0-9",
    upper: "A-Z",
    lower: "a-z",
    space: "\\s",
    word: "\\w",
    punct: "!-/:-@[-`{-~",
    xdigit: "0-9A-Fa-f",
    ascii: "\\x00-\\x7F",
    blank: " \\t",
    cntrl: "\\x00-\\x1F\\x7F",
    graph: "!-~",
    print: " -~",
  };
  const unknownClass = /\[:\^?([a-z]+):\]/g.exec(
    source.replace(
      /\[:\^?(alnum|alpha|ascii|blank|cntrl|digit|graph|lower|print|punct|space|upper|word|xdigit):\]/g,
      "",
    ),
  );
  if (unknownClass)
    return `uses the character class ${unknownClass[0]}, which Go's regular expressions do not know`;
  let flags = "";
  const js = source
    .replace(/^\(\?([imsU]+)\)/, (_, f: string) => {
      flags = [...new Set(f.replace("U", ""))].join("");
      return "";
    })
    .replace(/\(\?(?:[imsU]+(?:-[imsU]*)?|-[imsU]+)\)/g, "")
    .replace(/\(\?P</g, "(?<")
    .replace(/\(\?[imsU]*(-[imsU]*)?:/g, "(?:")
    .replace(/\\A/g, "^")
    .replace(/\\z/g, "$")
    .replace(/\[:(\^?)([a-z]+):\]/g, (whole, _neg: string, name: string) => classes[name] ?? whole);
  try {
    return new RegExp(js, flags);
  } catch (err) {
    return `does not compile as a regular expression: ${(err as Error).message}`;
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

export interface CheckOptions {
  /** Repository the paths of the definition are relative to; this checkout by default. */
  repoRoot?: string;
}

/** Every check above that needs no graph order, for validatePipeline's first round of problems. */
export function inputProblems(p: Pipeline, options: CheckOptions = {}): string[] {
  const repoRoot = options.repoRoot ?? defaultRepoRoot;
  return [
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
