// `npm test`: the checks in order (typecheck, lint, vitest, Renovate's check, the Go harness), stopping at the
// first that fails, as `a && b && …` would. What waits only on the network starts beside them from the first
// second: the Go modules each module of the harness builds with, and Renovate with the Node it runs on. On
// empty caches those downloads otherwise come after the CPU-bound checks, one after another (docs/testing.md,
// "How long the suite takes"). As each Go module's downloads are in, its packages compile beside the checks
// (prebuild). A prefetch that fails says nothing: the step that needs it downloads again and reports the error
// itself.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { goCompileEnv, goModuleDirs } from "./go-modules";

const root = path.resolve(__dirname, "..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const children = new Set<ChildProcess>();

/**
 * Runs in the background with its output discarded; resolves when it ends, however it ends. In this process's
 * session, so that `nice` orders it behind the checks (Linux weighs each session's processes as one group).
 */
function background(command: string, args: string[], cwd: string, env = process.env): Promise<void> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: "ignore" });
    children.add(child);
    child.on("error", () => resolve());
    child.on("exit", () => {
      children.delete(child);
      resolve();
    });
  });
}

/** The checks `npm test` runs, in order, and the download each waits for first. */
export const suiteSteps = ["typecheck", "lint", "test:vitest", "test:renovate", "test:engines"] as const;

/** The downloads, started at once, and the Go build after them; each step that needs one waits for it. */
function prefetch(): Partial<Record<(typeof suiteSteps)[number], Promise<void>>> {
  const hasGo = spawnSync("go", ["version"], { stdio: "ignore" }).status === 0;
  // `go mod download` with no arguments fetches the modules the main module's packages (and its `tool`
  // block: kube-apiserver, etcd) need to build and test; one module after another, the network is shared. It
  // fetches GOMAXPROCS modules at a time, two on two cores, though it waits on the network: test/go.mod's took
  // 70 s at 2 and 35 s at 16.
  const downloaded = new Map<string, Promise<void>>();
  let goModules = Promise.resolve();
  if (hasGo) {
    const env = { ...process.env, GOMAXPROCS: "16" };
    for (const dir of goModuleDirs) {
      goModules = goModules.then(() => background("go", ["mod", "download"], path.join(root, dir), env));
      downloaded.set(dir, goModules);
    }
    void prebuild(downloaded);
  }
  const renovate = background(
    process.execPath,
    ["--import", "tsx", "test/renovate-check.ts", "--prefetch"],
    root,
  );
  return { "test:renovate": renovate, "test:engines": goModules };
}

/**
 * Each module's packages compiled into Go's build cache as the harness compiles them, as soon as its modules are
 * in (the next module's download goes on beside), at the lowest priority: the type-check and ESLint use one
 * core, and much of a first run's Go build fits beside them. The harness stops it as it starts (stopPrebuild),
 * finds done what is done and builds the rest itself.
 */
async function prebuild(downloaded: Map<string, Promise<void>>) {
  // Its own work folder: stopped, the Go command leaves the compiles under way no folder to finish into.
  prebuildWork = fs.mkdtempSync(path.join(os.tmpdir(), "go-prebuild-"));
  const env = { ...goCompileEnv(), GOTMPDIR: prebuildWork };
  // kube-apiserver and etcd first (test/go.mod's `tool` block): the tests that need them wait for their build.
  const lists = goModuleDirs.flatMap((dir) => [
    ...(dir === "test" ? [{ dir, packages: ["tool"] }] : []),
    { dir, packages: ["-test", "./..."] },
  ]);
  for (const { dir, packages } of lists) {
    await downloaded.get(dir);
    if (!prebuilding) return;
    const list = ["go", "list", "-export", "-deps", ...packages];
    await background("nice", ["-n", "19", ...list], path.join(root, dir), env);
  }
}

let prebuilding = true;
let prebuildWork: string | undefined;
function stopPrebuild() {
  prebuilding = false;
  stopChildren();
}

function stopChildren() {
  for (const child of children) child.kill("SIGKILL");
  if (prebuildWork) fs.rmSync(prebuildWork, { recursive: true, force: true });
}

/** A step in the foreground, asynchronous so that the downloads beside it go on from one to the next. */
function step(script: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(npm, ["run", script], { cwd: root, stdio: "inherit" });
    child.on("error", () => resolve(1));
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main() {
  const downloads = prefetch();
  for (const script of suiteSteps) {
    await downloads[script];
    if (script === "test:engines") stopPrebuild();
    const status = await step(script);
    if (status !== 0) {
      stopChildren();
      process.exit(status);
    }
  }
}

if (require.main === module) {
  process.on("SIGINT", () => {
    stopChildren();
    process.exit(130);
  });
  process.on("SIGTERM", () => {
    stopChildren();
    process.exit(143);
  });
  void main();
}
