// A whole rollback of one environment, for test/promotion/rollback_scenario_test.go (Go), of the example
// pipeline or of a generated fork whose programs form a diamond in several runtimes (test/generated-forks.ts):
//
//   rollback-scenario.ts plan <example|diamond> <argocd namespace> <argocd project>
//     the environment (the last one it can take back), the steps `npm run rollback` takes there (lib/pipeline/rollback.ts,
//     in its order), every program's dependencies, the request's name and the stacks folder; for the fork, also
//     the Kargo objects kargo/promotionPipeline.ts would register (Project, Warehouse, promote-stack, each
//     program stage's Stage and Application) and its Stack templates (what `npm run stacks` writes).
//   rollback-scenario.ts program <example|diamond> <environment> <program> <to> <from>
//     `npm run rollback -- <environment> --to <to> --program <program>`: its arguments read as lib/cli/rollback.ts
//     reads them, the steps lib/pipeline/rollback.ts returns for them and the request lib/rollback.ts writes
//     (each update stage running Freight <from> before).
//   rollback-scenario.ts history <example|diamond> <environment> <repository>
//     `npm run history` of the fork's environment, read from the repository's refs/heads/stage/* (the
//     command reads only kargo/pipeline.ts; this is lib/cli/history.ts with the fork's definition).
//
// Prints one JSON document (plan, program) or the history's text.
import { pipeline as definition } from "../../kargo/pipeline";
import { environmentHistory, formatHistory, gitLog } from "../../lib/history";
import { programStages } from "../../lib/pipeline/graph";
import { names, stackObjectName } from "../../lib/pipeline/names";
import { promotionTaskSpec, stageSpec, warehouseSpec } from "../../lib/pipeline/promotion";
import { previewsOfUpdates } from "../../lib/pipeline/promotion-rollback";
import { rollbackPlan, rollbackRequestName } from "../../lib/pipeline/rollback";
import type { Pipeline } from "../../lib/pipeline/schema";
import { applicationSpec } from "../../lib/pipeline/stack-manifest";
import { renderStacks } from "../../lib/pipeline/stacks";
import { validatePipeline } from "../../lib/pipeline/validate";
import { recordData } from "../../lib/rollback";
import { parseRollbackArgs } from "../../lib/rollback-args";
import { removeTempDirs } from "../checkout-support";
import { validatedFork } from "../generated-forks";

const [mode, which, ...rest] = process.argv.slice(2);
const pipelines: Record<string, () => Pipeline> = {
  example: () => validatePipeline(definition),
  // As test/rollback-plan.test.ts: four programs, one, two after it, one after both, each in its own runtime.
  diamond: () => validatedFork({ environments: 2, layout: "chained", programs: 4, dependencies: "diamonds" }),
};
if (!which || !Object.hasOwn(pipelines, which) || !["plan", "program", "history"].includes(mode!)) {
  console.error("usage: rollback-scenario.ts plan|program|history example|diamond ...");
  process.exit(2);
}
const p = pipelines[which]!();
// The fork's checkout served its validation only.
removeTempDirs();

if (mode === "history") {
  const [environment, repository] = rest;
  process.stdout.write(
    formatHistory(environment!, environmentHistory(p, environment!, gitLog(repository!, "refs/heads/"))),
  );
} else if (mode === "program") {
  const [environment, program, to, from] = rest;
  const message = 'the release broke "uploads"\nroll back';
  const a = parseRollbackArgs([environment!, "--to", to!, "--program", program!, "--message", message]);
  const plan = rollbackPlan(p, a.environment, a.program);
  const running = Object.fromEntries(plan.steps.map((s) => [s.update, from!]));
  const request = recordData(
    plan,
    { kind: "rollback", message: a.message },
    a.to!,
    running,
    "carol@example.com",
    new Date("2026-11-28T11:00:00Z"),
  );
  process.stdout.write(JSON.stringify({ steps: plan.steps, request }));
} else {
  const [argocdNamespace, argocdProject] = rest;
  // The last environment whose every program `npm run rollback` can take back (a preview, then an update that
  // takes Freight from it, guarded by the task); none: an empty list of steps, which the test says it skips.
  const guarded = new Set(previewsOfUpdates(p).map(([u, s]) => `${u.name} ${s.name}`));
  const plans = Object.keys(p.environments).flatMap((e) => {
    try {
      const plan = rollbackPlan(p, e);
      return plan.steps.every((x) => guarded.has(`${x.update} ${x.preview}`)) ? [plan] : [];
    } catch {
      return [];
    }
  });
  const environment = plans.at(-1)?.environment ?? "";
  const object = (apiVersion: string, kind: string, name: string, namespace: string, spec: unknown) => ({
    apiVersion,
    kind,
    metadata: { name, namespace },
    spec,
  });
  const kargo = "kargo.akuity.io/v1alpha1";
  const fork =
    which === "example"
      ? {}
      : {
          objects: [
            object(kargo, "Project", p.project, "", {}),
            object(kargo, "Warehouse", names.warehouse, p.project, warehouseSpec(p)),
            object(
              kargo,
              "PromotionTask",
              names.promotionTask,
              p.project,
              promotionTaskSpec(p, argocdNamespace!),
            ),
            ...programStages(p).flatMap((s) => [
              object(kargo, "Stage", s.name, p.project, stageSpec(p, s)),
              {
                ...object(
                  "argoproj.io/v1alpha1",
                  "Application",
                  stackObjectName(p, s.name),
                  argocdNamespace!,
                  applicationSpec(p, s, { argocdProject: argocdProject! }),
                ),
                metadata: {
                  name: stackObjectName(p, s.name),
                  namespace: argocdNamespace,
                  annotations: { "kargo.akuity.io/authorized-stage": `${p.project}:${s.name}` },
                },
              },
            ]),
          ],
          stacks: Object.fromEntries(renderStacks(p)),
        };
  process.stdout.write(
    JSON.stringify({
      environment,
      steps: plans.at(-1)?.steps ?? [],
      programs: p.programs.map((x) => ({ name: x.name, dependsOn: x.dependsOn })),
      request: environment && rollbackRequestName(environment),
      stacksDir: p.stacks.dir,
      runtimes: [...new Set(p.programs.map((x) => x.runtime))],
      ...fork,
    }),
  );
}
