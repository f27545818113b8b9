// Where the Kargo UI links each Stage and Freight, and which paths the Warehouse turns into Freight, derived
// from kargo/pipeline.ts alone. test/links evaluates the links as Kargo does; these pin what they point at.
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { environmentStages } from "../lib/pipeline/graph";
import { freightLinks, stageLinks, warehouseSpec } from "../lib/pipeline/promotion";
import type { PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

const pipeline = validatePipeline(definition);

/** The stage names a link's `if` shows it on: `stage.metadata.name in [...]`, a JSON list. */
const shownOn = (condition: string): string[] => {
  const list = /^stage\.metadata\.name in (\[.*\])$/.exec(condition);
  expect(list, condition).not.toBeNull();
  return JSON.parse(list![1]!) as string[];
};

describe("the Kargo UI's links", () => {
  it("links each environment's preview and update stages, and only those, to its stack in Pulumi Cloud", () => {
    const links = stageLinks(pipeline)!;
    expect(links).toHaveLength(Object.keys(pipeline.environments).length);
    for (const [environment, env] of Object.entries(pipeline.environments)) {
      const link = links.find((l) => l.title === `Pulumi stack ${env.pulumiStack}`)!;
      expect(link, environment).toBeDefined();
      expect(link.url).toBe(
        `${pipeline.pulumi.consoleUrl}/${pipeline.pulumi.organization}/${pipeline.pulumi.project}/${env.pulumiStack}`,
      );
      expect(shownOn(link.if!).sort(), environment).toEqual(
        environmentStages(pipeline)
          .filter((s) => s.environment === environment)
          .map((s) => s.name)
          .sort(),
      );
    }
    // Gates run no stack: no link names one.
    const linked = links.flatMap((l) => shownOn(l.if!));
    for (const gate of pipeline.stages.filter((s) => s.kind === "gate"))
      expect(linked).not.toContain(gate.name);
  });

  it("links Freight to its commit on the repository's web page, without the clone URL's trailing .git only", () => {
    const onGitHub = validatePipeline({
      ...definition,
      source: { ...definition.source, repoURL: "https://github.com/acme/acme.github.io.git" },
    });
    expect(freightLinks(onGitHub)!.map((l) => l.url)).toEqual([
      "https://github.com/acme/acme.github.io/commit/{{ (index .freight.commits 0).id }}",
    ]);
  });
});

describe("the Warehouse", () => {
  const withExcludes = (excludePaths: string[]) =>
    validatePipeline({ ...definition, source: { ...definition.source, excludePaths } } as PipelineInput);

  it("leaves out of Freight the paths source.excludePaths names, and sets no filter when it names none", () => {
    const git = (p: ReturnType<typeof validatePipeline>) => warehouseSpec(p).subscriptions[0]!.git!;
    expect(git(withExcludes(["glob:docs/**"])).excludePaths).toEqual(["glob:docs/**"]);
    expect(git(withExcludes([]))).not.toHaveProperty("excludePaths");
  });
});
