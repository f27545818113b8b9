// Where the Kargo UI links each Stage and Freight, and which paths the Warehouse turns into Freight, derived
// from kargo/pipeline.ts alone. test/links evaluates the links as Kargo does; these pin what they point at.
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { programStages, runStages } from "../lib/pipeline/graph";
import { freightLinks, stageLinks, warehouseSpec } from "../lib/pipeline/promotion";
import type { Pipeline, PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { withExtraProgram } from "./kargo-support";

const pipeline = validatePipeline(definition);

/** The stage names a link's `if` shows it on: `stage.metadata.name in [...]`, a JSON list. */
const shownOn = (condition: string): string[] => {
  const list = /^stage\.metadata\.name in (\[.*\])$/.exec(condition);
  expect(list, condition).not.toBeNull();
  return JSON.parse(list![1]!) as string[];
};

describe("the Kargo UI's links", () => {
  /** One link per program and environment, to its stack, shown exactly on that program's stages there. */
  const expectStackLinks = (p: Pipeline) => {
    const links = stageLinks(p)!;
    expect(links).toHaveLength(p.programs.length * Object.keys(p.environments).length);
    for (const x of p.programs) {
      for (const [environment, env] of Object.entries(p.environments)) {
        const where = `${x.name} in ${environment}`;
        const url = `${p.pulumi.consoleUrl}/${p.pulumi.organization}/${x.project}/${env.pulumiStack}`;
        const found = links.filter((l) => l.url === url);
        expect(found, where).toHaveLength(1);
        const [link] = found;
        expect(link!.title, where).toBe(`Pulumi stack ${x.project}/${env.pulumiStack}`);
        const stages = programStages(p)
          .filter((s) => s.program === x.name && s.environment === environment)
          .map((s) => s.name);
        expect(stages.length, where).toBeGreaterThan(0);
        expect(shownOn(link!.if!).sort(), where).toEqual(stages.sort());
      }
    }
    // Gates and joins run no stack: no link names one.
    const linked = links.flatMap((l) => shownOn(l.if!));
    expect(new Set(linked).size).toBe(linked.length);
    for (const s of runStages(p).filter((s) => s.kind === "gate" || s.kind === "join"))
      expect(linked, s.name).not.toContain(s.name);
  };

  it("links each program's preview and update stages of an environment, and only those, to its stack in Pulumi Cloud", () => {
    expectStackLinks(pipeline);
    expectStackLinks(withExtraProgram(pipeline));
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
