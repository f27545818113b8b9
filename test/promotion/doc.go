// Package promotion runs a Stage's promotion the way Kargo v1.11.2 does, on Kargo's own code where it can be
// built here: the steps come from the offline plan exactly as emitted (the Stage's promotion template, its
// PromotionTask inflated as pkg/api/promotion.go does), every config is evaluated with pkg/expressions over
// the context pkg/promotion/evaluator.go builds, checked against the step's own JSON schema and decoded into
// its pkg/x/promotion/runner/builtin type, and the git and YAML steps run through pkg/controller/git and
// pkg/yaml against bare repositories on disk, in the order and with the options of each runner in
// pkg/promotion/runner/builtin (named beside each runner here). That runner package and the expression
// functions (pkg/expressions/function) import Kargo's API module, which the Go proxy does not serve, so the
// few lines gluing the library calls together are this package's; everything they call is Kargo's.
// Where Freight may go next (Stage.IsFreightAvailable, and the joins: control-flow Stages that verify it
// without a Promotion) is modelled in availability.go, after Kargo's own code it names.
package promotion
