package promotion

import (
	"fmt"
	"maps"

	"github.com/akuity/kargo/pkg/urls"
	"github.com/expr-lang/expr"
)

// The expression functions a step config may call that live in Kargo's API-dependent package
// (akuity/kargo v1.11.2 pkg/expressions/function/functions.go), answered from the test's Freight with the
// signatures and result shapes declared there. Utility functions (semver*), Secrets and shared ConfigMaps
// are not offered: nothing we emit calls them, and an expression that did would fail to compile here.
type functions struct {
	project    string
	requested  []requestedFreight
	freight    []*Freight
	warehouses map[string][]string // Warehouse name → the repo URLs of its git subscriptions
	store      *FreightStore
	stages     *FreightStore                // Stage metadata (stage_metadata.go)
	configMaps map[string]map[string]string // the project namespace's ConfigMaps, by name
}

// requestedFreight is one entry of a Stage's spec.requestedFreight: the origin it takes Freight from.
type requestedFreight struct {
	Origin FreightOrigin `json:"origin"`
}

func (f *functions) options() []expr.Option {
	return []expr.Option{
		expr.Function("warehouse", f.warehouse, new(func(name string) FreightOrigin)),
		expr.Function(
			"commitFrom",
			f.commitFrom,
			new(func(repoURL string, origin FreightOrigin) GitCommit),
			new(func(repoURL string) GitCommit),
		),
		expr.Function("freightMetadata", f.freightMetadata, new(func(freightRefName string) map[string]any)),
		expr.Function("configMap", f.configMap, new(func(name string) map[string]string)),
		expr.Function("stageMetadata", f.stageMetadata, new(func(stageName string) map[string]any)),
	}
}

// warehouse is functions.go warehouse(): a FreightOrigin of kind Warehouse.
func (f *functions) warehouse(a ...any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("expected 1 argument, got %d", len(a))
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be string, got %T", a[0])
	}
	if name == "" {
		return nil, fmt.Errorf("name must not be empty")
	}
	return FreightOrigin{Kind: "Warehouse", Name: name}, nil
}

// commitFrom answers as pkg/controller/freight/finder.go FindCommit: without an origin, the one requested
// origin whose Warehouse subscribes to the repository (two are an error), then that origin's Freight's
// commit from the repository, a *GitCommit, or nil when there is none.
func (f *functions) commitFrom(a ...any) (any, error) {
	if len(a) == 0 || len(a) > 2 {
		return nil, fmt.Errorf("expected 1-2 arguments, got %d", len(a))
	}
	repoURL, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("first argument must be string, got %T", a[0])
	}
	var origin *FreightOrigin
	if len(a) == 2 {
		o, ok := a[1].(FreightOrigin)
		if !ok {
			return nil, fmt.Errorf("second argument must be FreightOrigin, got %T", a[1])
		}
		origin = &o
	}
	repoURL = urls.NormalizeGit(repoURL)
	if origin == nil {
		for _, r := range f.requested {
			subscriptions, ok := f.warehouses[r.Origin.Name]
			if !ok {
				return nil, fmt.Errorf("Warehouse %q not found in namespace %q", r.Origin.Name, f.project)
			}
			for _, sub := range subscriptions {
				if urls.NormalizeGit(sub) == repoURL {
					if origin != nil {
						return nil, fmt.Errorf("multiple requested Freight could potentially provide a "+
							"commit from repo %s; please update promotion steps to disambiguate", repoURL)
					}
					o := r.Origin
					origin = &o
				}
			}
		}
	}
	if origin == nil {
		return (*GitCommit)(nil), nil
	}
	for _, fr := range f.freight {
		if fr.Origin == *origin {
			for i := range fr.Commits {
				if urls.NormalizeGit(fr.Commits[i].RepoURL) == repoURL {
					return &fr.Commits[i], nil
				}
			}
		}
	}
	return (*GitCommit)(nil), nil
}

// freightMetadata is functions.go freightMetadata(): the Freight's status.metadata, each value decoded
// from JSON; nil for Freight without metadata or that does not exist.
func (f *functions) freightMetadata(a ...any) (any, error) {
	return metadataOf(f.store, a, "first argument must be string", "freight ref name must not be empty")
}

// metadataOf is what freightMetadata() and stageMetadata() share (akuity/kargo v1.11.2
// pkg/expressions/function/functions.go): one non-empty name, then the object's metadata, with Kargo's
// messages for a wrong argument.
func metadataOf(store *FreightStore, a []any, notString, empty string) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("expected 1 argument, got %d", len(a))
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("%s, got %T", notString, a[0])
	}
	if name == "" {
		return nil, fmt.Errorf("%s", empty)
	}
	metadata, _, err := store.Metadata(name)
	if err != nil || metadata == nil {
		return nil, err
	}
	return metadata, nil
}

// configMap is functions.go ConfigMap() (getConfigMap): the data of the project namespace's ConfigMap of that
// name, and an empty map, not an error, when there is none.
func (f *functions) configMap(a ...any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("expected 1 argument, got %d", len(a))
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be string, got %T", a[0])
	}
	data, ok := f.configMaps[name]
	if !ok {
		return map[string]string{}, nil
	}
	return maps.Clone(data), nil
}
