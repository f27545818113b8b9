import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { extractValidationData, fetchUpstream, generate, upstreamDownloads } from "../lib/crds/generate";
import { toJsonSchema } from "../lib/crds/schema";
import type { KubeObject } from "../lib/crds/validate";
import { crdSources } from "../lib/crds/sources";
import { getValidator, upstreamCrdsDir, validationData } from "./crds-support";

const committedDir = path.join(__dirname, "..", "lib", "crds", "generated");
const listFiles = (dir: string): string[] =>
  fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => fs.statSync(path.join(dir, f)).isFile())
    .sort();

describe("generated CRD types and validation data", () => {
  it("are what `npm run crds` generates, from the upstream files where this clone has them", async () => {
    // With the upstream files: the whole chain. Without (a fork): the types from the committed data.
    const data = upstreamCrdsDir ? extractValidationData(upstreamCrdsDir) : validationData;
    const first = fs.mkdtempSync(path.join(os.tmpdir(), "crds-"));
    const second = fs.mkdtempSync(path.join(os.tmpdir(), "crds-"));
    const files = await generate(data, first);
    await generate(data, second);
    expect(listFiles(committedDir)).toEqual(files);
    for (const name of files) {
      const generated = fs.readFileSync(path.join(first, name), "utf8");
      expect(fs.readFileSync(path.join(second, name), "utf8"), `${name} is reproducible`).toBe(generated);
      expect(
        fs.readFileSync(path.join(committedDir, name), "utf8"),
        `${name} is up to date: run npm run crds`,
      ).toBe(generated);
    }
  });

  it("carry no prose: descriptions are stripped", () => {
    const text = listFiles(path.join(committedDir, "schemas"))
      .map((f) => fs.readFileSync(path.join(committedDir, "schemas", f), "utf8"))
      .join("");
    expect(text).not.toMatch(/"description":"/);
    expect(Object.keys(validationData.crds)).toHaveLength(crdSources.length);
  });
});

describe("npm run crds -- --fetch", () => {
  const failingFetch =
    (fail: (url: string) => Response | Error): typeof fetch =>
    async (input) => {
      const outcome = fail(String(input));
      if (outcome instanceof Error) throw outcome;
      return outcome;
    };
  const into = () => fs.mkdtempSync(path.join(os.tmpdir(), "fetch-"));

  it("downloads every upstream file it generates from, at the pinned tags", async () => {
    const seen: string[] = [];
    const dir = into();
    const count = await fetchUpstream(
      dir,
      failingFetch((url) => {
        seen.push(url);
        return new Response("{}");
      }),
    );
    expect(count).toBe(upstreamDownloads().length);
    expect(seen.every((url) => url.startsWith("https://raw.githubusercontent.com/"))).toBe(true);
    expect(seen).toContain(
      "https://raw.githubusercontent.com/akuity/kargo/v1.11.2/charts/kargo/resources/crds/kargo.akuity.io_stages.yaml",
    );
    expect(fs.existsSync(path.join(dir, "pko/pulumi.com_stacks.yaml"))).toBe(true);
  });

  it("names the URL that failed and the HTTP status", async () => {
    await expect(
      fetchUpstream(
        into(),
        failingFetch((url) =>
          url.includes("pulumi.com_stacks")
            ? new Response("", { status: 404, statusText: "Not Found" })
            : new Response("{}"),
        ),
      ),
    ).rejects.toThrow(
      "cannot download https://raw.githubusercontent.com/pulumi/pulumi-kubernetes-operator/v2.9.0/operator/config/crd/bases/pulumi.com_stacks.yaml: HTTP 404 Not Found",
    );
  });

  it("names the URL that failed and the network error behind `fetch failed`", async () => {
    const offline = Object.assign(new TypeError("fetch failed"), {
      cause: Object.assign(new Error("getaddrinfo ENOTFOUND raw.githubusercontent.com"), {
        code: "ENOTFOUND",
      }),
    });
    await expect(
      fetchUpstream(
        into(),
        failingFetch(() => offline),
      ),
    ).rejects.toThrow(
      /^cannot download https:\/\/raw\.githubusercontent\.com\/akuity\/kargo\/v1\.11\.2\/\S+: ENOTFOUND: getaddrinfo ENOTFOUND raw\.githubusercontent\.com$/,
    );
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

describe("the validator", () => {
  it("accepts a valid Stage", () => {
    expect(errorsOf(stage({}))).toEqual([]);
  });

  it("compiles every schema it holds: each pinned CRD's kinds, Kargo's step and subscription schemas", () => {
    // It compiles each when an object first needs it; an object of every kind, step and subscription needs all.
    const kinds = Object.values(validationData.crds)
      .flat()
      .map((crd) => ({
        apiVersion: crd.group ? `${crd.group}/${crd.version}` : crd.version,
        kind: crd.kind,
        metadata: { name: "all", namespace: "all" },
      }));
    const steps = Object.keys(validationData.steps)
      .filter((step) => step !== "argocd-common")
      .map((uses) => ({ uses, config: {} }));
    const warehouse = {
      ...kinds.find((k) => k.kind === "Warehouse")!,
      spec: { subscriptions: Object.keys(validationData.subscriptions).map((kind) => ({ [kind]: {} })) },
    };
    expect(steps.length).toBeGreaterThan(0);
    expect(warehouse.spec.subscriptions.length).toBeGreaterThan(0);
    const report = getValidator().validate([...kinds, withSteps(steps), warehouse] as KubeObject[]);
    expect(report.unschematized).toEqual([]);
    expect(
      report.errors.filter((e) => /is not a (kind any pinned CRD serves|built-in Kargo step)/.test(e)),
    ).toEqual([]);
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

describe("CRDs and chart values carried by Go modules (Karpenter's, the CSI snapshot CRDs)", () => {
  const karpenterFiles = crdSources.filter((s) => s.inModule).map((s) => s.file);

  it.skipIf(!upstreamCrdsDir)(
    "come from the Go module zip when there, else stay as committed (a fork without network)",
    () => {
      expect(karpenterFiles.length).toBeGreaterThan(0);
      const without = extractValidationData(
        upstreamCrdsDir!,
        validationData,
        () => "/nonexistent/module.zip",
      );
      for (const file of karpenterFiles) expect(without.crds[file], file).toEqual(validationData.crds[file]);
      expect(without.charts.karpenter).toEqual(validationData.charts.karpenter);
      const { karpenter: _chart, ...charts } = validationData.charts;
      const bare = {
        ...validationData,
        crds: Object.fromEntries(
          Object.entries(validationData.crds).filter(([f]) => !karpenterFiles.includes(f)),
        ),
        charts,
      };
      expect(() => extractValidationData(upstreamCrdsDir!, bare, () => "/nonexistent/module.zip")).toThrow(
        /no [\w-]+\/.* in the CRDs folder, no github.com\/[\w/-]+@v[\d.]+ zip/,
      );
    },
  );
});

describe("Karpenter's CEL rules", () => {
  const nodePool = (key: string): KubeObject => ({
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: "burst" },
    spec: {
      template: {
        spec: {
          nodeClassRef: { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "burst" },
          requirements: [{ key, operator: "In", values: ["x"] }],
        },
      },
    },
  });
  const nodeClass = (alias: string): KubeObject => ({
    apiVersion: "karpenter.k8s.aws/v1",
    kind: "EC2NodeClass",
    metadata: { name: "burst" },
    spec: {
      amiSelectorTerms: [{ alias }],
      role: "nodes",
      subnetSelectorTerms: [{ tags: { a: "b" } }],
      securityGroupSelectorTerms: [{ tags: { a: "b" } }],
    },
  });

  it("are evaluated as the API server does (strings' split, the regex library's find)", () => {
    const report = getValidator().validate([
      nodePool("karpenter.sh/capacity-type"),
      nodeClass("al2023@latest"),
    ]);
    expect(report.errors).toEqual([]);
    expect(report.unevaluatedRules.filter((r) => /NodePool|EC2NodeClass/.test(r))).toEqual([]);
    expect(errorsOf(nodePool("karpenter.sh/made-up")).join("\n")).toMatch(
      /label domain "karpenter.sh" is restricted/,
    );
    expect(errorsOf(nodeClass("ubuntu@latest")).join("\n")).toMatch(/family is not supported/);
  });
});
