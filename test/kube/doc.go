// Package kube applies everything the platform emits to a real Kubernetes API server (kube-apiserver v1.34.3
// and etcd, built by test/internal/apiserver) and asks its RBAC authorizer who can do what: the schemas,
// CEL rules, admission policies and RBAC decided by Kubernetes itself rather than by our reading of them.
//
// Upstream code executed here: kube-apiserver and etcd, with the upstream CRDs at our pins (Kargo and Argo
// Rollouts at their test/go.mod versions, Argo CD at lib/crds/sources.ts's, PKO's from ../shared/crds/pko).
// Kargo's admission webhooks and controllers are not here (their API module is not served, so they cannot
// be built).
//
// Ours, models, each following the upstream file named beside it:
//   - reach.go: how Kargo's API server authorizes a signed-in user, the union of the permissions of the
//     project's ServiceAccounts whose claims match (akuity/kargo v1.11.2 pkg/server/kubernetes/client.go);
//   - intent.go: which Stages are control-flow Stages, joins (akuity/kargo v1.11.2 api/v1alpha1/stage_types.go);
//   - argocd.go: the tracking annotation Argo CD writes on what it applies (argo-cd v3.4.4
//     util/argo/resource_tracking.go, controller/state.go), which the Stacks' admission policies read;
//   - pko.go: the Stack PKO's finalizer updates write back, through its Go types (pulumi-kubernetes-operator
//     v2.9.0 operator/internal/controller/pulumi/stack_controller.go, operator/api/pulumi/shared/stack_types.go).
//
// largest.ts hands the Go side the largest pipeline the validation allows (test/largest-pipeline.ts): its
// admission objects and Stacks, as lib/pipeline derives them for kargo and stacks/.
//
// workloads_test.go starts no server: it derives every resource whose objects run a pod under a ServiceAccount
// they name (the kinds of k8s.io/api v0.34.3 holding a PodSpec, by reflection; the pinned CRDs naming a
// serviceAccountName) and checks cluster-setup's stackRbacRules check refuses writing each.
//
// corpus.go only generates inputs (each emitted object with one thing made wrong); the API server decides.
// Every model's upstream files and their sha256 are in test/upstream-mirrors.json (test/internal/upstream).
package kube
