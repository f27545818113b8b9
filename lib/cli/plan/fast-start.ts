// What makes the command-line tools and the plan start fast; imported before any Pulumi SDK loads.
// Measured with `node --cpu-prof` over `npm run plan` (docs/reviewing-changes.md, "The offline plan"):
//
// - @pulumi/pulumi loads TypeScript's compiler and npm's Arborist as it loads, for function serialization
//   (pulumi/pulumi v3.270.0 sdk/nodejs/runtime/closure/parseFunction.ts and codePaths.ts), which no plan
//   uses: about half a second of every run. Each is loaded on its first use instead.
// - tsx turns on source maps, so every stack trace is mapped back to TypeScript, and Pulumi takes one for every
//   resource it registers (sdk/nodejs/resource.ts, `sourcePosition`): programs run without them, and the tools,
//   which print messages, never stacks (`--enable-source-maps`, or in NODE_OPTIONS, keeps them for debugging).
import * as fs from "node:fs";
import Module from "node:module";
import * as path from "node:path";

/** Modules @pulumi/pulumi requires eagerly and uses only to serialize functions. */
const deferred = new Set(["typescript", "@npmcli/arborist"]);
const fromPulumiSdk = /[\\/]node_modules[\\/]@pulumi[\\/]pulumi[\\/]/;

type Load = (request: string, parent: { filename?: string | null } | undefined, isMain: boolean) => unknown;
const loader = Module as unknown as { _load: Load & { deferring?: true } };

/**
 * The module, loaded on first use: a property read, `in`, or a listing of its keys loads it. It says it is an ES
 * module, so TypeScript's `import * as` helper hands it over as it is instead of copying (and so loading) it.
 */
function onFirstUse(load: () => object): object {
  let loaded: object | undefined;
  const real = () => (loaded ??= load());
  return new Proxy(
    {},
    {
      get: (_, key) => (key === "__esModule" ? true : Reflect.get(real(), key)),
      has: (_, key) => Reflect.has(real(), key),
      ownKeys: () => Reflect.ownKeys(real()),
      getOwnPropertyDescriptor: (_, key) => {
        const found = Reflect.getOwnPropertyDescriptor(real(), key);
        return found && { ...found, configurable: true };
      },
    },
  );
}

if (!loader._load.deferring) {
  const load = loader._load;
  const deferring: Load = function (this: unknown, request, parent, isMain) {
    if (deferred.has(request) && parent?.filename && fromPulumiSdk.test(parent.filename))
      return onFirstUse(() => load.call(this, request, parent, isMain) as object);
    return load.call(this, request, parent, isMain);
  };
  loader._load = Object.assign(deferring, { deferring: true as const });
}

type Compile = (
  module: { _compile(source: string, file: string, format?: string): unknown },
  file: string,
) => unknown;
const extensions = (Module as unknown as { _extensions: Record<string, Compile & { direct?: true }> })
  ._extensions;
const packageTypes = new Map<string, string | undefined>();

/** The `type` of the package.json nearest above `dir`, as Node reads it to choose CommonJS or ES module. */
function packageType(dir: string): string | undefined {
  if (packageTypes.has(dir)) return packageTypes.get(dir);
  let type: string | undefined;
  const file = path.join(dir, "package.json");
  if (fs.existsSync(file)) type = (JSON.parse(fs.readFileSync(file, "utf8")) as { type?: string }).type ?? "";
  else if (path.dirname(dir) !== dir) type = packageType(path.dirname(dir));
  packageTypes.set(dir, type);
  return type;
}

/**
 * tsx reads every JavaScript file a `require` loads, dependencies included, and scans it for ES module syntax
 * (tsx v4 `src/cjs/api/module-extensions.ts`): a second of every plan goes to scanning the SDKs. A dependency
 * in a CommonJS package is compiled as Node itself compiles it; everything else still goes through tsx.
 * Called once tsx is registered (again after each registration, which replaces the loader).
 */
export function compileDependenciesDirectly(): void {
  const viaTsx = extensions[".js"]!;
  if (viaTsx.direct) return;
  const marker = `${path.sep}node_modules${path.sep}`;
  const direct: Compile = function (this: unknown, module, file) {
    if (file.includes(marker) && file.endsWith(".js")) {
      const type = packageType(path.dirname(file));
      if (type !== "module") return module._compile(fs.readFileSync(file, "utf8"), file, type || undefined);
    }
    return viaTsx.call(this, module, file);
  };
  extensions[".js"] = Object.assign(direct, { direct: true as const });
}
compileDependenciesDirectly();

const askedForSourceMaps = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].includes(
  "--enable-source-maps",
);

/**
 * Source maps off unless asked for (tsx turns them on as it registers); returns how they were, to restore.
 * The tools call it as they start; the plan harness around each program it runs, the test runner included.
 */
export function withoutSourceMaps(): boolean {
  const before = process.sourceMapsEnabled;
  if (!askedForSourceMaps) process.setSourceMapsEnabled(false);
  return before;
}

// Node keeps the compiled code of every module it loads (on disk, under the system's temporary folder), so
// the next run skips compiling the SDKs again (Node 22.1 and later; an older Node has no such cache).
(Module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
