// Package analysis runs every AnalysisTemplate the kargo plan emits as Kargo would have a Stage verified:
// Kargo builds the AnalysisRun, Argo Rollouts runs it, one Job per metric runs our verification script,
// which asks Pulumi Cloud about the stack.
//
// Upstream code executed here: Argo Rollouts v1.9.0's analysis controller and job metric provider (with its
// fake clientsets and informers, and the condition language its metrics use), Kargo v1.11.2's
// pkg/expressions for the run's arguments. Our verification script (the product) runs for real, in node.
//
// Ours, models, each following the upstream file named beside it:
//   - jobs.go: the kube Job controller, and only it: a Job's pod run as node, its exit code through the
//     Job's podFailurePolicy and backoffLimit, its activeDeadlineSeconds (kubernetes v1.34.3
//     pkg/controller/job/job_controller.go, pkg/controller/job/pod_failure_policy.go), on the pod's clock
//     (testdata/podclock.mjs), which passes only while the pod waits on its timers, so a busy machine
//     never decides a verdict;
//   - run.go: Kargo's AnalysisRun builder (akuity/kargo v1.11.2 pkg/rollouts/analysis_run_builder.go, with
//     the expression environment of pkg/controller/stages/regular_stages.go and commitFrom of
//     pkg/expressions/function/functions.go);
//   - controller.go: the analysis controller set up as Argo Rollouts' own tests set it up (argo-rollouts
//     v1.9.0 analysis/controller_test.go, newController), on a faster clock;
//   - pulumicloud.go and events.go: a stand-in for Pulumi Cloud's REST API (stack updates and previews, an
//     update by version, an operation's engine events in pages by continuationToken), on the routes of
//     pulumi-cloud-sdk v1.20261110.0 apiclient/stacks_.go, answering with that SDK's own apitype types; the
//     events of an operation as Pulumi's engine emits them (one resourcePreEvent per step, a summary
//     counting the logical ones: pulumi/pulumi pkg/engine/update.go and events.go, read at v3.259.0 and
//     v3.274.1, which bracket the CLI pin v3.270.0).
//
// The scenarios of verdicts_test.go (stops per risk class, an update compared with its preview, paging, a
// stop through its approval to both update outcomes) and of rollback_test.go (a rollback's update compared
// with its own preview against the state it changed, never the commit's first) run the Job's modules
// (kargo/verification) as the plan ships them in its ConfigMap.
//
// Every model's upstream files and their sha256 are in test/upstream-mirrors.json (test/internal/upstream).
package analysis
