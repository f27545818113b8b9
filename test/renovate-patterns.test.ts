// renovate.json5's custom managers against our files, without running Renovate (npm run test:renovate does):
// each file pattern and each match pattern finds something, every capture is a pin the repository really
// has, every pin only a custom manager can find is captured, and each platform component's pins land in one
// group, so one pull request moves them together.
import * as fs from "node:fs";
import * as path from "node:path";
import JSON5 from "json5";
import { RE2JS } from "re2js";
import { describe, expect, it } from "vitest";
import { argoCdChart } from "../cluster-setup/addons/argoCd";
import { argoEvents } from "../cluster-setup/addons/argoEvents";
import { argoRollouts } from "../cluster-setup/addons/argoRollouts";
import { certManager } from "../cluster-setup/addons/certManager";
import { pulumiOperator } from "../cluster-setup/addons/pulumiOperator";
import { kargoChart } from "../kargo/kargoInstall";
import { repositoryFiles, repositoryPins, root, type Pin } from "./pins-support";

interface CustomManager {
  description: string;
  managerFilePatterns: string[];
  matchStrings: string[];
  depNameTemplate?: string;
  packageNameTemplate?: string;
}
interface PackageRule {
  groupName?: string;
  enabled?: boolean;
  matchPackageNames?: string[];
  matchDepNames?: string[];
  matchManagers?: string[];
}
const config = JSON5.parse(fs.readFileSync(path.join(root, "renovate.json5"), "utf8")) as {
  customManagers: CustomManager[];
  packageRules: PackageRule[];
};

const files = repositoryFiles();
const pins = repositoryPins(files);
const bare = (v: string) => v.replace(/^v/, "");

/** Renovate's own reading of a "/.../" pattern (lib/util/string-match.ts); we write no globs. */
function regexOf(pattern: string): RegExp {
  const m = /^\/(.*)\/([a-z]*)$/.exec(pattern);
  if (!m) throw new Error(`"${pattern}": write managerFilePatterns as /regex/, as the others are`);
  return new RegExp(m[1]!, m[2]);
}

interface Capture {
  manager: CustomManager;
  file: string;
  depName: string;
  packageName: string;
  currentValue: string;
}

/** Every capture of every manager, with the package name Renovate looks it up by. */
function captures(manager: CustomManager): { byPattern: Map<string, Capture[]>; files: string[] } {
  const matched = files.filter((f) => manager.managerFilePatterns.some((p) => regexOf(p).test(f)));
  const byPattern = new Map<string, Capture[]>();
  for (const pattern of manager.matchStrings) {
    byPattern.set(
      pattern,
      matched.flatMap((file) =>
        [...fs.readFileSync(path.join(root, file), "utf8").matchAll(new RegExp(pattern, "g"))].map((m) => {
          const depName = m.groups?.depName ?? manager.depNameTemplate ?? "";
          return {
            manager,
            file,
            depName,
            packageName: m.groups?.packageName ?? manager.packageNameTemplate ?? depName,
            currentValue: m.groups!.currentValue!,
          };
        }),
      ),
    );
  }
  return { byPattern, files: matched };
}

const all = config.customManagers.map((manager) => ({ manager, ...captures(manager) }));
const captured = all.flatMap((c) => [...c.byPattern.values()].flat());

/** The kinds of pin a built-in manager (npm, nvm, gomod, github-actions) reads; the rest need ours. */
const builtIn = new Set([
  "npm",
  "node",
  "go",
  "go module",
  "go module (replace)",
  "go module (tool)",
  "action",
]);

describe("renovate.json5 custom managers", () => {
  for (const { manager, byPattern, files: matched } of all) {
    // The promoted programs are the fork's own: a fork may have no YAML program, or one that pins no
    // provider. The next test still holds every pin they have to being captured.
    const forkOwned = manager.managerFilePatterns.every((p: string) => p.startsWith("/^programs/"));
    it(`${manager.description}: each pattern matches our files, and only pins`, () => {
      if (!forkOwned) expect(matched, "managerFilePatterns match no file of the repository").not.toEqual([]);
      for (const [pattern, caps] of byPattern) {
        // Renovate compiles matchStrings with RE2 where it has it (the hosted app does): no lookaround.
        expect(() => RE2JS.compile(pattern), `${pattern} is not valid RE2`).not.toThrow();
        if (!forkOwned)
          expect(caps.length, `${pattern} matches nothing in ${matched.join(", ")}`).toBeGreaterThan(0);
        for (const c of caps) {
          const pin = pins.find((p) => p.file === c.file && bare(p.value) === bare(c.currentValue));
          expect(
            pin,
            `${c.file}: ${pattern} captures "${c.currentValue}", which no pin of the file has`,
          ).toBeDefined();
        }
      }
    });
  }

  it("captures every pin that no built-in manager reads, as often as the file pins it", () => {
    const left = [...captured];
    const missed = pins
      .filter((p) => !builtIn.has(p.kind))
      .filter((pin) => {
        const i = left.findIndex((c) => c.file === pin.file && bare(c.currentValue) === bare(pin.value));
        return i < 0 || !left.splice(i, 1);
      })
      .map((p) => `${p.file}: ${p.kind} ${p.name} ${p.value}`);
    expect(missed).toEqual([]);
  });
});

const matchesName = (names: string[], name: string) =>
  names.some((n) => (n.startsWith("/") ? regexOf(n).test(name) : n === name));

/**
 * The group a package lands in: the first packageRule with a groupName whose names match it, matchPackageNames
 * against its packageName and matchDepNames against its depName, as Renovate compares them
 * (lib/util/package-rules/package-names.ts, dep-names.ts).
 */
function groupOf(packageName: string, depName = packageName): string | undefined {
  return config.packageRules.find(
    (r) =>
      r.groupName &&
      (r.matchPackageNames !== undefined || r.matchDepNames !== undefined) &&
      (r.matchPackageNames === undefined || matchesName(r.matchPackageNames, packageName)) &&
      (r.matchDepNames === undefined || matchesName(r.matchDepNames, depName)),
  )?.groupName;
}

describe("renovate.json5 package rules", () => {
  it("turn off no pin: a rule with enabled: false names packages, and none the repository pins", () => {
    const names = pins.map(
      (p) =>
        captured.find((c) => c.file === p.file && bare(c.currentValue) === bare(p.value))?.packageName ??
        p.name,
    );
    for (const rule of config.packageRules.filter((r) => r.enabled === false)) {
      expect(rule.matchPackageNames, `${JSON.stringify(rule)} turns off whole kinds of pins`).toBeDefined();
      const off = names.filter((n) =>
        rule.matchPackageNames!.some((m) => (m.startsWith("/") ? regexOf(m).test(n) : m === n)),
      );
      expect(off, `${JSON.stringify(rule)} turns off pins`).toEqual([]);
    }
  });
});

describe("renovate.json5 groups", () => {
  // Each component's pins: its chart (and image), the sources.ts tags its CRDs and values are read at, and
  // the Go module the harness runs.
  const components: { name: string; chart: { chart: string }; sources: string[]; goModule?: string }[] = [
    { name: "Kargo", chart: kargoChart, sources: ["kargo"], goModule: "github.com/akuity/kargo" },
    { name: "Argo CD", chart: argoCdChart, sources: ["argocd", "argoCdChart"] },
    {
      name: "Argo Rollouts",
      chart: argoRollouts,
      sources: ["rollouts", "argoRolloutsChart"],
      goModule: "github.com/argoproj/argo-rollouts",
    },
    {
      name: "Argo Events",
      chart: argoEvents,
      sources: [],
      goModule: "github.com/argoproj/argo-events",
    },
    { name: "Pulumi Kubernetes Operator", chart: pulumiOperator, sources: ["pko"] },
    { name: "cert-manager", chart: certManager, sources: ["certManager"] },
  ];
  const packageOf = (pin: Pin) =>
    pin.kind.startsWith("go module")
      ? pin.name
      : captured.find((c) => c.file === pin.file && bare(c.currentValue) === bare(pin.value))?.packageName;

  for (const component of components) {
    it(`${component.name}: chart, image, CRD source tags and Go module move in one pull request`, () => {
      const chart = component.chart.chart.replace(/^oci:\/\//, "");
      const own = pins.filter(
        (p) =>
          p.name === chart ||
          p.name === `${chart} image` ||
          (p.file === "lib/crds/sources.ts" && component.sources.includes(p.name)) ||
          (component.goModule !== undefined && p.name === component.goModule),
      );
      expect(own.length, "pins found for the component").toBeGreaterThanOrEqual(1 + component.sources.length);
      const groups = own.map((p) => `${p.file} ${p.name}: ${groupOf(packageOf(p) ?? "?") ?? "no group"}`);
      expect(new Set(own.map((p) => groupOf(packageOf(p) ?? "?"))), groups.join("\n")).toEqual(
        new Set([component.name]),
      );
    });
  }
});

describe("renovate.json5 EKS add-ons", () => {
  const addons = [...new Set(pins.filter((p) => p.kind === "EKS add-on").map((p) => p.name))];

  it("are the add-ons the cluster project pins", () => {
    expect(addons.sort()).toEqual(["aws-ebs-csi-driver", "snapshot-controller"]);
  });

  for (const addon of addons) {
    it(`${addon}: every pin of its build is looked up as that add-on and moves in one pull request`, () => {
      const own = pins.filter((p) => p.kind === "EKS add-on" && p.name === addon);
      const caps = own.map((p) =>
        captured.find((c) => c.file === p.file && bare(c.currentValue) === bare(p.value))!,
      );
      expect(caps.every(Boolean), "each pin is captured").toBe(true);
      // The aws-eks-addon datasource looks the build up by the add-on the JSON names.
      for (const c of caps) expect(JSON.parse(c.packageName), c.file).toEqual({ addonName: addon });
      const groups = caps.map((c) => groupOf(c.packageName, c.depName));
      expect(new Set(groups), groups.join(", ")).toEqual(new Set([expect.stringMatching(/ add-on$/)]));
      // An add-on's group is its own: another add-on's bump is another pull request.
      for (const other of addons.filter((a) => a !== addon)) expect(groupOf(other)).not.toBe(groups[0]);
    });
  }
});
