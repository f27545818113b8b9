import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect, it } from "vitest";
import { generate } from "../lib/crds/generate";
import { toJsonSchema } from "../lib/crds/schema";
import type { KubeObject } from "../lib/crds/validate";
import { crdsDir, describeWithCrds, getValidator } from "./crds-support";

const committed = path.join(__dirname, "..", "lib", "crds", "generated");

describeWithCrds("generated CRD types", () => {
  it("are what `npm run crds` generates from the pinned CRDs, run after run", async () => {
    const first = fs.mkdtempSync(path.join(os.tmpdir(), "crds-"));
    const second = fs.mkdtempSync(path.join(os.tmpdir(), "crds-"));
    const files = await generate(crdsDir!, first);
    await generate(crdsDir!, second);
    expect(fs.readdirSync(committed).sort()).toEqual(files.map((f) => path.basename(f)).sort());
    for (const file of files) {
      const name = path.basename(file);
      expect(fs.readFileSync(path.join(second, name), "utf8"), `${name} is reproducible`).toBe(
        fs.readFileSync(file, "utf8"),
      );
      expect(
        fs.readFileSync(path.join(committed, name), "utf8"),
        `${name} is up to date: run npm run crds`,
      ).toBe(fs.readFileSync(file, "utf8"));
    }
  });
});

const stage = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: "kargo.akuity.io/v1alpha1",
  kind: "Stage",
  metadata: { name: "dev", namespace: "infra" },
  spec: {
    requestedFreight: [{ origin: { kind: "Warehouse", name: "program" }, sources: { direct: true } }],
    ...spec,
  },
});
const withSteps = (steps: unknown[]) => stage({ promotionTemplate: { spec: { steps } } });
const errorsOf = (...objects: KubeObject[]) => getValidator().validate(objects).errors;

describeWithCrds("the validator", () => {
  it("accepts a valid Stage", () => {
    expect(errorsOf(stage({}))).toEqual([]);
  });

  it("rejects an unknown field, which the API server would drop silently", () => {
    expect(errorsOf(stage({ requestedFreights: [] }))).toEqual([
      'Stage infra/dev: /spec: unknown field "requestedFreights"',
    ]);
  });

  it("rejects a value outside an enum and names the allowed values", () => {
    const object = stage({});
    (
      object.spec as { requestedFreight: { sources: Record<string, unknown> }[] }
    ).requestedFreight[0]!.sources.availabilityStrategy = "Any";
    expect(errorsOf(object)).toEqual([
      'Stage infra/dev: /spec/requestedFreight/0/sources/availabilityStrategy: must be equal to one of the allowed values ("All", "OneOf", "")',
    ]);
  });

  it("rejects a missing required field and a wrong type", () => {
    expect(errorsOf({ ...stage({}), spec: { shard: 3 } })).toEqual([
      "Stage infra/dev: /spec: must have required property 'requestedFreight'",
      "Stage infra/dev: /spec/shard: must be string",
    ]);
  });

  it("evaluates CEL rules: a step must use exactly one of uses or task", () => {
    const errors = errorsOf(
      withSteps([{ uses: "git-clear", task: { name: "t" }, config: { path: "./out" } }]),
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /\/spec\/promotionTemplate\/spec\/steps\/0: .*\(CEL: \(has\(self\.uses\) \? !has\(self\.task\) : has\(self\.task\)\)\)/,
    );
  });

  it("evaluates CEL rules: a PKO Stack name longer than 42 characters", () => {
    const name = "a".repeat(43);
    const errors = errorsOf({
      apiVersion: "pulumi.com/v1",
      kind: "Stack",
      metadata: { name, namespace: "stacks" },
      spec: { stack: "org/program/dev" },
    });
    expect(errors).toEqual([
      `Stack stacks/${name}: /: Stack name must be no more than 42 characters in length. (CEL: size(self.metadata.name) <= 42)`,
    ]);
    expect(
      errorsOf({
        apiVersion: "pulumi.com/v1",
        kind: "Stack",
        metadata: { name: "a".repeat(42), namespace: "s" },
        spec: { stack: "o/p/s" },
      }),
    ).toEqual([]);
  });

  it("checks step configs against Kargo's step schemas", () => {
    expect(
      errorsOf(withSteps([{ uses: "yaml-update", config: { path: "stacks/dev.yaml", updates: [] } }])),
    ).toEqual([
      "Stage infra/dev: /spec/promotionTemplate/spec/steps/0/config/updates: must NOT have fewer than 1 items",
    ]);
    expect(errorsOf(withSteps([{ uses: "git-push", config: { path: "./out", branch: "main" } }]))).toEqual([
      'Stage infra/dev: /spec/promotionTemplate/spec/steps/0/config: unknown field "branch"',
    ]);
    expect(errorsOf(withSteps([{ uses: "git-pull", config: {} }]))).toEqual([
      'Stage infra/dev: /spec/promotionTemplate/spec/steps/0/uses: "git-pull" is not a built-in Kargo step',
    ]);
  });

  it("accepts a ${{ }} expression where the schema expects another type", () => {
    expect(
      errorsOf(
        withSteps([{ uses: "git-push", config: { path: "./out", maxAttempts: "${{ vars.attempts }}" } }]),
      ),
    ).toEqual([]);
    expect(
      errorsOf(withSteps([{ uses: "git-push", config: { path: "./out", maxAttempts: "three" } }])),
    ).toEqual(["Stage infra/dev: /spec/promotionTemplate/spec/steps/0/config/maxAttempts: must be integer"]);
  });

  it("checks Warehouse git subscriptions against Kargo's subscription schema", () => {
    const warehouse = (git: Record<string, unknown>): KubeObject => ({
      apiVersion: "kargo.akuity.io/v1alpha1",
      kind: "Warehouse",
      metadata: { name: "program", namespace: "infra" },
      spec: { interval: "5m0s", subscriptions: [{ git }] },
    });
    expect(errorsOf(warehouse({ repoURL: "https://github.com/acme/infra.git", branch: "main" }))).toEqual([]);
    expect(
      errorsOf(
        warehouse({ repoURL: "https://github.com/acme/infra.git", commitSelectionStrategy: "Newest" }),
      ),
    ).toEqual([
      'Warehouse infra/program: /spec/subscriptions/0/git/commitSelectionStrategy: must be equal to one of the allowed values ("NewestFromBranch", "SemVer", "Lexical", "NewestTag")',
    ]);
  });

  it("treats int-or-string as either and nothing else", () => {
    const template = (count: unknown): KubeObject => ({
      apiVersion: "argoproj.io/v1alpha1",
      kind: "AnalysisTemplate",
      metadata: { name: "verify", namespace: "infra" },
      spec: { metrics: [{ name: "m", count, provider: { web: { url: "https://example.com" } } }] },
    });
    expect(errorsOf(template(3), template("3"))).toEqual([]);
    expect(errorsOf(template(true))).toContain(
      "AnalysisTemplate infra/verify: /spec/metrics/0/count: must be integer",
    );
  });

  it("requires names and namespaces where the kind needs them", () => {
    expect(errorsOf({ ...stage({}), metadata: { name: "Dev_1" } })).toEqual([
      "Stage Dev_1: /metadata/name: \"Dev_1\" is not a DNS subdomain (lower-case alphanumerics, '-', '.')",
      "Stage Dev_1: /metadata/namespace: required",
    ]);
  });
});

it("translates nullable and int-or-string into JSON Schema", () => {
  expect(
    toJsonSchema({
      type: "object",
      properties: {
        a: { type: "string", nullable: true },
        b: { "x-kubernetes-int-or-string": true },
        c: { type: "object" },
      },
    }),
  ).toEqual({
    type: "object",
    additionalProperties: false,
    properties: {
      a: { type: ["string", "null"] },
      b: { anyOf: [{ type: "integer" }, { type: "string" }] },
      c: { type: "object", additionalProperties: true },
    },
  });
});
