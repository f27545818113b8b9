// `npm run codeowners [-- --stack NAME]`: writes .github/CODEOWNERS from kargo:githubPathOwners of the kargo
// stack NAME (kargo/Pulumi.NAME.yaml; example by default) and the files that define the path
// (lib/codeowners.ts). The kargo deploy refuses a CODEOWNERS that is not what this writes.
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { pipeline as definition } from "../../kargo/pipeline";
import { kargoConfigSchema } from "../../kargo/config";
import { CODEOWNERS, codeownersFile, pathPatterns, writeCodeowners } from "../codeowners";
import { validatePipeline } from "../pipeline/validate";
import { readStackConfig, repoRoot } from "./plan/projects";

/** The owners the kargo stack `stack` names, and CODEOWNERS's text for them, or the problem with them. */
export function codeownersFor(stack: string): { owners: string[]; text: string } | { problem: string } {
  const file = path.join(repoRoot, "kargo", `Pulumi.${stack}.yaml`);
  if (!fs.existsSync(file)) return { problem: `--stack: kargo/Pulumi.${stack}.yaml does not exist` };
  const owners = kargoConfigSchema.shape.githubPathOwners.safeParse(
    readStackConfig("kargo", file).values["kargo:githubPathOwners"],
  );
  if (!owners.success)
    return {
      problem: owners.error.issues
        .map((i) => `kargo:githubPathOwners${i.path.map((p) => `[${String(p)}]`).join("")}: ${i.message}`)
        .join("\n"),
    };
  const pipeline = validatePipeline(definition);
  return {
    owners: owners.data,
    text: codeownersFile(pathPatterns(repoRoot, pipeline.stacks.dir), owners.data),
  };
}

if (require.main === module) {
  const { values } = parseArgs({ options: { stack: { type: "string", default: "example" } } });
  const result = codeownersFor(values.stack!);
  if ("problem" in result) {
    console.error(result.problem);
    process.exitCode = 2;
  } else {
    writeCodeowners(repoRoot, validatePipeline(definition).stacks.dir, result.owners);
    console.log(`wrote ${CODEOWNERS} for the kargo stack ${values.stack}`);
  }
}
