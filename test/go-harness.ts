// `npm run test:engines`: the Go harness (test/go.mod), the upstream engines at the versions we pin, run over
// the offline plan. Writes the plan once for every package, then `go test ./...`; with no Go, or one older
// than test/go.mod names, it fails and says which Go to install. It never skips.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const root = path.resolve(__dirname, "..");
const testDir = path.join(root, "test");
const wanted = /^go (\d+)\.(\d+)/m.exec(fs.readFileSync(path.join(testDir, "go.mod"), "utf8"))!;
const need = `Go ${wanted[1]}.${wanted[2]} or newer`;

function fail(message: string): never {
  console.error(`test:engines: ${message}`);
  process.exit(1);
}

const version = spawnSync("go", ["env", "GOVERSION"], { encoding: "utf8" });
if (version.error || version.status !== 0) {
  fail(`no Go toolchain on PATH; the harness needs ${need} (test/go.mod): install it and run again`);
}
const [major, minor] = /go(\d+)\.(\d+)/.exec(version.stdout)?.slice(1).map(Number) ?? [0, 0];
if (major! < Number(wanted[1]) || (major === Number(wanted[1]) && minor! < Number(wanted[2]))) {
  fail(`found ${version.stdout.trim()}, the harness needs ${need} (test/go.mod)`);
}

const planDir = fs.mkdtempSync(path.join(os.tmpdir(), "engines-plan-"));
try {
  const plan = spawnSync(process.execPath, ["--import", "tsx", "lib/plan/cli.ts", "--out", planDir], {
    cwd: root,
    encoding: "utf8",
  });
  if (plan.status !== 0) fail(`the offline plan failed:\n${plan.stderr}${plan.stdout}`);
  // The first run builds kube-apiserver from source inside the tests (test/internal/apiserver), which can
  // outlast go test's default 10-minute limit on two busy cores.
  const args = ["test", "-timeout=30m", ...(process.argv.length > 2 ? process.argv.slice(2) : ["./..."])];
  const run = spawnSync("go", args, {
    cwd: testDir,
    stdio: "inherit",
    env: { ...process.env, PLAN_DIR: planDir },
  });
  process.exitCode = run.status ?? 1;
} finally {
  fs.rmSync(planDir, { recursive: true, force: true });
}
