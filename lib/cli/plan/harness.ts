import { compileDependenciesDirectly, withoutSourceMaps } from "./fast-start";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
// The mock runtime's monitor and the runtime settings are not re-exported from the package root.
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import * as runtimeSettings from "@pulumi/pulumi/runtime/settings";
import {
  specialResourceSig,
  specialSecretSig,
  specialSigKey as SIG_KEY,
  unknownValue as UNKNOWN_VALUE,
} from "@pulumi/pulumi/runtime/rpc";
import { runInPulumiStack } from "@pulumi/pulumi/runtime/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the wire format's Struct, as the SDK uses it
const { Struct } = require("google-protobuf/google/protobuf/struct_pb.js") as {
  Struct: { fromJavaScript(value: never): unknown };
};
import { PLAN_ORGANIZATION, PlanMocks, type UpstreamStack } from "./mocks";

// Internal runtime hooks (marked @internal, so absent from the typings) that the plan relies on.
const settings = runtimeSettings as typeof runtimeSettings & { _reset(): void; waitForRPCs(): Promise<void> };

/** What every secret value becomes in a plan. */
export const SECRET = "[secret]";
const UNKNOWN = "[unknown]";
const SIG = { secret: specialSecretSig, resource: specialResourceSig };

export interface PlannedResource {
  urn: string;
  type: string;
  name: string;
  parent: string | null;
  provider: string | null;
  dependsOn: string[];
  inputs: Record<string, unknown>;
  options: {
    protect: boolean;
    retainOnDelete: boolean;
    deleteBeforeReplace: boolean;
    ignoreChanges: string[];
    /** Only when set: the input paths whose change replaces the resource. */
    replaceOnChanges?: string[];
    /** Only when set: how long the engine waits for the resource's creation. */
    createTimeout?: string;
  };
  /** Keys of each input map that is secret as a whole (a Secret's `stringData`): listable, never readable. */
  secretKeys: Record<string, string[]>;
}

export interface ProgramPlan {
  project: string;
  stack: string;
  resources: PlannedResource[];
  /** Stack outputs with every secret replaced by {@link SECRET}. */
  outputs: Record<string, unknown>;
  /** What a StackReference to this stack reads: real mock values plus which outputs are secret. */
  upstream: UpstreamStack;
}

export interface PlanProgramOptions {
  /** Folder holding the project's `Pulumi.yaml` and `index.ts`. */
  projectDir: string;
  project: string;
  stack: string;
  /** Full config keys (`ns:key`) to their values; non-strings are stored as JSON like the CLI does. */
  config: Record<string, unknown>;
  secretKeys?: string[];
  upstream?: Record<string, UpstreamStack>;
  /** Tests only: resource inputs with their secrets' values instead of {@link SECRET}, to run them. */
  revealSecrets?: boolean;
}

/** Replaces secrets, unknowns and resource references in a wire-format value with readable stand-ins. */
function readable(value: unknown, reveal = false): unknown {
  if (Array.isArray(value)) return value.map((v) => readable(v, reveal));
  if (value === UNKNOWN_VALUE) return UNKNOWN;
  if (value && typeof value === "object") {
    const record = value as Record<string, unknown>;
    if (record[SIG_KEY] === SIG.secret) return reveal ? readable(record.value, reveal) : SECRET;
    if (record[SIG_KEY] === SIG.resource) return record.urn;
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, readable(v, reveal)]));
  }
  return value;
}

type Callback = (err: Error | null, resp?: unknown) => void;
interface WireStruct {
  toJavaScript(): Record<string, unknown>;
}
interface RegisterRequest {
  getType(): string;
  getName(): string;
  getParent(): string;
  getProvider(): string;
  getObject(): WireStruct | undefined;
  getDependenciesList(): string[];
  getProtect(): boolean;
  getRetainondelete(): boolean;
  getIgnorechangesList(): string[];
  getDeletebeforereplace(): boolean;
  getAdditionalsecretoutputsList(): string[];
  getReplaceonchangesList(): string[];
  getCustomtimeouts(): { getCreate(): string } | undefined;
}

interface RegisterResponse {
  getObject(): WireStruct | undefined;
  setObject(value: unknown): void;
}

const isSecretValue = (v: unknown) =>
  typeof v === "object" && v !== null && (v as Record<string, unknown>)[SIG_KEY] === SIG.secret;

/** For each input that is a secret map, its keys (the values stay hidden). */
function keysOfSecretMaps(inputs: Record<string, unknown>): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(inputs).flatMap(([key, v]) => {
      const inner = isSecretValue(v) ? (v as { value?: unknown }).value : undefined;
      return inner && typeof inner === "object" && !Array.isArray(inner)
        ? [[key, Object.keys(inner).sort()]]
        : [];
    }),
  );
}

/**
 * What the engine does and the mock monitor does not: outputs named in `additionalSecretOutputs`, and outputs
 * whose same-named input was secret, come back as secrets.
 */
function markSecretOutputs(
  resp: RegisterResponse,
  inputs: Record<string, unknown>,
  additional: string[],
): void {
  const outputs = resp.getObject()?.toJavaScript() ?? {};
  let changed = false;
  for (const [key, value] of Object.entries(outputs)) {
    if (isSecretValue(value) || !(additional.includes(key) || isSecretValue(inputs[key]))) continue;
    outputs[key] = { [SIG_KEY]: SIG.secret, value };
    changed = true;
  }
  if (changed) resp.setObject(Struct.fromJavaScript(outputs as never));
}

/** The mock monitor, recording each registration with the options and dependencies the engine would see. */
class RecordingMonitor extends MockMonitor {
  readonly registrations: PlannedResource[] = [];
  stackOutputs: Record<string, unknown> = {};
  reveal = false;

  override async registerResource(req: RegisterRequest, callback: Callback): Promise<void> {
    const raw = req.getObject()?.toJavaScript() ?? {};
    await super.registerResource(req, (err, resp) => {
      if (!err && resp) {
        markSecretOutputs(resp as RegisterResponse, raw, req.getAdditionalsecretoutputsList());
        const urn = (resp as { getUrn(): string }).getUrn();
        this.registrations.push({
          urn,
          type: req.getType(),
          name: req.getName(),
          parent: req.getParent() || null,
          provider: req.getProvider() ? req.getProvider().split("::").slice(0, 4).join("::") : null,
          dependsOn: [...new Set(req.getDependenciesList())].sort(),
          inputs: readable(raw, this.reveal) as Record<string, unknown>,
          options: {
            protect: Boolean(req.getProtect()),
            retainOnDelete: Boolean(req.getRetainondelete()),
            deleteBeforeReplace: Boolean(req.getDeletebeforereplace()),
            ignoreChanges: [...req.getIgnorechangesList()].sort(),
            ...(req.getReplaceonchangesList().length > 0
              ? { replaceOnChanges: [...req.getReplaceonchangesList()].sort() }
              : {}),
            ...(req.getCustomtimeouts()?.getCreate()
              ? { createTimeout: req.getCustomtimeouts()!.getCreate() }
              : {}),
          },
          secretKeys: keysOfSecretMaps(raw),
        });
      }
      callback(err, resp);
    });
  }

  override registerResourceOutputs(
    req: { getUrn(): string; getOutputs(): WireStruct | undefined },
    callback: Callback,
  ) {
    if (req.getUrn().includes("::pulumi:pulumi:Stack::"))
      this.stackOutputs = req.getOutputs()?.toJavaScript() ?? {};
    super.registerResourceOutputs(req, callback);
  }
}

/**
 * Loads TypeScript programs through tsx's require hook, so a program runs exactly as the Pulumi CLI would
 * run it, under the test runner and the plan command alike.
 */
export function requireFresh(entry: string): unknown {
  if (!require.extensions[".ts"]) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- tsx's CommonJS hook has no ESM entry
    (require("tsx/cjs/api") as { register(): void }).register();
    // Registering turns source maps back on and replaces the loader (fast-start.ts).
    withoutSourceMaps();
    compileDependenciesDirectly();
  }
  const repoRoot = path.resolve(__dirname, "..", "..", "..");
  for (const file of Object.keys(require.cache)) {
    if (file.startsWith(repoRoot) && !file.includes(`${path.sep}node_modules${path.sep}`))
      delete require.cache[file];
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- programs are CommonJS, as under the CLI
  return require(entry);
}

export class ProgramError extends Error {
  constructor(
    readonly project: string,
    readonly cause: unknown,
    readonly registered: PlannedResource[],
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
    this.name = "ProgramError";
  }
}

/**
 * Hands stack config to the Pulumi runtime as the CLI does: strings as they are, other values as JSON text,
 * unset (undefined) keys left out.
 */
export function setStackConfig(config: Record<string, unknown>, secretKeys: string[] = []): void {
  pulumi.runtime.setAllConfig(
    Object.fromEntries(
      Object.entries(config)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
    ),
    secretKeys,
  );
}

/**
 * Runs one real Pulumi program under the mock runtime and returns what it registered and exported. The
 * program is required from `projectDir` exactly as the CLI runs it; nothing is copied.
 */
export async function planProgram(options: PlanProgramOptions): Promise<ProgramPlan> {
  // No region is substituted: a program that needs one and has none fails, as a deploy would.
  const region =
    options.config["aws:region"] === undefined ? undefined : String(options.config["aws:region"]);
  const mocks = new PlanMocks(region, options.upstream);
  settings._reset();
  await pulumi.runtime.setMocks(mocks, options.project, options.stack, false, PLAN_ORGANIZATION);
  const monitor = new RecordingMonitor(mocks);
  monitor.reveal = options.revealSecrets === true;
  const sourceMaps = withoutSourceMaps();
  // The SDK takes a stack trace of every promise it makes, for a leak report the mock runtime never prints
  // (pulumi/pulumi v3.270.0 sdk/nodejs/runtime/debuggable.ts): a tenth of the plan. The plan reports a program's
  // error by its message, so the program runs with empty traces.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  settings.setMockOptions(monitor, options.project, options.stack, false, PLAN_ORGANIZATION);
  setStackConfig(options.config, options.secretKeys ?? []);

  // A program that throws is caught inside the root stack, so the stack itself still completes cleanly.
  let failure: unknown;
  try {
    await runInPulumiStack(async () => {
      try {
        const program = requireFresh(path.resolve(options.projectDir, "index.ts"));
        // Like the CLI: a program exporting a function is called and its (awaited) result is the outputs.
        const exported = (typeof program === "function" ? await program() : program) as Record<
          string,
          unknown
        >;
        return Object.fromEntries(
          Object.entries(exported).filter(([k]) => k !== "__esModule" && k !== "default"),
        );
      } catch (err) {
        failure = err;
        return {};
      }
    });
    await settings.waitForRPCs();
  } catch (err) {
    failure ??= err;
  } finally {
    process.setSourceMapsEnabled(sourceMaps);
    Error.stackTraceLimit = stackTraceLimit;
  }
  const resources = monitor.registrations.filter((r) => r.type !== "pulumi:pulumi:Stack");
  if (failure !== undefined) throw new ProgramError(options.project, failure, resources);

  const revealed = readable(monitor.stackOutputs, true) as Record<string, unknown>;
  const secretOutputNames = Object.entries(monitor.stackOutputs)
    .filter(([, v]) => JSON.stringify(v).includes(SIG.secret))
    .map(([k]) => k);
  return {
    project: options.project,
    stack: options.stack,
    resources,
    outputs: readable(monitor.stackOutputs) as Record<string, unknown>,
    upstream: { outputs: revealed, secretOutputNames },
  };
}
