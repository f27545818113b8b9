// Package differential tests the rules the pipeline library re-implements in TypeScript against the upstream
// code that really decides them. Inputs are generated; any disagreement is a bug in ours.
//
// Upstream code executed here: which paths Kargo's Warehouse include/exclude filters select (akuity/kargo
// v1.11.2 pkg/pattern), what Go's regexp accepts, what git accepts as a branch name (git check-ref-format)
// and Kargo's branch schema, and how a container runtime parses an image reference (distribution/reference
// v0.6.0). Ours, and under test: lib/pipeline (selectors.ts, check-values.ts), run by ours.ts in Node.
// No model of upstream code lives here.
package differential
