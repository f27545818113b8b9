// The Go modules of the harness: test/go.mod and each module nested under test/ (a folder with its own go.mod,
// for upstream code whose pins test/go.mod cannot hold beside the others: test/go-harness.ts says which).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const root = path.resolve(__dirname, "..");

function nested(dir: string): string[] {
  return fs
    .readdirSync(path.join(root, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory() && !["node_modules", "testdata"].includes(e.name))
    .flatMap((e) => {
      const sub = `${dir}/${e.name}`;
      return fs.existsSync(path.join(root, sub, "go.mod")) ? [sub, ...nested(sub)] : nested(sub);
    });
}

/** Folders relative to the repository root, test/ first. */
export const goModuleDirs = ["test", ...nested("test")];

/** Each module path go.mod requires, at the version it resolves to (a `replace` with a version wins). */
export function requirements(goMod: string): Map<string, string> {
  const found = new Map<string, string>();
  const replaced = new Map<string, string>();
  let block: "require" | "replace" | undefined;
  for (const raw of goMod.split("\n")) {
    const line = raw.replace(/\/\/.*$/, "").trim();
    if (line === ")") block = undefined;
    else if (/^(require|replace) \($/.test(line)) block = line.startsWith("require") ? "require" : "replace";
    else {
      const one = /^(require|replace) (.+)$/.exec(line);
      const kind = one ? (one[1] as "require" | "replace") : block;
      const body = one ? one[2]! : line;
      const replace = /^(\S+)(?: \S+)? => (\S+) (\S+)$/.exec(body);
      const require = /^(\S+) (v\S+)$/.exec(body);
      if (kind === "replace" && replace) replaced.set(replace[1]!, replace[3]!);
      else if (kind === "require" && require) found.set(require[1]!, require[2]!);
    }
  }
  for (const [p, v] of replaced) if (found.has(p)) found.set(p, v);
  return found;
}

/**
 * The modules in two chains that run beside each other, each module after the one before it in its chain:
 * test/go.mod, whose tests run longest, alone and at once; the nested modules one after another beside it, first
 * those that do not build the Kubernetes client, then those that do, so that by then test/go.mod has built it
 * (Go's build cache shares only finished work: two `go test`s at once would each compile it). Two at a time
 * also bounds the compiles and test binaries running at once, and so the memory they hold.
 */
export function buildChains(dirs: string[] = goModuleDirs): string[][] {
  const client = (dir: string) =>
    requirements(fs.readFileSync(path.join(root, dir, "go.mod"), "utf8")).has("k8s.io/client-go");
  const nested = dirs.filter((d) => d !== "test");
  const beside = [...nested.filter((d) => !client(d)), ...nested.filter(client)];
  return [dirs.filter((d) => d === "test"), beside].filter((chain) => chain.length > 0);
}

/**
 * How the harness compiles: `go test` (test/go-harness.ts) and the build `npm test` starts beside the other
 * checks (test/suite.ts), which must agree for Go to reuse one's work in the other. Measured cold on two cores
 * over the Kubernetes client, 36% less CPU than Go's defaults, each compile holding up to 0.95 GB:
 * - GOGC=off with GOMEMLIMIT: the compiler collects garbage only near 1.5 GiB, which most packages never reach;
 * - `-gcflags=all=-l`: no inlining. What the code does is the same; it runs somewhat slower, and running is a
 *   small part of a first run beside compiling. In GOFLAGS, added to what `go env GOFLAGS` holds, so that the
 *   API server build inside the tests (test/internal/apiserver) inherits it.
 * A variable the user sets wins. The test binaries run without the two memory settings (`testBinaryExec`), which
 * would let each one's heap grow to GOMEMLIMIT before it collected once.
 */
export function goCompileEnv(): NodeJS.ProcessEnv {
  if (configuredGoFlags === undefined) {
    const configured = spawnSync("go", ["env", "GOFLAGS"], {
      cwd: path.join(root, "test"),
      encoding: "utf8",
    });
    configuredGoFlags = configured.stdout?.trim() ?? "";
  }
  const goFlags = [configuredGoFlags, "-gcflags=all=-l"].filter(Boolean).join(" ");
  return { GOGC: "off", GOMEMLIMIT: "1536MiB", ...process.env, GOFLAGS: goFlags };
}
let configuredGoFlags: string | undefined;

/** `go test -exec`: each test binary without the compiler's memory settings. */
export const testBinaryExec = "env -u GOGC -u GOMEMLIMIT";
