// Checks of the promoted programs, read from the repository: each folder holds a Pulumi project of its own,
// whose Pulumi.yaml gives the project name and runtime; the runtime has a workspace image; its dependencies
// are locked, since PKO's workspace runs `pulumi install` before every operation
// (pulumi-kubernetes-operator v2.9.0 agent/pkg/server/server.go Install); and the programs' dependencies
// on each other are known and acyclic. Resolves each program for the derivations.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import {
  defaultRepoRoot,
  inside,
  realLocation,
  relativeDirProblem,
  RESERVED_FOLDERS,
} from "./check-repository";
import { workspaceImageProblems } from "./check-values";
import { findProgramCycle } from "./graph";
import { normalDir } from "./names";
import { programPlugins } from "./program-plugins";
import { WORKSPACE_IMAGES, type ParsedPipeline, type Program, type ProgramDeclaration } from "./schema";

interface ProjectFile {
  name?: unknown;
  runtime?: unknown;
}

/** The runtime's name and options, as Pulumi.yaml gives them (`runtime: nodejs` or `runtime: {name, options}`). */
function runtimeOf(project: ProjectFile): { name?: string; options: Record<string, unknown> } {
  if (typeof project.runtime === "string") return { name: project.runtime, options: {} };
  const r = project.runtime as { name?: unknown; options?: unknown } | null | undefined;
  const options = r?.options && typeof r.options === "object" ? (r.options as Record<string, unknown>) : {};
  return { name: typeof r?.name === "string" ? r.name : undefined, options };
}

const exists = (file: string) => fs.lstatSync(file, { throwIfNoEntry: false })?.isFile() ?? false;

/** A map of package name to version spec, from package.json or the lock file's root package. */
const dependencySpecs = (pkg: Record<string, unknown> | undefined) => ({
  ...((pkg?.dependencies as Record<string, string>) ?? {}),
  ...((pkg?.devDependencies as Record<string, string>) ?? {}),
  ...((pkg?.optionalDependencies as Record<string, string>) ?? {}),
});

const sameSpecs = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);

/**
 * What `pulumi install` runs for the program's runtime, and why it would fetch something unpinned, as read
 * at pulumi/pulumi v3.259.0 (the newest tag the snapshot held; the platform pins 3.270.0): sdk/nodejs/npm
 * (`npm install`, which installs exactly package-lock.json's versions when it matches package.json),
 * sdk/python/toolchain (uv: `uv sync`; poetry: `poetry install`; pip: first `pip install --upgrade pip
 * setuptools wheel`), sdk/go/pulumi-language-go (`go mod tidy`, checked against go.sum).
 */
function lockProblems(
  at: string,
  dir: string,
  rel: string,
  runtime: string,
  options: Record<string, unknown>,
) {
  const file = (name: string) => path.join(dir, name);
  if (runtime === "nodejs") {
    const manager = (options.packagemanager as string | undefined) ?? "auto";
    const locks: Record<string, string> = {
      yarn: "yarn.lock",
      pnpm: "pnpm-lock.yaml",
      bun: "bun.lock",
      npm: "package-lock.json",
    };
    const found = Object.entries(locks).find(([, lock]) => exists(file(lock)));
    const wanted = manager === "auto" ? (found?.[0] ?? "npm") : manager;
    const lock = locks[wanted];
    if (!lock)
      return [
        `${at}: ${rel}/Pulumi.yaml runtime option packagemanager "${manager}" is unknown; allowed: npm, yarn, pnpm, bun`,
      ];
    if (!exists(file("package.json"))) return [`${at}: ${rel} has no package.json`];
    if (!exists(file(lock)))
      return [
        `${at}: ${rel} has no ${lock}; \`pulumi install\` would resolve its dependencies anew on every run. Commit the lock file (npm install in ${rel})`,
      ];
    if (wanted !== "npm") return [];
    // A file that is not JSON is a problem to report, like any other, not an exception out of the checks.
    const read = (name: string): Record<string, unknown> | string => {
      try {
        const value = JSON.parse(fs.readFileSync(file(name), "utf8")) as unknown;
        if (typeof value === "object" && value !== null && !Array.isArray(value))
          return value as Record<string, unknown>;
        return `${at}: ${rel}/${name} is not a JSON object; allowed: the file npm install writes`;
      } catch (err) {
        return `${at}: ${rel}/${name} is not valid JSON (${(err as Error).message.split("\n")[0]}); allowed: the file npm install writes`;
      }
    };
    const pkg = read("package.json");
    const locked = read(lock);
    if (typeof pkg === "string" || typeof locked === "string")
      return [pkg, locked].filter((x): x is string => typeof x === "string");
    const root = (locked.packages as Record<string, Record<string, unknown>> | undefined)?.[""];
    if (!sameSpecs(dependencySpecs(pkg), dependencySpecs(root)))
      return [
        `${at}: ${rel}/package-lock.json does not match package.json; npm install would rewrite it with whatever is newest. Run npm install in ${rel} and commit both`,
      ];
    return [];
  }
  if (runtime === "python") {
    const toolchain =
      (options.toolchain as string | undefined) ??
      (exists(file("uv.lock")) ? "uv" : exists(file("poetry.lock")) ? "poetry" : "pip");
    const lock = { uv: "uv.lock", poetry: "poetry.lock" }[toolchain];
    if (!lock)
      return [
        `${at}: ${rel}/Pulumi.yaml runs Python with toolchain "${toolchain}", which upgrades pip, setuptools and wheel to their newest on every install; allowed: toolchain uv (with uv.lock) or poetry (with poetry.lock)`,
      ];
    if (!exists(file(lock)))
      return [`${at}: ${rel} has no ${lock}; commit the lock file (${toolchain} lock in ${rel})`];
    return [];
  }
  if (runtime === "go" && !(exists(file("go.mod")) && exists(file("go.sum"))))
    return [
      `${at}: ${rel} needs go.mod and go.sum, so the modules \`pulumi install\` fetches are the pinned ones`,
    ];
  return [];
}

/** Problems with each program's folder and Pulumi project, and the programs resolved when there are none. */
export function programProblems(
  p: ParsedPipeline,
  repoRoot = defaultRepoRoot,
): { problems: string[]; programs: Program[] } {
  const problems: string[] = [];
  const names = new Map<string, number>();
  for (const x of p.programs) names.set(x.name, (names.get(x.name) ?? 0) + 1);
  for (const [name, count] of names)
    if (count > 1) problems.push(`programs: "${name}" is declared ${count} times; each program once`);
  for (const x of p.programs) {
    for (const d of x.dependsOn) {
      if (d === x.name)
        problems.push(
          `programs.${x.name}.dependsOn: lists the program itself; allowed: the other programs to update first in each environment (${[...names.keys()].filter((n) => n !== x.name).join(", ") || "none"})`,
        );
      else if (!names.has(d))
        problems.push(
          `programs.${x.name}.dependsOn: "${d}" is not a program; programs: ${[...names.keys()].join(", ")}`,
        );
    }
    const twice = [...new Set(x.dependsOn.filter((d, i) => x.dependsOn.indexOf(d) !== i))];
    for (const d of twice) problems.push(`programs.${x.name}.dependsOn: lists "${d}" more than once`);
  }
  if (problems.length === 0) {
    const cycle = findProgramCycle(p.programs);
    if (cycle)
      problems.push(
        `programs: ${cycle.map((n) => `"${n}"`).join(" -> ")} depend on each other in a cycle; allowed: dependencies that end`,
      );
  }

  const root = fs.realpathSync(repoRoot);
  const resolved: Program[] = [];
  const byProject = new Map<string, string>();
  const folders: { name: string; real: string }[] = [];
  for (const x of p.programs) {
    const at = `programs.${x.name}.dir`;
    const found = programFolder(x, root, repoRoot);
    if (typeof found === "string") {
      problems.push(`${at}: ${found}`);
      continue;
    }
    const clash = folders.find((f) => inside(f.real, found.real) || inside(found.real, f.real));
    if (clash) {
      problems.push(
        `${at}: "${x.dir}" overlaps program "${clash.name}"'s folder; each program needs a folder of its own`,
      );
      continue;
    }
    folders.push({ name: x.name, real: found.real });
    const rel = normalDir(x.dir);
    let project: ProjectFile;
    try {
      project = (YAML.parse(fs.readFileSync(path.join(found.real, "Pulumi.yaml"), "utf8")) ??
        {}) as ProjectFile;
    } catch (err) {
      problems.push(`${at}: ${rel}/Pulumi.yaml is not valid YAML (${(err as Error).message.split("\n")[0]})`);
      continue;
    }
    const runtime = runtimeOf(project);
    if (typeof project.name !== "string" || !/^[A-Za-z0-9_.-]+$/.test(project.name) || !runtime.name) {
      problems.push(
        `${at}: ${rel}/Pulumi.yaml must name its project (name: letters, digits, "_", ".", "-") and its runtime`,
      );
      continue;
    }
    const other = byProject.get(project.name);
    if (other !== undefined)
      problems.push(
        `${at}: its Pulumi project "${project.name}" is also program "${other}"'s; each program needs a project of its own (its stacks are <organization>/<project>/<stack>)`,
      );
    byProject.set(project.name, x.name);
    const image = x.workspaceImage ?? WORKSPACE_IMAGES[runtime.name];
    if (!image) {
      problems.push(
        `programs.${x.name}.workspaceImage: runtime "${runtime.name}" (${rel}/Pulumi.yaml) has no default workspace image; set one that holds its toolchain and runs as uid 1000 (runtimes with a default: ${Object.keys(WORKSPACE_IMAGES).join(", ")})`,
      );
      continue;
    }
    if (x.workspaceImage)
      problems.push(...workspaceImageProblems(x.workspaceImage, `programs.${x.name}.workspaceImage`));
    problems.push(...lockProblems(at, found.real, rel, runtime.name, runtime.options));
    resolved.push(
      resolveProgram(p, x, project.name, runtime.name, image, programPlugins(found.real, runtime.name)),
    );
  }
  return { problems, programs: resolved };
}

function resolveProgram(
  p: ParsedPipeline,
  x: ProgramDeclaration,
  project: string,
  runtime: string,
  image: string,
  plugins: Program["plugins"],
): Program {
  return {
    ...x,
    dir: normalDir(x.dir),
    project,
    runtime,
    workspaceImage: image,
    resources: x.resources ?? p.stacks.workspaceResources,
    plugins,
  };
}

/** A program's folder: a real folder of its own in the repository, holding a Pulumi.yaml. */
function programFolder(x: ProgramDeclaration, root: string, repoRoot: string): { real: string } | string {
  const relative = relativeDirProblem(x.dir);
  if (relative) return relative;
  const dir = normalDir(x.dir);
  if (dir === ".")
    return `"${x.dir}" is the repository root, where every commit would become Freight; allowed: a folder of its own, such as "programs/${x.name}"`;
  const real = realLocation(path.join(repoRoot, dir));
  if (real === undefined)
    return `"${x.dir}" goes through a broken or looping symlink; allowed: a real folder of the repository`;
  if (real === root)
    return `"${x.dir}" resolves to the repository root (through a symlink), where every commit would become Freight; allowed: a folder of its own, such as "programs/${x.name}"`;
  if (!inside(root, real))
    return `"${x.dir}" resolves to ${real}, outside the repository (through a symlink)`;
  const top = path.relative(root, real).split(path.sep)[0];
  if ((RESERVED_FOLDERS as readonly string[]).includes(top!))
    return `"${x.dir}" is in the platform's ${top}/ folder; allowed: a folder of its own, such as "programs/${x.name}"`;
  if (!fs.statSync(real, { throwIfNoEntry: false })?.isDirectory())
    return `"${x.dir}" does not exist; allowed: the folder holding the program's Pulumi.yaml`;
  if (!exists(path.join(real, "Pulumi.yaml")))
    return `"${x.dir}" holds no Pulumi.yaml; allowed: the folder holding the program's Pulumi.yaml`;
  return { real };
}
