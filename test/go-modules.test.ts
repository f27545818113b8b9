// The Go harness's modules build their shared libraries once. A module nested for one upstream's pins
// (test/go-modules.ts) that also holds the libraries test/go.mod holds at other versions makes Go build the
// whole Kubernetes client, gRPC and the rest a second time on a first run (minutes on two cores: README,
// "Prerequisites"). Each nested module differs from test/go.mod only where its upstream's own pins matter.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../lib/cli/plan/projects";
import { buildChains, requirements } from "./go-modules";

const read = (dir: string) => requirements(fs.readFileSync(path.join(repoRoot, dir, "go.mod"), "utf8"));

describe("the Go harness's modules", () => {
  // Each nested module, and the libraries of its own upstream it keeps at that upstream's versions (its go.mod
  // says why); the first is the one the module exists for.
  const ownPins: Record<string, string[]> = {
    // Argo CD v3.4.4's notifications engine and its templates' libraries.
    "test/argocdnotify": [
      "github.com/argoproj/notifications-engine",
      "github.com/Masterminds/semver/v3",
      "dario.cat/mergo",
      "github.com/spf13/cast",
    ],
    // Argo Events v1.9.10's notifications engine and the Slack client its Slack trigger sends with.
    "test/argoevents": ["github.com/argoproj/notifications-engine", "github.com/slack-go/slack"],
    // The Pulumi CLI v3.274.1's cloud SDK, whose event types the engine's events are converted to.
    "test/pulumiengine": ["github.com/pulumi/pulumi-cloud-sdk/go"],
  };

  it.each(Object.entries(ownPins))(
    "hold %s to test/go.mod's versions, but for its upstream's own pins",
    (dir, pins) => {
      const parent = read("test");
      const own = read(dir);
      const differing = [...own]
        .filter(([p, v]) => parent.has(p) && parent.get(p) !== v && !pins.includes(p))
        .map(([p, v]) => `${p} ${v}, test/go.mod ${parent.get(p)}`);
      expect(differing).toEqual([]);
      // And the first pin is not test/go.mod's: the module exists for that difference.
      expect(own.get(pins[0]!)).not.toBe(parent.get(pins[0]!));
    },
  );

  it("name every nested module above", () => {
    expect(
      buildChains()
        .flat()
        .filter((dir) => dir !== "test")
        .sort(),
    ).toEqual(Object.keys(ownPins).sort());
  });

  it("run as two chains: test/go.mod alone, the nested modules beside it, those that build its Kubernetes client last", () => {
    const chains = buildChains();
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
    expect(chains[0]).toEqual(["test"]);
    const beside = chains[1] ?? [];
    const client = read("test").get("k8s.io/client-go");
    const sharing = beside.map((dir) => read(dir).get("k8s.io/client-go") === client);
    // Once a module shares test/go.mod's client, every later one does.
    expect(sharing).toEqual([...sharing].sort((a, b) => Number(a) - Number(b)));
    expect(chains.length).toBeLessThanOrEqual(2);
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
