// The largest pipeline the validation allows (test/largest-pipeline.ts), as far as a promotion into one of its
// stages reads it: the Project, the Warehouse, the promote-stack PromotionTask and each program stage's Stage,
// as kargo/promotionPipeline.ts would register them, and each update stage's own preview and rollback request. For
// test/promotion/largest_test.go (Go), which runs them through Kargo's expressions. Prints one JSON document.
import { warehouseSpec, promotionTaskSpec, stageSpec } from "../../lib/pipeline/promotion";
import { previewsOfUpdates, rollbackRequestName } from "../../lib/pipeline/promotion-rollback";
import { programStages } from "../../lib/pipeline/graph";
import { names } from "../../lib/pipeline/names";
import { largestPipeline } from "../largest-pipeline";

const p = largestPipeline();
const object = (kind: string, name: string, spec?: unknown) => ({
  apiVersion: "kargo.akuity.io/v1alpha1",
  kind,
  metadata: { name, namespace: p.project },
  ...(spec === undefined ? {} : { spec }),
});

process.stdout.write(
  JSON.stringify({
    objects: [
      object("Project", p.project),
      object("Warehouse", names.warehouse, warehouseSpec(p)),
      object("PromotionTask", names.promotionTask, promotionTaskSpec(p, "argocd")),
      ...programStages(p).map((s) => object("Stage", s.name, stageSpec(p, s))),
    ],
    previews: Object.fromEntries(previewsOfUpdates(p).map(([u, s]) => [u.name, s.name])),
    requests: Object.fromEntries(
      previewsOfUpdates(p).map(([u]) => [u.name, rollbackRequestName(u.environment)]),
    ),
  }),
);
