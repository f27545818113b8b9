// The Go harness's modules build their shared libraries once. A module nested for one upstream's pins
// (test/go-modules.ts) that also holds the libraries test/go.mod holds at other versions makes Go build the
// whole Kubernetes client, gRPC and the rest a second time on a first run (minutes on two cores: README,
// "Prerequisites"). test/argocdnotify differs from test/go.mod only where Argo CD's pins matter.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";
import { buildChains, requirements } from "./go-modules";

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

  it("run one after another where they build the same Kubernetes client, nested modules first", () => {
    const chains = buildChains();
    const client = (dir: string) => read(dir).get("k8s.io/client-go");
    // Each module in exactly one chain; in a chain, one client; across chains, different clients or none.
    expect(chains.flat().sort()).toEqual(
      fs
        .readdirSync(path.join(repoRoot, "test"), { recursive: true, encoding: "utf8" })
        .filter((f) => path.basename(f) === "go.mod" && !f.split(path.sep).includes("node_modules"))
        .map((f) =>
          path
            .join("test", path.dirname(f))
            .replace(/\/(\.)?$/, "")
            .replace(/\\/g, "/"),
        )
        .sort(),
    );
    for (const chain of chains) {
      expect(new Set(chain.map(client)).size).toBe(1);
      if (chain.includes("test")) expect(chain.at(-1)).toBe("test");
    }
    const shared = chains.map((c) => client(c[0]!)).filter((v) => v !== undefined);
    expect(new Set(shared).size).toBe(shared.length);
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
