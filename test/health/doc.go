// Package health runs the Argo CD health check we install for PKO Stacks over the statuses PKO writes, and
// answers with the health Argo CD would report and so the health Kargo sees for a Stage.
//
// Upstream code executed here: gopher-lua v1.1.1 and layeh.com/gopher-json (the Lua VM and JSON encoding
// Argo CD uses), the apimachinery condition helpers PKO sets its conditions with. Our health script itself
// (the product) runs for real.
//
// Ours, models, each following the upstream file named beside it:
//   - vm.go: how Argo CD sets the VM up and reads its answer (argo-cd v3.4.4 util/lua/lua.go; its read-only
//     `os`, util/lua/oslib_safe.go, is left out);
//   - override.go: which argocd-cm keys hold a resource override (argo-cd v3.4.4 util/settings/settings.go);
//   - stack.go: PKO's Stack status and conditions (pulumi-kubernetes-operator v2.9.0
//     operator/api/pulumi/v1/stack_types.go, operator/api/pulumi/shared/stack_types.go);
//   - pko.go: PKO's Stack status writer, step by step (pulumi-kubernetes-operator v2.9.0
//     operator/internal/controller/pulumi/stack_controller.go, operator/internal/controller/auto/workspace_controller.go).
//
// The tests' expectations of what Kargo makes of a health follow akuity/kargo v1.11.2
// pkg/health/checker/builtin/argocd.go. Every model's upstream files and their sha256 are in
// test/upstream-mirrors.json (test/internal/upstream).
package health
