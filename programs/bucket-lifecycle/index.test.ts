// The tests of programs/bucket-lifecycle, beside it (removing the program removes them), the way its team
// would test it: under Pulumi's mocks, with the stack config the CLI would hand it (Pulumi.yaml's declared
// defaults under the stack file's values). Test files share their worker's modules (vitest.config.mts): the
// program is required fresh for every run, and the config and runtime settings are reset after.
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as runtimeSettings from "@pulumi/pulumi/runtime/settings";
import YAML from "yaml";
import { afterAll, afterEach, describe, expect, it } from "vitest";

const repoRoot = path.resolve(__dirname, "..", "..");
const programDir = __dirname;
const project = "infra-bucket-lifecycle";
const lifecycleType = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration";

// Internal runtime hooks (@internal, so absent from the typings), used as lib/cli/plan/harness.ts uses them.
const settings = runtimeSettings as typeof runtimeSettings & { _reset(): void; waitForRPCs(): Promise<void> };

const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));
const readYaml = (file: string) => YAML.parse(fs.readFileSync(path.join(programDir, file), "utf8"));

/** What the CLI hands the program for a stack: Pulumi.yaml's declared defaults, then the stack file. */
function cliConfig(stack: string): Record<string, unknown> {
  const declared = Object.entries<{ default: unknown }>(readYaml("Pulumi.yaml").config);
  return {
    ...Object.fromEntries(declared.map(([key, decl]) => [`${project}:${key}`, decl.default])),
    ...readYaml(`Pulumi.${stack}.yaml`).config,
  };
}

interface Registration {
  type: string;
  name: string;
  inputs: Record<string, any>;
}

// The program is CommonJS run through tsx's require hook, as lib/cli/plan/harness.ts runs programs; its
// @pulumi imports resolve to the root node_modules, the same modules as this file's.
const requireHere = createRequire(__filename);
function requireProgram(): { bucketName: pulumi.Output<string>; ruleIds: pulumi.Output<string[]> } {
  if (!requireHere.extensions[".ts"]) (requireHere("tsx/cjs/api") as { register(): void }).register();
  const entry = path.join(programDir, "index.ts");
  delete requireHere.cache[entry];
  return requireHere(entry);
}

const valueOf = <T>(output: pulumi.Output<T>) => new Promise<T>((resolve) => output.apply(resolve));

/** Runs the program for `stack` in Pulumi organization `org`; the bucket stack exports `bucketName`. */
async function run(
  stack: string,
  overrides: Record<string, unknown> = {},
  { bucketName = `bucket-of-${stack}`, org = "acme" } = {},
) {
  const registered: Registration[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource: ({ type, name, inputs }) => {
        registered.push({ type, name, inputs });
        if (type === "pulumi:pulumi:StackReference")
          return {
            id: inputs.name,
            state: { name: inputs.name, outputs: { bucketName }, secretOutputNames: [] },
          };
        return { id: `${name}-id`, state: inputs };
      },
      call: ({ inputs }) => inputs,
    },
    project,
    stack,
    false,
    org,
  );
  // As the CLI hands config to a program: strings as they are, anything else as JSON text.
  const config = { ...cliConfig(stack), ...overrides };
  pulumi.runtime.setAllConfig(
    Object.fromEntries(
      Object.entries(config).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
    ),
  );
  let program: ReturnType<typeof requireProgram>;
  try {
    program = requireProgram();
  } catch (err) {
    return { registered, error: err };
  }
  const outputs = { bucketName: await valueOf(program.bucketName), ruleIds: await valueOf(program.ruleIds) };
  await settings.waitForRPCs();
  return { registered, outputs };
}

const ofType = (registered: Registration[], type: string) => registered.filter((r) => r.type === type);

afterEach(() => pulumi.runtime.setAllConfig({}, []));
afterAll(() => settings._reset());

describe("programs/bucket-lifecycle", () => {
  it.each(["dev", "dev2", "qa"])(
    "reads the bucket stack of its own environment %s: <org>/infra-bucket/<same stack>",
    async (stack) => {
      const { registered } = await run(stack, {}, { org: `org-${stack}` });
      expect(ofType(registered, "pulumi:pulumi:StackReference").map((r) => r.inputs.name)).toEqual([
        `org-${stack}/infra-bucket/${stack}`,
      ]);
    },
  );

  it("reads the bucket project named by bucketProject", async () => {
    const { registered } = await run("dev", { [`${project}:bucketProject`]: "team-bucket" });
    expect(ofType(registered, "pulumi:pulumi:StackReference").map((r) => r.inputs.name)).toEqual([
      "acme/team-bucket/dev",
    ]);
  });

  it("puts one lifecycle configuration on the referenced bucketName and exports it with the rule ids", async () => {
    const { registered, outputs } = await run("qa", {}, { bucketName: "infra-bucket-qa-5f3c2a1b" });
    const lifecycles = ofType(registered, lifecycleType);
    expect(lifecycles).toHaveLength(1);
    expect(lifecycles[0]!.inputs.bucket).toBe("infra-bucket-qa-5f3c2a1b");
    expect(outputs).toEqual({
      bucketName: "infra-bucket-qa-5f3c2a1b",
      ruleIds: ["expire-noncurrent-versions", "abort-incomplete-multipart-uploads"],
    });
    expect(registered.map((r) => r.type).sort()).toEqual([lifecycleType, "pulumi:pulumi:StackReference"]);
  });

  it("by default expires noncurrent versions after 30 days and aborts incomplete multipart uploads after 7, for every object", async () => {
    const { registered } = await run("dev");
    expect(ofType(registered, lifecycleType)[0]!.inputs.rules).toEqual([
      {
        id: "expire-noncurrent-versions",
        status: "Enabled",
        filter: {},
        noncurrentVersionExpiration: { noncurrentDays: 30 },
      },
      {
        id: "abort-incomplete-multipart-uploads",
        status: "Enabled",
        filter: {},
        abortIncompleteMultipartUpload: { daysAfterInitiation: 7 },
      },
    ]);
  });

  it.each([1, 90, 3650])(
    "expires noncurrent versions after a configured noncurrentDays of %d",
    async (days) => {
      const { registered } = await run("dev2", { [`${project}:noncurrentDays`]: days });
      const [expire, abort] = ofType(registered, lifecycleType)[0]!.inputs.rules;
      expect(expire.noncurrentVersionExpiration).toEqual({ noncurrentDays: days });
      expect(abort.abortIncompleteMultipartUpload).toEqual({ daysAfterInitiation: 7 });
    },
  );

  it.each(["0", "3651", "7.5", "-1", "30d", "1e2", ""])(
    "refuses noncurrentDays %j, naming the key, before reading or registering anything",
    async (value) => {
      const { registered, error } = await run("dev", { [`${project}:noncurrentDays`]: value });
      expect(error).toBeInstanceOf(pulumi.RunError);
      expect((error as Error).message).toBe(
        `${project}:noncurrentDays must be a whole number of days from 1 to 3650, not ${JSON.stringify(value)}; ` +
          "set it with pulumi config set noncurrentDays <days>",
      );
      expect(registered).toEqual([]);
    },
  );
});

describe("programs/bucket-lifecycle dependencies", () => {
  const pkg = readJson(path.join(programDir, "package.json"));
  const root = readJson(path.join(repoRoot, "package.json"));

  it("pins exactly the @pulumi versions of the root package.json, and every package at the version the root installed", () => {
    // The suite runs the program against the root node_modules: these pins make that what PKO installs.
    for (const name of ["@pulumi/pulumi", "@pulumi/aws"]) {
      expect(pkg.dependencies[name], name).toBe(root.dependencies[name]);
    }
    const pins = { ...pkg.dependencies, ...pkg.devDependencies };
    expect(Object.keys(pins).sort()).toEqual(["@pulumi/aws", "@pulumi/pulumi", "@types/node", "typescript"]);
    for (const [name, spec] of Object.entries(pins)) {
      const installed = readJson(path.join(repoRoot, "node_modules", name, "package.json")).version;
      expect(spec, name).toBe(installed);
    }
  });

  it("has a package-lock.json in sync with package.json, locking each dependency at its pinned version", () => {
    const lock = readJson(path.join(programDir, "package-lock.json"));
    expect(lock.lockfileVersion).toBe(3);
    expect(lock.name).toBe(pkg.name);
    expect(lock.packages[""].dependencies).toEqual(pkg.dependencies);
    expect(lock.packages[""].devDependencies).toEqual(pkg.devDependencies);
    for (const [name, spec] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
      expect(lock.packages[`node_modules/${name}`]?.version, name).toBe(spec);
    }
  });
});
