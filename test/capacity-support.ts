// A fork's pipeline with more environments, added as docs/make-it-yours.md documents ("Add an environment"):
// each behind a gate of its own after the last update stage, with a stack config in every program's folder
// (written into a copy of the programs, so validation reads them as it reads the fork's).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { repoRoot } from "../lib/cli/plan/projects";
import type { Pipeline, PipelineInput } from "../lib/pipeline/schema";
import { validatePipeline } from "../lib/pipeline/validate";

type StageInput = PipelineInput["stages"][number];

/** `definition` with `count` environments more, chained after its last update stage, or side by side after it. */
export function withMoreEnvironments(
  definition: PipelineInput,
  count: number,
  layout: "chained" | "side by side" = "chained",
): Pipeline {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "more-environments-"));
  for (const program of definition.programs)
    fs.cpSync(path.join(repoRoot, program.dir), path.join(copy, program.dir), { recursive: true });
  const last = [...definition.stages].reverse().find((s) => s.kind === "update")!.name;
  const environments = { ...definition.environments };
  const stages: StageInput[] = [...definition.stages];
  let after = last;
  for (let i = 1; i <= count; i++) {
    const env = `extra${i}`;
    environments[env] = { pulumiStack: env, destructiveChangeApprovers: ["extra-approvers"] };
    for (const program of definition.programs)
      fs.writeFileSync(
        path.join(copy, program.dir, `Pulumi.${env}.yaml`),
        "config:\n  aws:region: us-west-2\n",
      );
    stages.push(
      { name: `approvalgate${env}`, kind: "gate", from: [after], approvers: ["extra-approvers"] },
      { name: `${env}preview`, kind: "preview", environment: env, from: [`approvalgate${env}`] },
      { name: env, kind: "update", environment: env, from: [`${env}preview`] },
    );
    if (layout === "chained") after = env;
  }
  return validatePipeline({ ...definition, environments, stages }, { repoRoot: copy });
}
