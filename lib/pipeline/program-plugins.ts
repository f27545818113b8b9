// The resource plugins (providers) a promoted program pins, read from the files `pulumi install` reads, so the
// plugin cache can hold them before any workspace asks. A plugin this misses is still installed by the
// workspace itself, into its own copy of the cache: reading too little costs a download, never a wrong run.
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import type { ProviderPlugin } from "./schema";

// Packages of Pulumi's that are not resource plugins: the SDK itself and policy packs.
const NOT_PROVIDERS = new Set(["pulumi", "policy", "query"]);

const read = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined);

/**
 * Pulumi YAML: each resource's `options.version` pins the plugin of its type's package (`aws:s3:Bucket` →
 * `aws`), which is how pulumi-yaml asks for plugins (pulumi/pulumi-yaml pkg/pulumiyaml/packages.go).
 */
function yamlPlugins(dir: string): ProviderPlugin[] {
  const project = (YAML.parse(read(path.join(dir, "Pulumi.yaml")) ?? "") ?? {}) as {
    resources?: Record<string, { type?: unknown; options?: { version?: unknown } } | null>;
  };
  return Object.values(project.resources ?? {}).flatMap((r) => {
    const pkg = typeof r?.type === "string" ? r.type.split(":")[0] : undefined;
    const version = r?.options?.version;
    return pkg && pkg !== "pulumi" && version !== undefined ? [{ name: pkg, version: String(version) }] : [];
  });
}

/** Node.js with npm: each top-level `@pulumi/<name>` package in package-lock.json is plugin `<name>`. */
function nodejsPlugins(dir: string): ProviderPlugin[] {
  const lock = read(path.join(dir, "package-lock.json"));
  if (!lock) return [];
  const packages = (JSON.parse(lock) as { packages?: Record<string, { version?: string }> }).packages ?? {};
  return Object.entries(packages).flatMap(([at, pkg]) => {
    const name = /^node_modules\/@pulumi\/([a-z0-9-]+)$/.exec(at)?.[1];
    return name && !NOT_PROVIDERS.has(name) && pkg.version ? [{ name, version: pkg.version }] : [];
  });
}

/** Python with uv: each `pulumi-<name>` package in uv.lock is plugin `<name>`. */
function pythonPlugins(dir: string): ProviderPlugin[] {
  const lock = read(path.join(dir, "uv.lock"));
  if (!lock) return [];
  return [...lock.matchAll(/^name = "pulumi-([a-z0-9-]+)"\nversion = "([^"]+)"$/gm)].flatMap(
    ([, name, version]) => (NOT_PROVIDERS.has(name!) ? [] : [{ name: name!, version: version! }]),
  );
}

/** Go: each `github.com/pulumi/pulumi-<name>/sdk/vN` module in go.mod is plugin `<name>`. */
function goPlugins(dir: string): ProviderPlugin[] {
  const mod = read(path.join(dir, "go.mod"));
  if (!mod) return [];
  return [
    ...mod.matchAll(/github\.com\/pulumi\/pulumi-([a-z0-9-]+)\/sdk(?:\/v\d+)? v(\d+\.\d+\.\d+\S*)/g),
  ].map(([, name, version]) => ({ name: name!, version: version! }));
}

const byRuntime: Record<string, (dir: string) => ProviderPlugin[]> = {
  yaml: yamlPlugins,
  nodejs: nodejsPlugins,
  python: pythonPlugins,
  go: goPlugins,
};

// What `pulumi plugin install` is given, in the seed's shell script: a name and an exact version, nothing that
// the shell could read as more.
const PLUGIN_NAME = /^[a-z0-9][a-z0-9-]*$/;
const PLUGIN_VERSION = /^v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$/;

/** Sorted and without duplicates, so the same pins always make the same cache. */
export function uniquePlugins(plugins: ProviderPlugin[]): ProviderPlugin[] {
  const keyed = new Map(plugins.map((x) => [`${x.name}@${x.version}`, x]));
  const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...keyed.values()].sort((a, b) => order(a.name, b.name) || order(a.version, b.version));
}

/**
 * The resource plugins the program in `dir` (its real folder) pins, for its runtime. A pin that is not an
 * exact version (a range, or no version) is left to the workspace, which resolves it as it always does.
 */
export const programPlugins = (dir: string, runtime: string): ProviderPlugin[] =>
  uniquePlugins(
    (byRuntime[runtime]?.(dir) ?? []).filter(
      (x) => PLUGIN_NAME.test(x.name) && PLUGIN_VERSION.test(x.version),
    ),
  );
