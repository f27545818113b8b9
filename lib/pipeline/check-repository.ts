// Checks of what the definition points at in the repository on disk: the promoted program's folder, the
// stacks folder `npm run stacks` writes to (symlinks resolved, never a folder that belongs to something
// else), each environment's Pulumi.<stack>.yaml, and excludes that would hide a file a stage runs.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { stackConfigProblems } from "./check-values";
import { environmentStages, programStageName } from "./graph";
import { normalDir, stackConfigFile, stackManifestFile } from "./names";
import type { ParsedPipeline, ProgramDeclaration } from "./schema";
import { parsePathSelector, selectorMatches } from "./selectors";

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

/**
 * Files of a program that decide what `pulumi install` and the runtime load, where the folder has them: the
 * package manifests and lock files of every runtime and the usual entry points.
 */
const PROGRAM_FILES = [
  "package.json",
  "package-lock.json",
  "yarn.lock",
  "pnpm-lock.yaml",
  "bun.lock",
  "index.ts",
  "index.js",
  "pyproject.toml",
  "uv.lock",
  "poetry.lock",
  "requirements.txt",
  "__main__.py",
  "go.mod",
  "go.sum",
  "main.go",
];

/**
 * What a stage runs, as files on the branch the Warehouse watches: each program's Pulumi.yaml, its lock
 * files and entry point, its Pulumi.<stack>.yaml files and each program stage's Stack template. Promotions
 * write none of them (they push only to stage/<stage>); a change to any must become Freight and pass the
 * gates.
 */
export function stageInputPaths(p: ParsedPipeline, repoRoot = defaultRepoRoot): string[] {
  const dir = normalDir(p.stacks.dir);
  return [
    ...p.programs.flatMap((x) => [
      path.posix.join(normalDir(x.dir), "Pulumi.yaml"),
      ...PROGRAM_FILES.map((f) => path.posix.join(normalDir(x.dir), f)).filter((f) =>
        fs.existsSync(path.join(repoRoot, f)),
      ),
      ...Object.keys(p.environments).map((env) => stackConfigFile(p, x, env)),
    ]),
    ...environmentStages(p).flatMap((s) =>
      p.programs.map((x) => path.posix.join(dir, stackManifestFile(programStageName(s.name, x.name)))),
    ),
  ];
}

export function sourcePathProblems(p: ParsedPipeline, repoRoot = defaultRepoRoot): string[] {
  const problems: string[] = [];
  const parse = (at: string, selectors: string[]) =>
    selectors.map((selector, i) => {
      const parsed = parsePathSelector(selector);
      if (typeof parsed === "string")
        problems.push(
          `${at}[${i}]: ${parsed}; allowed: a path (the folder or file and everything under it), "glob:<doublestar glob>" or "regex:<Go regular expression>"`,
        );
      return typeof parsed === "string" ? undefined : { selector, parsed };
    });
  for (const x of p.programs) parse(`programs.${x.name}.includePaths`, x.includePaths);
  const excludes = parse("source.excludePaths", p.source.excludePaths);
  for (const [index, exclude] of excludes.entries()) {
    const hidden =
      exclude && stageInputPaths(p, repoRoot).find((file) => selectorMatches(exclude.parsed, file));
    if (hidden) {
      problems.push(
        `source.excludePaths[${index}]: "${exclude.selector}" excludes ${hidden}, which a stage runs: a change to it would reach the stages without passing the gates; exclude only files no stage uses`,
      );
    }
  }
  return problems;
}

/** Top-level keys of a Pulumi stack settings file (pulumi/pulumi sdk/go/common/workspace/project.go, ProjectStack). */
const stackFileKeys = ["config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt"];

/**
 * A program's config in an environment: `Pulumi.<pulumiStack>.yaml` in the program's folder, which the same
 * Freight moves. It must exist (PKO runs the stack with whatever it holds), be a stack settings file, and
 * hold config {@link stackConfigProblems} accepts.
 */
export function stackConfigFileProblems(
  p: Pick<ParsedPipeline, "environments">,
  program: Pick<ProgramDeclaration, "name" | "dir">,
  environment: string,
  repoRoot: string,
): string[] {
  const file = stackConfigFile(p, program, environment);
  const full = path.join(repoRoot, file);
  if (!fs.lstatSync(full, { throwIfNoEntry: false })?.isFile()) {
    return [
      `programs.${program.name}: ${file} is missing; each program has its stack config for environment "${environment}" in its folder, as Pulumi.<pulumiStack>.yaml ("config: {}" if it needs none)`,
    ];
  }
  let doc: unknown;
  try {
    doc = YAML.parse(fs.readFileSync(full, "utf8"));
  } catch (err) {
    return [`${file}: is not valid YAML (${(err as Error).message.split("\n")[0]})`];
  }
  // yaml reads an empty file, or one of comments only, as null.
  if (doc === null) return [];
  const isMap = (v: unknown): v is Record<string, unknown> =>
    // Stryker disable next-line ConditionalExpression: null never gets here (above, and `config:` with no value reads as no config)
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isMap(doc))
    return [
      `${file}: must be a map of stack settings such as "config:", not a ${Array.isArray(doc) ? "list" : typeof doc}`,
    ];
  const problems = Object.keys(doc)
    .filter((key) => !stackFileKeys.includes(key))
    .map((key) => `${file}: unknown key "${key}"; allowed: ${stackFileKeys.join(", ")}`);
  // `config:` with no value is no config, as the Pulumi CLI reads it (a nil map).
  const config = doc.config ?? {};
  if (!isMap(config)) {
    return [...problems, `${file}: config must be a map of <namespace>:<key> to values`];
  }
  return [...problems, ...stackConfigProblems(config, `${file}: config`)];
}

export function environmentProblems(p: ParsedPipeline, repoRoot: string): string[] {
  const problems: string[] = [];
  const byStack = new Map<string, string>();
  const used = new Set(environmentStages(p).map((s) => s.environment));
  for (const [name, env] of Object.entries(p.environments)) {
    const other = byStack.get(env.pulumiStack);
    if (other !== undefined) {
      problems.push(
        `environments.${name}.pulumiStack: "${env.pulumiStack}" is also environment "${other}"'s stack; each environment needs its own Pulumi stack`,
      );
    } else byStack.set(env.pulumiStack, name);
    // An environment no stage uses is reported as such (unusedEnvironmentProblems), not for its files.
    if (used.has(name))
      for (const x of p.programs)
        if (programFolderExists(x.dir, repoRoot))
          problems.push(...stackConfigFileProblems(p, x, name, repoRoot));
  }
  return problems;
}

/** Whether a program's folder holds a Pulumi.yaml; check-programs.ts says what is wrong when it does not. */
const programFolderExists = (dir: string, repoRoot: string) =>
  !relativeDirProblem(dir) && fs.existsSync(path.join(repoRoot, normalDir(dir), "Pulumi.yaml"));

/** Why a repository-relative directory is not one this pipeline may use, if it is not. */
export function relativeDirProblem(dir: string): string | undefined {
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
export function realLocation(dir: string): string | undefined {
  let existing = dir;
  const rest: string[] = [];
  while (!fs.lstatSync(existing, { throwIfNoEntry: false })) {
    const parent = path.dirname(existing);
    // Stryker disable next-line ConditionalExpression: the root always exists, so the loop stops there anyway
    if (parent === existing) break;
    rest.unshift(path.basename(existing));
    existing = parent;
  }
  let real: string | undefined;
  try {
    real = fs.realpathSync(existing);
  } catch {
    // a broken or looping symlink
  }
  return real && path.join(real, ...rest);
}

const brokenLink = (at: string, dir: string) =>
  `${at}: "${dir}" goes through a broken or looping symlink; allowed: a real folder of the repository`;

export const inside = (root: string, target: string) => {
  const rel = path.relative(root, target);
  return rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
};

/**
 * Problems with the stacks directory, a path relative to `repoRoot`: it must resolve (symlinks included)
 * inside the repository, be neither a reserved folder nor inside one, not be the program's folder, and hold no
 * Pulumi project. `npm run stacks` writes and deletes there, so these hold for it as for the pipeline.
 */
export function stacksDirProblems(dir: string, programDirs: string[], repoRoot = defaultRepoRoot): string[] {
  const at = "stacks.dir";
  const relative = relativeDirProblem(dir);
  if (relative) return [`${at}: ${relative}`];
  const normal = normalDir(dir);
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
  for (const programDir of programDirs) {
    // A folder refused as programs[].dir (absolute, or above the repository) is reported there, not here.
    if (relativeDirProblem(programDir)) continue;
    const program = normalDir(programDir);
    const realProgram = realLocation(path.join(repoRoot, program)) ?? "";
    // The root holds every folder (and is refused as a program's folder); only a folder of its own counts.
    if (program !== "." && realProgram && inside(realProgram, real))
      return [
        `${at}: "${dir}" is ${real === realProgram ? "" : "inside "}the promoted program's folder ${program} (programs[].dir); allowed: a folder of its own`,
      ];
  }
  for (let d = real; inside(root, d) && d !== root; d = path.dirname(d)) {
    if (["Pulumi.yaml", "Pulumi.yml"].some((f) => fs.existsSync(path.join(d, f))))
      return [
        `${at}: "${dir}" is ${d === real ? "" : "inside "}a Pulumi project (${path.relative(root, d)}/Pulumi.yaml); allowed: a folder that holds only the generated Stack manifests`,
      ];
  }
  return [];
}
