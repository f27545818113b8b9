// Package links evaluates the deep links the ProjectConfig gives the Kargo UI the way Kargo v1.11.2 does.
//
// Upstream code executed here: expr-lang for each link's `if`, Go's text/template with sprig's generic
// functions for its `url`. Ours, a model: links.go, the evaluation around them, both over the Stage or
// Freight as JSON under "stage" or "freight" (akuity/kargo v1.11.2 pkg/deeplinks/deeplinks.go, EvaluateLinks
// and toContextMap; that package imports Kargo's API module, which cannot be built here). Its upstream file
// and sha256 are in test/upstream-mirrors.json (test/internal/upstream).
package links
