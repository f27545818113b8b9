// Hostile and careless pipeline definitions: each is refused with a message naming the stage or field and
// what is allowed, before any resource is registered. Here verification's timing, the Pulumi Cloud address,
// environments, stage names and images; the branch and paths are pipeline-hostile-paths.test.ts's.
import { describe, expect, it } from "vitest";
import { names } from "../lib/pipeline/names";
import { type PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import {
  base,
  basePipeline,
  firstEnv,
  firstStack,
  firstUpdate,
  previewOfFirstUpdate,
  escaped,
  expectRefused,
  ofFirstProgram,
  withFirstProgram,
  withVerification,
  withEnvironments,
  withStage,
  problemsOf,
} from "./pipeline-support";

describe("hostile pipeline definitions", () => {
  const digest = "a".repeat(64);
  const cases: [string, PipelineInput, RegExp][] = [
    // Verification timing.
    [
      "an interval of 0s (count: Infinity)",
      withVerification({ interval: "0s" }),
      /verification\.interval: "0s" is out of range; allowed: 1s to 1h/,
    ],
    [
      "an interval of days",
      withVerification({ interval: "48h" }),
      /verification\.interval: "48h" is out of range; allowed: 1s to 1h/,
    ],
    [
      "an unbounded update timeout",
      withVerification({ updateTimeout: "99999999999h" }),
      /verification\.updateTimeout: "99999999999h" is out of range; allowed: 1s to 24h/,
    ],
    [
      "a preview timeout of 0s",
      withVerification({ previewTimeout: "0s" }),
      /verification\.previewTimeout: "0s" is out of range; allowed: 1s to 24h/,
    ],
    [
      "an initial delay over an hour",
      withVerification({ initialDelay: "61m" }),
      /verification\.initialDelay: "61m" is out of range; allowed: 0s to 1h/,
    ],
    [
      "an update timeout shorter than the interval",
      withVerification({ interval: "10m", updateTimeout: "599s" }),
      /verification\.updateTimeout: "599s" is shorter than verification\.interval "10m"; it must be at least one interval/,
    ],
    [
      "a timeout shorter than the interval",
      withVerification({ interval: "5m", previewTimeout: "1m" }),
      /verification\.previewTimeout: "1m" is shorter than verification\.interval "5m"; it must be at least one interval/,
    ],
    // Pulumi Cloud address: the token travels to it on every measurement.
    [
      "another host as Pulumi Cloud's API",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "https://api.pulumi.example.com" } },
      /pulumi\.apiUrl: "https:\/\/api\.pulumi\.example\.com" is not Pulumi Cloud's API, and the Pulumi access token is sent to it on every verification measurement; allowed: https:\/\/api\.pulumi\.com \(the default\)\. For a self-hosted Pulumi Cloud, leave pulumi\.apiUrl out and set pulumi\.selfHostedApiUrl/,
    ],
    [
      "Pulumi Cloud's console as its API",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "https://app.pulumi.com" } },
      /pulumi\.apiUrl: "https:\/\/app\.pulumi\.com" is not Pulumi Cloud's API/,
    ],
    [
      "Pulumi Cloud's API over http",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "http://api.pulumi.com" } },
      /pulumi\.apiUrl: "http:\/\/api\.pulumi\.com" is not Pulumi Cloud's API/,
    ],
    [
      "a Pulumi API address that is no URL",
      { ...base, pulumi: { ...base.pulumi, apiUrl: "api.pulumi.com" } },
      /pulumi\.apiUrl: (?:"api\.pulumi\.com" is not|must be) a URL; allowed: https:\/\/api\.pulumi\.com/,
    ],
    [
      "an http self-hosted Pulumi API",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "http://pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: "http:\/\/pulumi\.example\.com" is not HTTPS; the Pulumi token would travel in clear\. allowed: the https:\/\/host\[\/path\] address/,
    ],
    [
      "a self-hosted Pulumi API that is no URL",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: "pulumi\.example\.com" is not a URL; allowed: the https:\/\/host\[\/path\] address/,
    ],
    [
      "a self-hosted Pulumi API address with credentials",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://user:pw@pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: must not hold credentials/,
    ],
    [
      "a self-hosted Pulumi API address ending in /",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://pulumi.example.com/" } },
      /pulumi\.selfHostedApiUrl: must not end with "\/"/,
    ],
    [
      "a self-hosted Pulumi API with a query",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://pulumi.example.com/api?org=x" } },
      /pulumi\.selfHostedApiUrl: must not have a query or fragment; allowed: the https:\/\/host\[\/path\] address/,
    ],
    [
      "a self-hosted Pulumi API with a fragment",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://pulumi.example.com/api#top" } },
      /pulumi\.selfHostedApiUrl: must not have a query or fragment/,
    ],
    [
      "a self-hosted Pulumi API with a user name",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://ci@pulumi.example.com" } },
      /pulumi\.selfHostedApiUrl: must not hold credentials; the token comes from a Secret/,
    ],
    [
      "a path on Pulumi Cloud's own API as the self-hosted one",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://api.pulumi.com/v2" } },
      /pulumi\.selfHostedApiUrl: "https:\/\/api\.pulumi\.com\/v2" is Pulumi Cloud's own API; leave pulumi\.selfHostedApiUrl out to use it/,
    ],
    [
      "Pulumi Cloud's own API named as self-hosted",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://api.pulumi.com" } },
      /pulumi\.selfHostedApiUrl: "https:\/\/api\.pulumi\.com" is Pulumi Cloud's own API; leave pulumi\.selfHostedApiUrl out to use it/,
    ],
    // Environments.
    [
      "two environments sharing one Pulumi stack",
      withEnvironments({ copy: { pulumiStack: firstStack } }),
      new RegExp(
        `environments\\.copy\\.pulumiStack: "${escaped(firstStack)}" is also environment "${escaped(firstEnv)}"'s stack; each environment needs its own Pulumi stack`,
      ),
    ],
    [
      "an environment no stage uses",
      withEnvironments({ "zz-unused": { pulumiStack: "zz-unused" } }),
      new RegExp(
        `environments\\.zz-unused: no stage uses it; add stages for it or remove it \\(environments in use: ${escaped(Object.keys(basePipeline.environments).sort().join(", "))}\\)`,
      ),
    ],
    // Stages.
    [
      "requireAll with the same upstream twice",
      withStage({
        ...firstUpdate,
        from: [previewOfFirstUpdate.name, previewOfFirstUpdate.name],
        requireAll: true,
      }),
      new RegExp(
        `stage "${firstUpdate.name}": lists upstream stage "${previewOfFirstUpdate.name}" more than once; list each once`,
      ),
    ],
    [
      "a preview after its update",
      withStage({
        name: "check",
        kind: "preview",
        environment: firstUpdate.environment,
        from: [firstUpdate.name],
      }),
      new RegExp(
        `stage "check": previews environment "${firstUpdate.environment}" after its update stage "${firstUpdate.name}" has applied; a preview must come before its update`,
      ),
    ],
    [
      "a stage named like the Warehouse",
      withStage({ name: names.warehouse, kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      /stage "program": the name is the Warehouse's name; choose another \(reserved: warehouse, program, promote-stack/,
    ],
    [
      'a stage named "warehouse"',
      withStage({ name: "warehouse", kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      /stage "warehouse": the name is the word "from" uses for the Warehouse; choose another/,
    ],
    [
      "a stage named like the PromotionTask",
      withStage({ name: names.promotionTask, kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      /stage "promote-stack": the name is the PromotionTask's name; choose another/,
    ],
    [
      "a stage named like an AnalysisTemplate",
      withStage({
        name: names.analysis.update,
        kind: "gate",
        from: "warehouse",
        approvers: ["dev-approvers"],
      }),
      /stage "pulumi-update": the name is the update AnalysisTemplate's name; choose another/,
    ],
    ...(
      [
        [names.analysis.preview, "the preview AnalysisTemplate's name"],
        [names.gitCredentials, "the git credentials Secret's name"],
        [names.verificationToken, "the verification token Secret's name"],
        [names.verificationScript, "the verification script ConfigMap's name"],
      ] as const
    ).map(([name, owner]): [string, PipelineInput, RegExp] => [
      `a stage named like ${owner}`,
      withStage({ name, kind: "gate", from: "warehouse", approvers: ["dev-approvers"] }),
      new RegExp(`stage "${escaped(name)}": the name is ${escaped(owner)}; choose another`),
    ]),
    // The workspace image.
    [
      "a workspace image tagged latest",
      withFirstProgram({ workspaceImage: "pulumi/pulumi:latest" }),
      ofFirstProgram(
        "workspaceImage",
        /must be an image with a pinned tag or digest; "latest" moves with every release; allowed: .*pulumi\/pulumi@sha256:<64 hex>/,
      ),
    ],
    [
      "a workspace image with a registry and no tag",
      withFirstProgram({ workspaceImage: "ghcr.io:443/pulumi/pulumi" }),
      ofFirstProgram(
        "workspaceImage",
        /must be an image with a pinned tag or digest; "ghcr\.io:443\/pulumi\/pulumi" has neither/,
      ),
    ],
    [
      "a workspace image with a short digest",
      withFirstProgram({ workspaceImage: `pulumi/pulumi@sha256:${digest.slice(1)}` }),
      ofFirstProgram(
        "workspaceImage",
        /must be an image with a pinned tag or digest; "pulumi\/pulumi@sha256:a{63}" is not an image reference/,
      ),
    ],
    [
      "a verification image without a tag",
      withVerification({ image: "node" }),
      /verification\.image: must be an image with a pinned tag or digest; "node" has neither; allowed: an image with a version tag or digest, such as "node:22\.20\.0-alpine3\.22" or "node@sha256:<64 hex>"/,
    ],
    [
      "a verification image tagged latest",
      withVerification({ image: "node:latest" }),
      /verification\.image: must be an image with a pinned tag or digest; "latest" moves with every release/,
    ],
  ];

  it.each(cases)("rejects %s, naming the field or stage and what is allowed", (_, input, message) => {
    expectRefused(input, message);
  });

  const valid: [string, PipelineInput][] = [
    ["the default pipeline", base],
    [
      "a workspace image pinned by digest",
      withFirstProgram({ workspaceImage: `pulumi/pulumi@sha256:${digest}` }),
    ],
    ["a verification image pinned by digest", withVerification({ image: `node@sha256:${digest}` })],
    [
      "a tag and a digest",
      withFirstProgram({ workspaceImage: `pulumi/pulumi:3.270.0-nonroot@sha256:${digest}` }),
    ],
    [
      "a private registry with a port",
      withFirstProgram({ workspaceImage: "registry.example.com:5000/pulumi/pulumi:3.270.0" }),
    ],
    [
      "a self-hosted Pulumi API",
      { ...base, pulumi: { ...base.pulumi, selfHostedApiUrl: "https://pulumi.example.com:8443/api-root" } },
    ],
    [
      "an initial delay of 0s and long timeouts",
      withVerification({ initialDelay: "0s", previewTimeout: "24h", updateTimeout: "2h" }),
    ],
    [
      "the longest interval, with timeouts of one interval",
      withVerification({ interval: "1h", previewTimeout: "60m", updateTimeout: "3600s" }),
    ],
  ];
  it.each(valid)("accepts %s", (_, input) => {
    expect(() => validatePipeline(input)).not.toThrow();
  });

  it("names an unused protected environment once, as unused, not for the preview and approvers it lacks", () => {
    const problems = problemsOf(
      withEnvironments({
        "zz-unused": { pulumiStack: "zz-unused", protected: true, destructiveChangeApprovers: [] },
      }),
    );
    expect(problems.split("\n").filter((line) => line.startsWith("  - "))).toEqual([
      expect.stringMatching(/^ {2}- environments\.zz-unused: no stage uses it;/),
    ]);
  });
});
