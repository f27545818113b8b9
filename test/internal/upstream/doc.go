// Package upstream is the tripwire on the harness's models. Every part of test/ that re-implements upstream
// code it cannot build here (Kargo's step runners, PKO's status writer, the kube Job controller, Argo CD's
// application controller, ...) is listed in test/upstream-mirrors.json with the sha256 of each upstream file
// it mirrors, at the version we pin. The test hashes each file again at the pin as it stands now: from the
// module cache for a module test/go.mod requires (or whose archive the proxy serves), else from the git
// snapshot `npm run upstream` fetches (snapshot.go: $UPSTREAM_MIRROR_DIR, or the user's cache folder). A
// changed file fails the suite, naming the model and the upstream file to re-read. The snapshots are
// optional: where one is absent (a machine that never ran the command) that file's check is skipped, naming
// the command.
//
// This package executes no upstream code; it only reads upstream files.
package upstream
