// Throwaway repository checkouts on disk for the pipeline tests (re-exported by pipeline-support.ts) and
// for test/generated-forks.ts: the definition's own programs copied from this repository, or made-up programs
// written there. No test runner here, so a harness script run outside vitest can make a fork's checkout too.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pipeline as base } from "../kargo/pipeline";
import { defaultRepoRoot } from "../lib/pipeline/check-repository";
import type { PipelineInput } from "../lib/pipeline/schema";

export const tempDirs: string[] = [];
export const tempDir = (prefix: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
};
/** For afterEach: removes the folders tempDir made. */
export const removeTempDirs = () => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
};

/** What each environment's stack config holds in a throwaway checkout. */
export const stackConfigText = "config:\n  aws:region: us-west-2\n";
/** The platform's own projects, each a folder with a Pulumi.yaml, as in this repository. */
export const platformProjects = ["cluster", "cluster-setup", "kargo"] as const;
/** Files of a program's folder that lock its dependencies, copied with its Pulumi.yaml when it has them. */
const dependencyFiles = [
  "package.json",
  "package-lock.json",
  "yarn.lock",
  "pnpm-lock.yaml",
  "bun.lock",
  "pyproject.toml",
  "uv.lock",
  "poetry.lock",
  "go.mod",
  "go.sum",
];

/** A fresh checkout folder with the platform's project folders, and nothing else. */
export function emptyRepo(at?: string): string {
  const root = at ?? tempDir("pipeline-repo-");
  fs.mkdirSync(root, { recursive: true });
  for (const project of platformProjects) {
    fs.mkdirSync(path.join(root, project));
    fs.writeFileSync(path.join(root, project, "Pulumi.yaml"), `name: ${project}\nruntime: nodejs\n`);
  }
  return root;
}

/** Writes one Pulumi.<stack>.yaml per environment into a program's folder. */
export function writeStackConfigs(
  root: string,
  dir: string,
  environments: PipelineInput["environments"],
): void {
  for (const env of Object.values(environments))
    fs.writeFileSync(path.join(root, dir, `Pulumi.${env.pulumiStack}.yaml`), stackConfigText);
}

/**
 * A repository checkout with the platform's project folders and the definition's programs as kargo/pipeline.ts
 * declares them: each folder with the Pulumi.yaml and the lock files of this repository's folder, and a
 * Pulumi.<stack>.yaml for each of `environments`.
 */
export function tempRepo(
  at?: string,
  environments: PipelineInput["environments"] = base.environments,
): string {
  const root = emptyRepo(at);
  for (const x of base.programs) {
    fs.mkdirSync(path.join(root, x.dir), { recursive: true });
    for (const file of ["Pulumi.yaml", ...dependencyFiles]) {
      const source = path.join(defaultRepoRoot, x.dir, file);
      if (fs.existsSync(source)) fs.copyFileSync(source, path.join(root, x.dir, file));
    }
    writeStackConfigs(root, x.dir, environments);
  }
  return root;
}

/** A made-up program on disk: its folder, Pulumi project and runtime, and any other files. */
export interface ProgramFiles {
  dir: string;
  project: string;
  /** Pulumi.yaml's `runtime`, as YAML: `yaml`, or `{ name: python, options: { toolchain: uv } }`. */
  runtime?: string;
  files?: Record<string, string>;
}

/**
 * A repository checkout holding made-up programs (a stack config for each of `environments`) and the
 * platform's project folders.
 */
export function programsRepo(programs: ProgramFiles[], environments: PipelineInput["environments"]): string {
  const root = emptyRepo();
  for (const x of programs) writeProgram(root, x, environments);
  return root;
}

export function writeProgram(
  root: string,
  x: ProgramFiles,
  environments: PipelineInput["environments"],
): void {
  fs.mkdirSync(path.join(root, x.dir), { recursive: true });
  fs.writeFileSync(
    path.join(root, x.dir, "Pulumi.yaml"),
    `name: ${x.project}\nruntime: ${x.runtime ?? "yaml"}\n`,
  );
  for (const [file, text] of Object.entries(x.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(root, x.dir, file)), { recursive: true });
    fs.writeFileSync(path.join(root, x.dir, file), text);
  }
  writeStackConfigs(root, x.dir, environments);
}

export const packageJson = JSON.stringify({ name: "zz", dependencies: { "@pulumi/pulumi": "3.270.0" } });
export const packageLock = (dependencies: Record<string, string>) =>
  JSON.stringify({ name: "zz", lockfileVersion: 3, packages: { "": { name: "zz", dependencies } } });
