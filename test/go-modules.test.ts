// The Go harness's modules build their shared libraries once. A module nested for one upstream's pins
// (test/go-modules.ts) that also holds the libraries test/go.mod holds at other versions makes Go build the
// whole Kubernetes client, gRPC and the rest a second time on a first run (minutes on two cores: README,
// "Prerequisites"). test/argocdnotify differs from test/go.mod only where Argo CD's pins matter.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";

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

const read = (dir: string) => requirements(fs.readFileSync(path.join(repoRoot, dir, "go.mod"), "utf8"));

describe("the Go harness's modules", () => {
  it("hold test/argocdnotify to test/go.mod's versions, but for Argo CD's notifications engine and its templates' libraries", () => {
    const parent = read("test");
    const own = read("test/argocdnotify");
    // Argo CD v3.4.4's pins, which are what test/argocdnotify runs (its go.mod says why).
    const argoCdPins = [
      "github.com/argoproj/notifications-engine",
      "github.com/Masterminds/semver/v3",
      "dario.cat/mergo",
      "github.com/spf13/cast",
    ];
    const differing = [...own]
      .filter(([p, v]) => parent.has(p) && parent.get(p) !== v && !argoCdPins.includes(p))
      .map(([p, v]) => `${p} ${v}, test/go.mod ${parent.get(p)}`);
    expect(differing).toEqual([]);
    // And the engine itself is not the one Argo Rollouts pins: the module exists for that difference.
    expect(own.get(argoCdPins[0]!)).not.toBe(parent.get(argoCdPins[0]!));
  });

  it("reads a go.mod's requirements and replacements", () => {
    const mod = [
      "module m",
      "require a.example/x v1.0.0",
      "require (",
      "\tb.example/y v0.2.0 // indirect",
      ")",
      "replace b.example/y => b.example/y v0.3.0",
      "replace (",
      "\tc.example/z => ../z",
      ")",
    ].join("\n");
    expect([...requirements(mod)]).toEqual([
      ["a.example/x", "v1.0.0"],
      ["b.example/y", "v0.3.0"],
    ]);
  });
});
