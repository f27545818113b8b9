// What the verification templates are made of. What they decide is run for real: test/analysis drives every
// AnalysisTemplate of the plan through Argo Rollouts v1.9.0's analysis controller and web metric provider
// against a Pulumi Cloud stand-in (`npm run test:engines`).
import { expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { environmentStages } from "../lib/pipeline/graph";
import { stageSpec } from "../lib/pipeline/promotion";
import { analysisTemplateSpec, pulumiApiUrl, type AnalysisTemplateKind } from "../lib/pipeline/verification";
import { PULUMI_CLOUD_API } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

const pipeline = validatePipeline(definition);
const kinds: AnalysisTemplateKind[] = ["update", "preview", "protectedPreview"];
const metrics = (p = pipeline) => kinds.flatMap((k) => analysisTemplateSpec(p, k).metrics!);

it("passes the promoted commit to every verification as a quoted string, so an all-digit ID stays a string", () => {
  // Kargo parses an unquoted expression result that looks like a number into a number, and then refuses it
  // as an AnalysisRun argument (akuity/kargo v1.11.2 pkg/rollouts/analysis_run_builder.go).
  const args = environmentStages(pipeline).flatMap((s) => stageSpec(pipeline, s).verification!.args!);
  const commits = args.filter((a) => a.name === "commit").map((a) => a.value);
  expect(commits).toHaveLength(environmentStages(pipeline).length);
  for (const value of commits)
    expect(value).toBe(`\${{ quote(commitFrom("${pipeline.source.repoURL}").ID) }}`);
  // Web metrics get the whole body: no jsonPath that would turn `updates: null` into an error.
  for (const m of metrics()) expect(m.provider.web!.jsonPath).toBeUndefined();
});

it("keeps every condition readable: under 400 characters, each naming the newest operation once", () => {
  for (const m of metrics()) {
    for (const c of [m.successCondition!, m.failureCondition!]) {
      expect(c.length, c).toBeLessThan(400);
      expect(c.match(/sortBy\(/g), c).toHaveLength(1);
    }
  }
});

it("asks for one page of the newest operations, as many as verification.pageSize says", () => {
  for (const kind of kinds) {
    for (const m of analysisTemplateSpec(pipeline, kind).metrics!) {
      const url = new URL(m.provider.web!.url.replace(/\{\{args\.[a-z-]+\}\}/g, "x"), "https://x");
      expect(url.searchParams.get("pageSize")).toBe(String(pipeline.verification.pageSize));
      expect(url.searchParams.get("page")).toBe("1");
      if (kind !== "update") expect(url.searchParams.get("asc")).toBe("false");
    }
  }
});

it("sends the token to Pulumi Cloud's API, or to the self-hosted one pulumi.selfHostedApiUrl names", () => {
  const apiUrl = (p = pipeline) =>
    analysisTemplateSpec(p, "update").args!.find((a) => a.name === "api-url")!.value;
  expect(apiUrl()).toBe(PULUMI_CLOUD_API);
  const selfHosted = validatePipeline({
    ...definition,
    pulumi: { ...definition.pulumi, selfHostedApiUrl: "https://pulumi-api.example.com" },
  });
  expect(apiUrl(selfHosted)).toBe("https://pulumi-api.example.com");
  expect(pulumiApiUrl(selfHosted)).toBe("https://pulumi-api.example.com");
});
