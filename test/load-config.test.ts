// lib/config.ts loadConfig on its own, with the stack config the CLI would hand a program: which keys and
// namespaces it refuses, how it treats secrets, and what its messages say and never repeat.
import * as pulumi from "@pulumi/pulumi";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, loadConfig } from "../lib/config";
import { setStackConfig } from "../lib/cli/plan/harness";

const project = "cluster";
const schema = z.object({
  name: z.string().default("platform"),
  nodeCount: z.number().int().min(1),
  token: z.string().min(1).optional(),
  label: z.string().optional(),
});

/** Loads `schema` with this stack config (values as the CLI stores them: JSON text for non-strings). */
function load(
  config: Record<string, unknown>,
  secretKeys: string[] = [],
  options: { secrets?: "token"[]; secretCapable?: "label"[]; schema?: z.ZodObject } = {},
) {
  setStackConfig(config, secretKeys);
  return loadConfig(options.schema ?? schema, {
    project,
    secrets: options.secrets,
    secretCapable: options.secretCapable,
  });
}
function problemsOf(...args: Parameters<typeof load>): string {
  try {
    load(...args);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("the config was accepted");
}
const secretValue = async (v: unknown) => pulumi.isSecret(pulumi.output(v));

afterEach(() => pulumi.runtime.setAllConfig({}, []));

describe("namespaces beside the project's", () => {
  it("leaves a key of an unrelated namespace alone, even one as long as the project's", () => {
    expect(
      load({ [`${project}:nodeCount`]: 2, "mytools:owner": "ops", "aws:region": "us-west-2" }),
    ).toMatchObject({
      nodeCount: 2,
    });
  });
  it("refuses a namespace one edit away from the project's", () => {
    expect(problemsOf({ [`${project}:nodeCount`]: 2, "cluser:nodeCount": 3 })).toMatch(
      /cluser:nodeCount: namespace "cluser" looks like a typo of "cluster" and would be ignored; did you mean cluster:nodeCount\?/,
    );
  });
});

describe("keys of the project", () => {
  it("names an unknown key and lists the known ones in order", () => {
    expect(problemsOf({ [`${project}:nodeCount`]: 2, [`${project}:nodes`]: 3 })).toMatch(
      /cluster:nodes: unknown key; known keys are label, name, nodeCount, token/,
    );
  });
  it("says how to set a required key that is missing, and what is wrong with one that is set", () => {
    expect(problemsOf({})).toMatch(
      /cluster:nodeCount: is required; set it with pulumi config set nodeCount <value>/,
    );
    const badValue = problemsOf({ [`${project}:nodeCount`]: 0 });
    expect(badValue).toMatch(/cluster:nodeCount: Too small/);
    expect(badValue).not.toMatch(/is required/);
  });
  it("names the project for a rule over several keys", () => {
    const both = schema.refine(
      (c) => c.token === undefined || c.label === undefined,
      "set token or label, not both",
    );
    expect(
      problemsOf({ [`${project}:nodeCount`]: 2, [`${project}:token`]: "t", [`${project}:label`]: "l" }, [], {
        schema: both,
      }),
    ).toMatch(/^ {2}- cluster: set token or label, not both$/m);
  });
});

describe("structured values", () => {
  const withValues = z.object({ values: z.record(z.string(), z.unknown()) });
  const loadValues = (text: string) => load({ [`${project}:values`]: text }, [], { schema: withValues });

  it("loads a value holding nulls and lists", () => {
    expect(loadValues('{"a": null, "b": [null, {"c": 1}]}')).toEqual({
      values: { a: null, b: [null, { c: 1 }] },
    });
  });
  it("finds a __proto__ key 64 levels down", () => {
    const text = `${'{"x":'.repeat(64)}{"__proto__":1}${"}".repeat(64)}`;
    expect(() => loadValues(text)).toThrow(
      new RegExp(
        `${project}:values \\(at ${"x.".repeat(64)}__proto__\\): the key "__proto__" is not allowed`,
      ),
    );
  });
  it("reads a value nested 100000 levels deep without overflowing the stack", () => {
    const text = `{"a":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    expect(loadValues(text)).toHaveProperty("values.a");
  });
});

describe("secrets", () => {
  it("leaves a declared secret that is not set alone", () => {
    expect(load({ [`${project}:nodeCount`]: 2 }, [], { secrets: ["token"] }).token).toBeUndefined();
  });
  it("refuses a declared secret set in plain text, but not an empty one, which reveals nothing", () => {
    expect(
      problemsOf({ [`${project}:nodeCount`]: 2, [`${project}:token`]: "plain-token" }, [], {
        secrets: ["token"],
      }),
    ).toMatch(
      /cluster:token: must be encrypted as it's secret; set it with pulumi config set --secret token <value>/,
    );
    expect(
      problemsOf({ [`${project}:nodeCount`]: 0, [`${project}:token`]: "" }, [], { secrets: ["token"] }),
    ).not.toMatch(/must be encrypted/);
  });
  it("refuses a key set as a secret that the program cannot keep secret, naming none that may be when there is none", () => {
    const message = problemsOf({ [`${project}:nodeCount`]: 2, [`${project}:name`]: "x" }, [
      `${project}:name`,
    ]);
    expect(message).toMatch(
      /cluster:name: is set as a secret, but the program uses it in resource names .*set it without --secret$/m,
    );
    expect(message).not.toMatch(/keys that may be secret/);
  });
  it("keeps a secret-capable key a Pulumi secret when it was set as one, and plain otherwise", async () => {
    const config = { [`${project}:nodeCount`]: 2, [`${project}:label`]: "team-a" };
    expect(await secretValue(load(config, [`${project}:label`], { secretCapable: ["label"] }).label)).toBe(
      true,
    );
    expect(load(config, [], { secretCapable: ["label"] }).label).toBe("team-a");
  });
  it("never repeats a secret value in a message, not even a plain-text one refused for it", () => {
    const tokenIsName = schema.extend({
      name: z.string().refine((n) => n.length > 100, { error: (i) => `"${String(i.input)}" is too short` }),
    });
    for (const secretKeys of [[`${project}:token`], []]) {
      const message = problemsOf(
        { [`${project}:nodeCount`]: 2, [`${project}:token`]: "s3cr", [`${project}:name`]: "s3cr" },
        secretKeys,
        { secrets: ["token"], schema: tokenIsName },
      );
      expect(message).toMatch(/cluster:name: "\[secret\]" is too short/);
      expect(message).not.toMatch(/s3cr/);
    }
  });
  it("does not garble a message over a secret of fewer than four characters", () => {
    const message = problemsOf({ [`${project}:token`]: "e" }, [`${project}:token`], { secrets: ["token"] });
    expect(message).toMatch(
      /cluster:nodeCount: is required; set it with pulumi config set nodeCount <value>/,
    );
  });
});
