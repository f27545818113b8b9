// Package promotion runs each Stage's promotion of the offline plan as Kargo v1.11.2 would, against bare
// git repositories on disk, and Freight availability through the joins.
//
// Upstream code executed here (akuity/kargo v1.11.2 unless named):
//   - pkg/expressions: every ${{ }} in the steps, vars and task inputs, with expr-lang and sprig;
//   - pkg/controller/git: clone, work trees, commit and push, over the git CLI, against the bare repositories;
//   - pkg/yaml (yaml-update), otiai10/copy (copy), pkg/argocd (the order of Argo CD operation phases);
//   - pkg/x/promotion/runner/builtin: each step's config type, and each step's JSON schema
//     (pkg/promotion/runner/builtin/schemas) through xeipuuv/gojsonschema;
//   - pkg/controller/argocd/api/v1alpha1: the Application type the plan's Applications decode into;
//   - charts/kargo/values.yaml: the controller's git identity (controller.gitClient).
//
// Ours, models of upstream code the Go proxy does not serve buildable (Kargo's runner and API packages import
// its `api` module), each following the upstream file named beside it:
//   - engine.go and conditions.go: the local promotion orchestrator (pkg/promotion/local_orchestrator.go,
//     evaluator.go, a step's `if` included), task inflation (pkg/api/promotion.go), the step actor
//     (pkg/api/annotations.go), step aliases (api/v1alpha1/promotion_types.go);
//   - registry.go: runner registration and config validation (pkg/promotion/runner/builtin/validation.go);
//   - one file per step runner: copy.go, file_write.go, git_clear.go, git_clone.go, git_commit.go,
//     git_push.go, set_metadata.go, yaml_update.go, argocd_update.go, fail.go, each naming the runner it
//     follows in pkg/promotion/runner/builtin (file_copier.go, git_cloner.go, argocd_updater.go, ...);
//   - argocd_apps.go: the live Applications and a stand-in for Argo CD's application controller ending each
//     sync operation (argo-cd v3.4.4 controller/appcontroller.go setOperationState): Kargo's argocd-update
//     only reads the operation state it records;
//   - functions.go and freight.go: the Freight functions (pkg/expressions/function/functions.go) and Freight
//     metadata as the API server stores it (api/v1alpha1/freight_types.go); stage_metadata.go: Stage metadata
//     and stageMetadata() (api/v1alpha1/stage_types.go);
//   - availability.go: Stage.IsFreightAvailable and the control-flow Stages (joins)
//     (api/v1alpha1/stage_types.go, pkg/controller/stages/control_flow_stages.go).
//
// Each model's upstream files and their sha256 at our pins are in test/upstream-mirrors.json; the suite
// fails naming the model when one changes (test/internal/upstream).
package promotion
