// expr-lang itself (the Go library Argo Rollouts and Kargo evaluate expressions with), built once from
// test/expr/main.go and run once per test file over all its cases.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe } from "vitest";
import { repoRoot } from "../lib/plan/projects";

/** Where Debian's golang-github-antonmedv-expr-dev puts the library (a GOPATH); override with EXPR_GOPATH. */
const gopath = process.env.EXPR_GOPATH ?? "/usr/share/gocode";
const source = path.join(repoRoot, "test", "expr", "main.go");

export type ExprCase =
  | { kind: "condition"; expression: string; body: unknown }
  | { kind: "expr" | "template"; expression: string; env: Record<string, unknown> };
export type Verdict = { value?: unknown; error?: string };

function build(): { binary?: string; missing?: string } {
  if (spawnSync("go", ["version"]).error) return { missing: "no Go toolchain (`go`) on PATH" };
  if (!fs.existsSync(path.join(gopath, "src", "github.com", "antonmedv", "expr", "expr.go")))
    return { missing: `expr-lang's Go source is not in ${gopath}/src/github.com/antonmedv/expr` };
  const hash = createHash("sha256").update(fs.readFileSync(source)).digest("hex").slice(0, 12);
  const cache = path.join(repoRoot, "node_modules", ".cache", "expr-eval");
  const binary = path.join(cache, `expr-${hash}`);
  if (!fs.existsSync(binary)) {
    fs.mkdirSync(cache, { recursive: true });
    // Test files build in parallel workers: each builds its own file and renames it into place.
    const built = `${binary}.${process.pid}`;
    execFileSync("go", ["build", "-o", built, "."], {
      cwd: path.dirname(source),
      env: {
        ...process.env,
        GO111MODULE: "off",
        GOPATH: gopath,
        GOCACHE: path.join(cache, "go-build"),
        GOFLAGS: "",
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    fs.renameSync(built, binary);
  }
  return { binary };
}

const { binary, missing } = build();
if (missing) {
  const how =
    "install them with `apt-get install golang-go golang-github-antonmedv-expr-dev` (what .ci/run does)";
  if (process.env.CI)
    throw new Error(`CI must evaluate the expressions with expr-lang, but ${missing}; ${how}`);
  console.warn(`SKIPPED the expr-lang tests: ${missing}; ${how}`);
}

/** `describe` that runs only where expr-lang can be built. */
export const describeWithExpr = describe.skipIf(!binary);

/** Evaluates every case in one process; verdicts come back in the same order. */
export function evaluateAll(cases: ExprCase[]): Verdict[] {
  const out = execFileSync(binary!, { input: JSON.stringify({ cases }), maxBuffer: 64 << 20 });
  return JSON.parse(out.toString()) as Verdict[];
}
