// Package pulumiengine runs Pulumi's own deployment engine (github.com/pulumi/pulumi/pkg/v3 v3.274.1:
// engine.Update for previews and updates, as pkg/engine/lifecycletest/framework drives it in Pulumi's own
// tests, with deploytest's plugin host) over programs with fake AWS and Kubernetes providers, converts its
// events as the CLI uploads them (pkg/backend/display ConvertEngineEvent; which events, as
// pkg/backend/httpstate/state.go chooses them) into the EngineEvent Pulumi Cloud's events route answers
// (github.com/pulumi/pulumi-cloud-sdk/go apitype), and has the verification Job's own code
// (kargo/verification, in node) judge each stream under every environment's STOP_ON from the offline plan.
//
// Ours: the providers (cloud_test.go: which inputs replace a resource, which outputs are unknown at preview,
// as pulumi-aws's Terraform schema and pulumi-kubernetes's immutable fields have them) and the programs
// (program_test.go, as an SDK registers resources). The corpus (corpus_test.go) is typical programs a team
// promotes; its figure and an example of each case are written into docs/security-and-approvals.md
// (`npm run docs:engine`) and checked there (docs_test.go).
package pulumiengine
