// The programs the pipeline promotes (kargo/pipeline.ts `programs`, each a folder of programs/) as the
// definition declares them. Their Stack templates are promoted-program.test.ts's; what a program's own files
// declare, and the AWS access beside it, its own tests' (programs/<name>/*.test.ts).
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { pipeline as definition } from "../kargo/pipeline";
import { WORKSPACE_IMAGES } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";
import { repoRoot } from "../lib/cli/plan/projects";
import { declaredImage, projectFile } from "./kargo-support";

const pipeline = validatePipeline(definition);

describe("the promoted programs", () => {
  it("are each declared with the project and runtime of their own Pulumi.yaml, and have a config file per environment", () => {
    expect(new Set(pipeline.programs.map((x) => x.project)).size).toBe(pipeline.programs.length);
    for (const x of pipeline.programs) {
      const file = projectFile(repoRoot, x);
      expect(x.project, x.name).toBe(file.name);
      expect(x.runtime, x.name).toBe(file.runtimeName);
      expect(x.workspaceImage, x.name).toBe(declaredImage(x) ?? WORKSPACE_IMAGES[file.runtimeName]);
      for (const env of Object.values(pipeline.environments))
        expect(fs.existsSync(path.join(repoRoot, x.dir, `Pulumi.${env.pulumiStack}.yaml`)), x.name).toBe(
          true,
        );
    }
  });
});
