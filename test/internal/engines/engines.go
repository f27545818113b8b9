// Package engines names the upstream code the harness runs, so that go.mod pins it even while no test
// imports a package yet. The versions are the ones the platform installs:
//   - Argo Rollouts v1.9.0 (the argo-rollouts chart 2.41.0): the analysis controller and web metric provider,
//     with expr 1.15.5 (github.com/antonmedv/expr) for conditions;
//   - Kargo v1.11.2: expressions (expr-lang 1.17.8), the git client, YAML updates, path patterns and
//     every built-in step's config type;
//   - gopher-lua v1.1.1, the Lua VM Argo CD v3.4.4 runs health checks in.
package engines

import (
	_ "github.com/akuity/kargo/pkg/controller/git"
	_ "github.com/akuity/kargo/pkg/expressions"
	_ "github.com/akuity/kargo/pkg/pattern"
	_ "github.com/akuity/kargo/pkg/x/promotion/runner/builtin"
	_ "github.com/akuity/kargo/pkg/yaml"
	_ "github.com/argoproj/argo-rollouts/analysis"
	_ "github.com/argoproj/argo-rollouts/metricproviders/webmetric"
	_ "github.com/argoproj/argo-rollouts/pkg/client/clientset/versioned/fake"
	_ "github.com/yuin/gopher-lua"
)
