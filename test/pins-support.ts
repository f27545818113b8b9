// Every version the repository pins, read without Renovate's patterns: package manifests and go.mod as their
// tools read them, workflows and Pulumi projects as YAML, chart specs from the TypeScript syntax tree, and
// the rest from the modules that export them. test/renovate-check.ts compares Renovate's extract with this
// list, test/renovate-patterns.test.ts each custom manager, and test/pins-agree.test.ts the pins that must
// agree.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { parse as parseYaml } from "yaml";
import { EBS_CSI_DRIVER_VERSION, SNAPSHOT_CONTROLLER_VERSION, clusterConfigSchema } from "../cluster/config";
import { pinned } from "../lib/crds/sources";
import { NODE_AMI_RELEASE } from "../lib/nodeAmi";
import { VERIFICATION_IMAGE, WORKSPACE_IMAGES } from "../lib/pipeline/schema";

export const root = path.resolve(__dirname, "..");

/** One pinned version: where it is written, what it names, the value written there. */
export interface Pin {
  /** Repository-relative path. */
  file: string;
  /** The package, module, chart, image, action or upstream repository it pins. */
  name: string;
  /** The version (or, for an action pinned by commit, the commit). */
  value: string;
  /** What a reader should look for: "chart", "image", "action", ... */
  kind: string;
}

/** The repository's files as Renovate sees them on a branch: tracked plus new, not ignored. */
export function repositoryFiles(dir = root): string[] {
  const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  return [...new Set(out.split("\0").filter((f) => f && fs.existsSync(path.join(dir, f))))].sort();
}

const read = (file: string) => fs.readFileSync(path.join(root, file), "utf8");

function npmPins(file: string): Pin[] {
  const manifest = JSON.parse(read(file)) as Record<string, Record<string, string> | undefined>;
  return ["dependencies", "devDependencies", "optionalDependencies"].flatMap((field) =>
    Object.entries(manifest[field] ?? {}).map(([name, value]) => ({ file, name, value, kind: "npm" })),
  );
}

/**
 * go.mod: the go directive, direct requirements, replace targets, and the module of each `tool` (required as
 * indirect, but it is what the harness builds and runs: the API server, etcd). Other indirect requirements
 * move with `go mod tidy`.
 */
function goModPins(file: string): Pin[] {
  const pins: Pin[] = [];
  const indirect: { name: string; value: string }[] = [];
  const tools: string[] = [];
  let block = "";
  for (const raw of read(file).split("\n")) {
    const line = raw.replace(/\/\/.*$/, "").trim();
    if (line.endsWith("(")) block = line.slice(0, -1).trim();
    else if (line === ")") block = "";
    const go = /^go (\S+)$/.exec(line);
    if (go) pins.push({ file, name: "go", value: go[1]!, kind: "go" });
    const body = line.replace(/^(require|replace|tool)\s+/, "");
    const kind = /^(require|replace|tool)\b/.exec(line)?.[1] ?? block;
    if (kind === "require") {
      const m = /^(\S+) (v\S+)$/.exec(body);
      if (m && /\/\/\s*indirect/.test(raw)) indirect.push({ name: m[1]!, value: m[2]! });
      else if (m) pins.push({ file, name: m[1]!, value: m[2]!, kind: "go module" });
    } else if (kind === "replace") {
      const m = /=>\s*(\S+) (v\S+)$/.exec(body);
      if (m) pins.push({ file, name: m[1]!, value: m[2]!, kind: "go module (replace)" });
    } else if (kind === "tool" && /^\S+$/.test(body)) tools.push(body);
  }
  for (const tool of tools) {
    const module = indirect
      .filter((m) => `${tool}/`.startsWith(`${m.name}/`))
      .sort((a, b) => b.name.length - a.name.length)[0];
    if (module) pins.push({ file, ...module, kind: "go module (tool)" });
  }
  return pins;
}

/** Actions pinned by commit, anywhere a workflow or composite action says `uses:`; and the Pulumi CLI. */
function actionPins(file: string): Pin[] {
  const pins: Pin[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== "object") return;
    for (const [key, value] of Object.entries(node)) {
      const uses = key === "uses" && typeof value === "string" && /^([^./][^@]*)@([0-9a-f]{40})$/.exec(value);
      if (uses)
        pins.push({ file, name: uses[1]!.split("/").slice(0, 2).join("/"), value: uses[2]!, kind: "action" });
      if (key === "pulumi-version" && value !== undefined)
        pins.push({ file, name: "pulumi/pulumi", value: String(value), kind: "Pulumi CLI" });
      walk(value);
    }
  };
  walk(parseYaml(read(file)));
  return pins;
}

/** Helm chart specs written as object literals (`chart`, `version`, maybe `values.image.tag`). */
function chartPins(file: string): Pin[] {
  const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.ES2022, true);
  const pins: Pin[] = [];
  const literal = (o: ts.ObjectLiteralExpression, key: string) =>
    o.properties.find(
      (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && p.name.getText(source) === key,
    )?.initializer;
  const visit = (node: ts.Node): void => {
    if (ts.isObjectLiteralExpression(node)) {
      const chart = literal(node, "chart");
      const version = literal(node, "version");
      if (chart && version && ts.isStringLiteral(chart) && ts.isStringLiteral(version)) {
        const name = chart.text.replace(/^oci:\/\//, "");
        pins.push({ file, name, value: version.text, kind: "chart" });
        const values = literal(node, "values");
        const image = values && ts.isObjectLiteralExpression(values) ? literal(values, "image") : undefined;
        const tag = image && ts.isObjectLiteralExpression(image) ? literal(image, "tag") : undefined;
        if (tag && ts.isStringLiteral(tag))
          pins.push({ file, name: `${name} image`, value: tag.text, kind: "image" });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return pins;
}

/** Provider versions of Pulumi YAML programs (`options.version`). */
function yamlProgramPins(file: string): Pin[] {
  const project = parseYaml(read(file)) as {
    resources?: Record<string, { type?: string; options?: { version?: unknown } }>;
  };
  return Object.values(project.resources ?? {}).flatMap((r) =>
    r.options?.version === undefined
      ? []
      : [
          {
            file,
            name: `${r.type!.split(":")[0]} provider`,
            value: String(r.options.version),
            kind: "provider",
          },
        ],
  );
}

const imagePin = (file: string, image: string): Pin => {
  const at = image.lastIndexOf(":");
  return { file, name: image.slice(0, at), value: image.slice(at + 1), kind: "image" };
};

/** The cluster project's Kubernetes version and EKS add-on builds, wherever it states them. */
function clusterPins(): Pin[] {
  const project = parseYaml(read("cluster/Pulumi.yaml")) as { config: Record<string, { default?: unknown }> };
  const example = parseYaml(read("cluster/Pulumi.example.yaml")) as { config: Record<string, unknown> };
  const shape = (clusterConfigSchema as unknown as { shape: Record<string, { parse(v: unknown): unknown }> })
    .shape;
  const eks = (file: string, value: unknown): Pin => ({
    file,
    name: "EKS Kubernetes version",
    value: String(value),
    kind: "kubernetes",
  });
  const addon =
    (name: string) =>
    (file: string, value: unknown): Pin => ({
      file,
      name,
      value: String(value),
      kind: "EKS add-on",
    });
  const ebs = addon("aws-ebs-csi-driver");
  const snapshots = addon("snapshot-controller");
  return [
    eks("cluster/Pulumi.yaml", project.config.kubernetesVersion!.default),
    eks("cluster/Pulumi.example.yaml", example.config["cluster:kubernetesVersion"]),
    eks("cluster/config.ts", shape.kubernetesVersion!.parse(undefined)),
    ebs("cluster/Pulumi.yaml", project.config.ebsCsiDriverVersion!.default),
    ebs("cluster/Pulumi.example.yaml", example.config["cluster:ebsCsiDriverVersion"]),
    ebs("cluster/config.ts", EBS_CSI_DRIVER_VERSION),
    snapshots("cluster/Pulumi.yaml", project.config.snapshotControllerVersion!.default),
    snapshots("cluster/Pulumi.example.yaml", example.config["cluster:snapshotControllerVersion"]),
    snapshots("cluster/config.ts", SNAPSHOT_CONTROLLER_VERSION),
  ];
}

/** Annotated pins: a "// renovate:" comment naming datasource and depName above the line it pins. */
function annotatedPins(file: string): Pin[] {
  const lines = read(file).split("\n");
  return lines.flatMap((line, i) => {
    const note = /\/\/ renovate: datasource=\S+ depName=(\S+)/.exec(line);
    const value = note && /= "([^"]+)"/.exec(lines[i + 1] ?? "");
    return value ? [{ file, name: note[1]!, value: value[1]!, kind: "annotated" }] : [];
  });
}

const projectDirs = /^(cluster|cluster-setup|kargo|lib)\//;

/** Every pin of the repository, from its files as they are now. */
export function repositoryPins(files = repositoryFiles()): Pin[] {
  const base = (f: string) => path.posix.basename(f);
  return [
    ...files.filter((f) => base(f) === "package.json").flatMap(npmPins),
    ...files
      .filter((f) => base(f) === ".nvmrc")
      .map((file) => ({ file, name: "node", value: read(file).trim(), kind: "node" })),
    ...files.filter((f) => base(f) === "go.mod").flatMap(goModPins),
    ...files
      .filter((f) => /^\.github\/(workflows\/[^/]+|actions\/.+\/action)\.ya?ml$/.test(f))
      .flatMap(actionPins),
    ...files
      .filter((f) => projectDirs.test(f) && f.endsWith(".ts") && !f.startsWith("lib/crds/generated/"))
      .flatMap(chartPins),
    ...Object.entries(pinned).map(([key, value]) => ({
      file: "lib/crds/sources.ts",
      name: key,
      value: value.replace(/^argo-(cd|rollouts)-/, ""),
      kind: "upstream tag",
    })),
    ...Object.values(WORKSPACE_IMAGES).map((image) => imagePin("lib/pipeline/schema.ts", image)),
    imagePin("lib/pipeline/schema.ts", VERIFICATION_IMAGE),
    ...clusterPins(),
    { file: "lib/nodeAmi.ts", name: "awslabs/amazon-eks-ami", value: NODE_AMI_RELEASE, kind: "node AMI" },
    ...files.filter((f) => /^programs\/[^/]+\/Pulumi\.ya?ml$/.test(f)).flatMap(yamlProgramPins),
    ...files.filter((f) => /^(test|lib\/cli)\/[^/]+\.ts$/.test(f)).flatMap(annotatedPins),
  ];
}
