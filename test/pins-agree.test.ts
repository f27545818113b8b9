// Pins that must agree, agree: a component's chart, the Go module the harness runs, the tag its CRDs and chart
// values are read at, the CRDs folder's record of what it holds, and the figures the documentation states are
// one version. An upgrade pull request that moves one of them alone fails here, naming both sides.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { argoCdChart } from "../cluster-setup/addons/argoCd";
import { argoEvents, argoEventsVersion } from "../cluster-setup/addons/argoEvents";
import { argoRollouts } from "../cluster-setup/addons/argoRollouts";
import { certManager } from "../cluster-setup/addons/certManager";
import { pulumiOperator } from "../cluster-setup/addons/pulumiOperator";
import { kargoChart } from "../kargo/kargoInstall";
import { findCrdsDir } from "../lib/crds/schema";
import { pinned } from "../lib/crds/sources";
import { repositoryFiles, repositoryPins, root } from "./pins-support";

/** One place a version is stated, and the version it states (without a leading "v"). */
export interface Side {
  where: string;
  version: string;
}

interface Component {
  name: string;
  /** Sides that state the chart's own version. */
  chart: Side[];
  /** Sides that state the version of the software the chart runs (its appVersion). */
  app: Side[];
  /** How the documentation names this software's version: group 1 is the figure. */
  docs: RegExp;
  /** The row of the CRDs folder's VERSIONS.md table. */
  versionsRow: string;
}

const bare = (v: string) => v.replace(/^v/, "");
const side = (where: string, version: string): Side => ({ where, version: bare(version) });

const goModule = (module: string): Side[] =>
  repositoryPins(repositoryFiles())
    .filter((p) => p.file.endsWith("go.mod") && p.kind === "go module" && p.name === module)
    .map((p) => side(`${p.file} ${module}`, p.value));

const chartSide = (file: string, spec: { chart: string; version: string }) =>
  side(`${file} chart ${spec.chart}`, spec.version);
const sourcesSide = (key: keyof typeof pinned) =>
  side(`lib/crds/sources.ts pinned.${key}`, pinned[key].replace(/^argo-(cd|rollouts)-/, ""));

function components(): Component[] {
  const kargo = chartSide("kargo/kargoInstall.ts", kargoChart);
  const pko = chartSide("cluster-setup/addons/pulumiOperator.ts", pulumiOperator);
  const pkoImage = (pulumiOperator.values as { image?: { tag?: string } } | undefined)?.image?.tag;
  const cert = chartSide("cluster-setup/addons/certManager.ts", certManager);
  return [
    {
      // Kargo's chart is released at the application's version (VERSIONS.md: release.yaml strips the "v").
      name: "Kargo",
      chart: [kargo],
      app: [kargo, sourcesSide("kargo"), ...goModule("github.com/akuity/kargo")],
      docs: /\bkargo v(\d+\.\d+\.\d+)\b/gi,
      versionsRow: "Kargo",
    },
    {
      name: "Pulumi Kubernetes Operator",
      chart: [pko],
      app: [
        pko,
        ...(pkoImage ? [side("cluster-setup/addons/pulumiOperator.ts image tag", pkoImage)] : []),
        sourcesSide("pko"),
        ...goModule("github.com/pulumi/pulumi-kubernetes-operator/v2"),
      ],
      docs: /\b(?:PKO|pulumi-kubernetes-operator) v(\d+\.\d+\.\d+)\b/g,
      versionsRow: "Pulumi Kubernetes Operator",
    },
    {
      name: "Argo CD",
      chart: [chartSide("cluster-setup/addons/argoCd.ts", argoCdChart), sourcesSide("argoCdChart")],
      app: [sourcesSide("argocd"), ...goModule("github.com/argoproj/argo-cd/v3")],
      docs: /\bArgo CD v?(\d+\.\d+(?:\.\d+)?)\b/g,
      versionsRow: "Argo CD",
    },
    {
      name: "Argo Rollouts",
      chart: [
        chartSide("cluster-setup/addons/argoRollouts.ts", argoRollouts),
        sourcesSide("argoRolloutsChart"),
      ],
      app: [sourcesSide("rollouts"), ...goModule("github.com/argoproj/argo-rollouts")],
      docs: /\bArgo Rollouts v?(\d+\.\d+(?:\.\d+)?)\b/g,
      versionsRow: "Argo Rollouts",
    },
    {
      // Its CRDs come from its Go module, not ../shared/crds: no VERSIONS.md row.
      name: "Argo Events",
      chart: [chartSide("cluster-setup/addons/argoEvents.ts", argoEvents)],
      app: [
        side("cluster-setup/addons/argoEvents.ts argoEventsVersion", argoEventsVersion),
        sourcesSide("argoEvents"),
        ...goModule("github.com/argoproj/argo-events"),
      ],
      docs: /\bArgo Events v?(\d+\.\d+(?:\.\d+)?)\b/g,
      versionsRow: "Argo Events",
    },
    {
      name: "cert-manager",
      chart: [cert],
      app: [cert, sourcesSide("certManager")],
      docs: /\bcert-manager v?(\d+\.\d+\.\d+)\b/g,
      versionsRow: "cert-manager",
    },
  ];
}

/** The documentation a reader reads: the front door, CONTRIBUTING.md and every page under docs/. */
const docFiles = () =>
  repositoryFiles().filter((f) => /^(README|CONTRIBUTING)\.md$/.test(f) || /^docs\/.+\.md$/.test(f));

/** Each figure of `pattern` in the documentation, as a side. A figure of x.y states the minor only. */
function docSides(pattern: RegExp, files = docFiles(), dir = root): Side[] {
  return files.flatMap((file) =>
    fs
      .readFileSync(path.join(dir, file), "utf8")
      .split("\n")
      .flatMap((line, i) =>
        [...line.matchAll(pattern)].map((m) => side(`${file}:${i + 1} "${m[0]}"`, m[1]!)),
      ),
  );
}

/**
 * The CRDs folder's VERSIONS.md row for a component: the chart version and appVersion of the files it holds.
 * Absent in a fork (no ../shared/crds): no sides.
 */
function versionsSides(row: string): { chart: Side[]; app: Side[] } {
  const dir = findCrdsDir(root);
  const file = dir && path.join(dir, "VERSIONS.md");
  if (!file || !fs.existsSync(file)) return { chart: [], app: [] };
  const cells = fs
    .readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.split("|").map((c) => c.trim()))
    .find((c) => c[1] === row);
  const first = (cell: string | undefined) => /v?\d+\.\d+\.\d+/.exec(cell ?? "")?.[0];
  const where = `${path.relative(root, file)} row "${row}"`;
  const chart = first(cells?.[6]);
  const app = first(cells?.[7]);
  return {
    chart: chart ? [side(`${where} chart version`, chart)] : [],
    app: app ? [side(`${where} appVersion`, app)] : [],
  };
}

/** Every side that differs from the first: "<first> says X, <other> says Y". */
export function disagreements(sides: Side[]): string[] {
  const [first, ...rest] = sides;
  if (!first) return [];
  return rest
    .filter((s) => !(s.version === first.version || first.version.startsWith(`${s.version}.`)))
    .map((s) => `${first.where} says ${first.version}, ${s.where} says ${s.version}`);
}

describe("pins that must agree", () => {
  for (const component of components()) {
    it(`${component.name}: chart, Go module, CRD source, CRDs folder and documentation state one version`, () => {
      const versions = versionsSides(component.versionsRow);
      const problems = [
        ...disagreements([...component.chart, ...versions.chart]),
        ...disagreements([...component.app, ...versions.app, ...docSides(component.docs)]),
      ];
      expect(problems, `${component.name}: one version everywhere`).toEqual([]);
    });
  }

  // Renovate bumps each in all three files at once; a hand edit of one, or a new file, must not slip by.
  it("the cluster's EKS version and each EKS add-on build: Pulumi.yaml, the example stack and config.ts state one version", () => {
    const cluster = repositoryPins(repositoryFiles()).filter(
      (p) => p.kind === "kubernetes" || p.kind === "EKS add-on",
    );
    const names = [...new Set(cluster.map((p) => p.name))];
    expect(names).toEqual(
      expect.arrayContaining(["EKS Kubernetes version", "aws-ebs-csi-driver", "snapshot-controller"]),
    );
    for (const name of names) {
      const own = cluster.filter((p) => p.name === name);
      expect(own.map((p) => p.file).sort(), name).toEqual([
        "cluster/Pulumi.example.yaml",
        "cluster/Pulumi.yaml",
        "cluster/config.ts",
      ]);
      expect(disagreements(own.map((p) => side(`${p.file} ${name}`, p.value))), name).toEqual([]);
    }
  });

  it("a figure of another version, or a pin moved alone, is named with both sides", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pins-agree-"));
    fs.writeFileSync(
      path.join(dir, "page.md"),
      "Intro.\nRuns Argo Rollouts v1.9.0 and Argo Rollouts 1.9 here.\n",
    );
    const sides = docSides(/\bArgo Rollouts v?(\d+\.\d+(?:\.\d+)?)\b/g, ["page.md"], dir);
    fs.rmSync(dir, { recursive: true });
    expect(disagreements([side("test/go.mod m", "v1.10.2"), ...sides])).toEqual([
      'test/go.mod m says 1.10.2, page.md:2 "Argo Rollouts v1.9.0" says 1.9.0',
      'test/go.mod m says 1.10.2, page.md:2 "Argo Rollouts 1.9" says 1.9',
    ]);
    // A minor-only figure agrees with every patch of that minor, and with nothing else.
    expect(disagreements([side("a", "3.4.4"), side("b", "3.4"), side("c", "v3.4.4")])).toEqual([]);
    expect(disagreements([side("a", "3.5.0"), side("b", "3.4")])).toEqual(["a says 3.5.0, b says 3.4"]);
    expect(disagreements([side("a", "3.40.0"), side("b", "3.4")])).toEqual(["a says 3.40.0, b says 3.4"]);
  });
});
