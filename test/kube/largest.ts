// The largest pipeline the validation allows (test/largest-pipeline.ts, made from lib/pipeline/schema.ts's
// limits), for test/kube (Go): the admission objects kargo would register for it (lib/pipeline/admission.ts,
// the function kargo/promotionPipeline.ts calls), the Stack manifest of every program stage (what
// `npm run stacks` writes and a promotion copies to the stage's branch) with the Application that applies
// it, and what the plan becomes when it changes: the first stage's policy after the first program's
// workspace image changed. Prints one JSON document on stdout.
import { stackAdmission, stageAdmissionName } from "../../lib/pipeline/admission";
import { programStages } from "../../lib/pipeline/graph";
import { stackObjectName } from "../../lib/pipeline/names";
import { WORKSPACE_IMAGES } from "../../lib/pipeline/schema";
import { stackManifest } from "../../lib/pipeline/stack-manifest";
import { largestDefinition, largestPipeline } from "../largest-pipeline";

const definition = largestDefinition();
const p = largestPipeline(definition);
const first = programStages(p)[0]!;
const image = p.programs.find((x) => x.name === first.program)!.workspaceImage;
const other = Object.values(WORKSPACE_IMAGES).find((i) => i !== image)!;
const replanned = largestPipeline({
  ...definition,
  programs: definition.programs.map((x) => (x.name === first.program ? { ...x, workspaceImage: other } : x)),
});

process.stdout.write(
  JSON.stringify({
    namespace: p.stacks.namespace,
    admission: stackAdmission(p),
    stacks: programStages(p).map((s) => ({
      application: stackObjectName(p, s.name),
      manifest: stackManifest(p, s),
    })),
    replanned: stackAdmission(replanned).find(
      (o) => o.kind === "ValidatingAdmissionPolicy" && o.metadata.name === stageAdmissionName(p, first.name),
    ),
  }),
);
