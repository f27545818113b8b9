// `npm run stacks` and `npm run docs` in one process (one start of the SDKs instead of two), for personalize.
import { pipeline as definition } from "../../kargo/pipeline";
import { PipelineError } from "../pipeline/schema";
import { validatePipeline } from "../pipeline/validate";
import { writeStacks } from "../pipeline/stacks";
import { ProgramError } from "./plan/harness";
import { writeDocs } from "./docs";

async function main(): Promise<void> {
  const { written, removed } = writeStacks(validatePipeline(definition));
  console.log(
    `stacks: wrote ${written.length} templates${removed.length ? `, removed ${removed.join(", ")}` : ""}`,
  );
  console.log((await writeDocs()).join("\n"));
}

main().catch((err: unknown) => {
  if (!(err instanceof PipelineError) && !(err instanceof ProgramError)) throw err;
  const where = err instanceof ProgramError ? `project ${err.project}: ` : "";
  console.error(`${where}${err.message}`);
  process.exitCode = 1;
});
