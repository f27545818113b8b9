// `npm run test:engines`: the Go harness (test/go.mod), the upstream engines at the versions we pin, run over
// the offline plan. Writes the plan once for every package, then `go test ./...`; with no Go, or one older
// than test/go.mod names, it fails and says which Go to install. It never skips silently: every skipped Go
// test is listed with its reason.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { buildChains, goCompileEnv, goModuleDirs, testBinaryExec } from "./go-modules";

const root = path.resolve(__dirname, "..");
const testDir = path.join(root, "test");
const wanted = /^go (\d+)\.(\d+)/m.exec(fs.readFileSync(path.join(testDir, "go.mod"), "utf8"))!;
const need = `Go ${wanted[1]}.${wanted[2]} or newer`;

function fail(message: string): never {
  console.error(`test:engines: ${message}`);
  process.exit(1);
}

// In test/, so that a Go 1.21+ older than go.mod names switches to that toolchain (GOTOOLCHAIN=auto).
const version = spawnSync("go", ["env", "GOVERSION"], { cwd: testDir, encoding: "utf8" });
if (version.error || version.status !== 0) {
  fail(`no Go toolchain on PATH; the harness needs ${need} (test/go.mod): install it and run again`);
}
const [major, minor] = /go(\d+)\.(\d+)/.exec(version.stdout)?.slice(1).map(Number) ?? [0, 0];
if (major! < Number(wanted[1]) || (major === Number(wanted[1]) && minor! < Number(wanted[2]))) {
  fail(`found ${version.stdout.trim()}, the harness needs ${need} (test/go.mod)`);
}

interface TestEvent {
  Action: string;
  Package?: string;
  ImportPath?: string;
  Test?: string;
  Output?: string;
}

/**
 * Prints `go test` as it reads without -v (each package's closing line, each failing test's output), plus
 * every skipped test with its reason: a scenario this machine cannot run is said, never passed over.
 */
function report(stream: string) {
  const outputs = new Map<string, string[]>();
  const skipped: string[] = [];
  for (const line of stream.split("\n")) {
    if (!line.startsWith("{")) {
      if (line) console.log(line);
      continue;
    }
    const event = JSON.parse(line) as TestEvent;
    const key = `${event.Package ?? event.ImportPath} ${event.Test ?? ""}`;
    if (event.Action === "output" || event.Action === "build-output") {
      if (event.Test) outputs.set(key, [...(outputs.get(key) ?? []), event.Output ?? ""]);
      else if (event.Output && !/^(PASS|FAIL|=== |--- )/.test(event.Output))
        process.stdout.write(event.Output);
      else if (event.Output === "FAIL\n") process.stdout.write(event.Output);
    } else if (event.Action === "fail" && event.Test) {
      process.stdout.write((outputs.get(key) ?? []).filter((o) => !o.startsWith("=== ")).join(""));
    } else if (event.Action === "skip" && event.Test) {
      const reason = (outputs.get(key) ?? [])
        .filter((o) => !/^\s*(=== |--- SKIP)/.test(o))
        .map((o) => o.trim())
        .join(" ");
      skipped.push(`${event.Package?.replace(/^[^/]+\//, "")} ${event.Test}: ${reason}`);
    }
  }
  if (skipped.length) {
    console.log(`\n${skipped.length} Go test(s) skipped on this machine:`);
    for (const s of skipped) console.log(`  SKIPPED ${s}`);
  }
}

const planDir = fs.mkdtempSync(path.join(os.tmpdir(), "engines-plan-"));
async function main() {
  const plan = spawnSync(process.execPath, ["--import", "tsx", "lib/cli/plan.ts", "--out", planDir], {
    cwd: root,
    encoding: "utf8",
  });
  if (plan.status !== 0) fail(`the offline plan failed:\n${plan.stderr}${plan.stdout}`);
  // -count=1: the engines read the TypeScript side through subprocesses, which Go's test cache cannot see.
  // -timeout=0: no time limit. The first run builds kube-apiserver from source inside the tests
  // (test/internal/apiserver), which takes as long as a busy machine makes it; any fixed limit (go test's default
  // 10 minutes, our 30) fails it on a loaded machine. A hung run is stopped by CI's job limit.
  // Four modules: test/go.mod; test/argocdnotify/go.mod (Argo CD's notifications at the engine Argo CD
  // pins, which test/go.mod cannot hold beside the one Argo Rollouts pins); test/argoevents/go.mod (Argo
  // Events v1.9.10, whose notifications-engine pin differs again); test/pulumiengine/go.mod
  // (Pulumi's deployment engine, with the cloud SDK the Pulumi CLI pins). A package path under
  // ./<module>/ runs in that module. test/go.mod runs beside the nested modules, which run one after another
  // (buildChains): while one `go test` waits on its slowest package, the other's builds fill the idle core.
  // Each module's report is printed as it ends.
  const nested = goModuleDirs
    .filter((d) => d !== "test")
    .map((d) => path.relative(testDir, path.join(root, d)));
  const given = process.argv.slice(2);
  const own = nested.find((m) => given[0]?.replace(/^\.\//, "").startsWith(`${m}/`));
  const chains: { dir: string; targets: string[] }[][] =
    given.length === 0
      ? buildChains().map((chain) =>
          chain.map((d) => ({ dir: path.join(root, d), targets: [...longestFirst(d), "./..."] })),
        )
      : own
        ? [[{ dir: path.join(testDir, own), targets: ["./...", ...given.slice(1)] }]]
        : [[{ dir: testDir, targets: given }]];
  // The nested modules' chain at a lower priority: test/go.mod's `test/kube` (kube-apiserver's build, then the
  // largest pipeline) decides when a first run ends, and the nested modules take the CPU it leaves.
  await Promise.all(
    chains.map(async (chain, i) => {
      for (const run of chain) await goTest(run, i === 0 ? 0 : 10);
    }),
  );
}

// The packages whose tests run longest (each starts an API server and drives it for minutes), named first: go
// test builds and starts packages in the order it is given them, and one of these started last runs alone at the
// end while the other core idles.
const longRunning = ["kube", "promotion", "analysis"];
function longestFirst(moduleDir: string): string[] {
  return longRunning.filter((p) => fs.existsSync(path.join(root, moduleDir, p))).map((p) => `./${p}`);
}

function goTest({ dir, targets }: { dir: string; targets: string[] }, niceness = 0): Promise<void> {
  return new Promise<void>((resolve) => {
    // -ldflags=-w: test binaries without DWARF (stack traces keep their file and line), which links them in
    // 40% less CPU on a first run.
    // -exec and the environment: compiled as goCompileEnv says, each test binary run without its memory settings.
    const args = [
      "test",
      "-json",
      "-count=1",
      "-timeout=0",
      // go test's vet first analyses every package the tests import: from an empty build cache, test/argoevents
      // took 62 s of CPU with it, 5 without. `go vet ./...` in a module runs it when you change the harness's Go.
      "-vet=off",
      "-ldflags=-w",
      "-exec",
      testBinaryExec,
      ...targets,
    ];
    const [command, commandArgs] =
      niceness > 0 ? ["nice", ["-n", String(niceness), "go", ...args]] : ["go", args];
    const child = spawn(command, commandArgs, {
      cwd: dir,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...goCompileEnv(), PLAN_DIR: planDir, NODE: process.execPath },
    });
    const out: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.on("error", (err) => {
      console.error(`test:engines: go test in ${path.relative(root, dir)}: ${err.message}`);
      process.exitCode = 1;
      resolve();
    });
    child.on("close", (status) => {
      report(Buffer.concat(out).toString("utf8"));
      if (status !== 0) process.exitCode = status ?? 1;
      resolve();
    });
  });
}

main()
  .catch((err: unknown) => fail(String(err)))
  .finally(() => fs.rmSync(planDir, { recursive: true, force: true }));
