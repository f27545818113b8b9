// The largest pipeline the validation allows (test/largest-pipeline.ts, made from lib/pipeline/schema.ts's
// limits), for test/kube (Go): the admission objects kargo would register for it (lib/pipeline/admission.ts,
// the function kargo/promotionPipeline.ts calls), the Stack manifest of every program stage and drift check (what
// `npm run stacks` writes and a promotion copies to the stage's branch) with the Application that applies
// it, and what the plan becomes when it changes: the first stage's policy after the first program's
// workspace image changed. Also its approval admission (lib/pipeline/approval-admission.ts, several policies
// at this size) and each Kargo stage's kind and Freight sources. Prints one JSON document on stdout.
import { stackAdmission, stageAdmissionName } from "../../lib/pipeline/admission";
import { approvalAdmission, approvalAdmissionOf } from "../../lib/pipeline/approval-admission";
import { programStages, runStages } from "../../lib/pipeline/graph";
import { stackObjectName } from "../../lib/pipeline/names";
import { WORKSPACE_IMAGES } from "../../lib/pipeline/schema";
import { stackManifest } from "../../lib/pipeline/stack-manifest";
import { driftStackManifest, driftStages } from "../../lib/pipeline/drift";
import { stageSpec } from "../../lib/pipeline/promotion";
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

const policyOf = approvalAdmissionOf(p);

process.stdout.write(
  JSON.stringify({
    namespace: p.stacks.namespace,
    admission: stackAdmission(p),
    stacks: [
      ...programStages(p).map((s) => ({
        application: stackObjectName(p, s.name),
        manifest: stackManifest(p, s),
      })),
      // Each update stage's drift check, which the stage's own Application applies (lib/pipeline/drift.ts).
      ...driftStages(p).map((s) => ({
        application: stackObjectName(p, s.name),
        manifest: driftStackManifest(p, s),
      })),
    ],
    approvals: {
      project: p.project,
      // The policy judging each stage's approvals: the Go side checks each policy's boundary stages and kinds.
      admission: approvalAdmission(p),
      stages: runStages(p).map((s) => ({
        name: s.name,
        kind: s.kind,
        policy: policyOf(s.name),
        environment: s.kind === "gate" ? "" : s.environment,
        program: s.kind === "gate" || s.kind === "join" ? "" : s.program,
        spec: { requestedFreight: stageSpec(p, s).requestedFreight },
      })),
    },
    replanned: stackAdmission(replanned).find(
      (o) => o.kind === "ValidatingAdmissionPolicy" && o.metadata.name === stageAdmissionName(p, first.name),
    ),
  }),
);
