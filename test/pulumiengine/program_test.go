package pulumiengine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// res is one resource a program registers, as an SDK registers it with the engine's resource monitor.
type res struct {
	typ, name string
	component bool
	// parent is the name of a resource registered before it.
	parent string
	// version pins the default provider's plugin version (an SDK's package version); "" is the oldest.
	version string
	// provider is the name of an explicit provider resource (type pulumi:providers:<package>) registered
	// before it.
	provider string
	// in are the inputs: Go values, out(...) for an output of an earlier resource (unknown in a preview
	// until that resource exists), secret(...) for a Pulumi secret.
	in map[string]any
	// The resource options of the same names.
	protect, retainOnDelete, deleteBeforeReplace bool
	ignoreChanges, replaceOnChanges              []string
	// aliases are the URNs this resource had before (a rename or a move under a component).
	aliases []resource.URN
	// importID adopts the resource of that ID (the `import` resource option).
	importID string
}

// ref is an output of an earlier resource of the program, by its name.
type ref struct{ name, key string }

func out(name, key string) ref { return ref{name, key} }

// secretValue is a value the program marks secret (pulumi.ToSecret, or a secret config value).
type secretValue struct{ v any }

func secret(v any) secretValue { return secretValue{v} }

// program is the resources a Pulumi program registers, in order.
type program []res

// register runs the program against the engine's resource monitor.
func (p program) register(monitor *deploytest.ResourceMonitor) error {
	registered := map[string]*deploytest.RegisterResourceResponse{}
	for _, r := range p {
		deps := map[resource.PropertyKey][]resource.URN{}
		var all []resource.URN
		inputs := resource.PropertyMap{}
		for _, k := range slices.Sorted(maps.Keys(r.in)) {
			v, refs, err := value(r.in[k], registered)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", r.name, k, err)
			}
			inputs[resource.PropertyKey(k)] = v
			if len(refs) > 0 {
				deps[resource.PropertyKey(k)] = refs
				all = append(all, refs...)
			}
		}
		opts := deploytest.ResourceOptions{
			Inputs:           inputs,
			PropertyDeps:     deps,
			Dependencies:     all,
			Version:          r.version,
			IgnoreChanges:    r.ignoreChanges,
			ReplaceOnChanges: r.replaceOnChanges,
			AliasURNs:        r.aliases,
			ImportID:         resource.ID(r.importID),
		}
		if r.parent != "" {
			opts.Parent = registered[r.parent].URN
		}
		if r.provider != "" {
			p := registered[r.provider]
			opts.Provider = string(p.URN) + "::" + string(p.ID)
		}
		if r.protect {
			opts.Protect = &r.protect
		}
		if r.retainOnDelete {
			opts.RetainOnDelete = &r.retainOnDelete
		}
		if r.deleteBeforeReplace {
			opts.DeleteBeforeReplace = &r.deleteBeforeReplace
		}
		resp, err := monitor.RegisterResource(tokens.Type(r.typ), r.name, !r.component, opts)
		if err != nil {
			return fmt.Errorf("registering %s: %w", r.name, err)
		}
		if r.component {
			if err := monitor.RegisterResourceOutputs(resp.URN, resource.PropertyMap{}); err != nil {
				return err
			}
		}
		registered[r.name] = resp
	}
	return nil
}

// value is a Go value as the SDK hands it to the engine, and the resources it depends on.
func value(v any, registered map[string]*deploytest.RegisterResourceResponse) (resource.PropertyValue,
	[]resource.URN, error,
) {
	switch v := v.(type) {
	case ref:
		r, ok := registered[v.name]
		if !ok {
			return resource.PropertyValue{}, nil, fmt.Errorf("out(%q) before it is registered", v.name)
		}
		got, ok := r.Outputs[resource.PropertyKey(v.key)]
		if !ok {
			if v.key != "id" {
				return resource.PropertyValue{}, nil, fmt.Errorf("%s has no output %q", v.name, v.key)
			}
			// A resource's ID is unknown until it exists (a preview of its creation).
			got = resource.MakeComputed(resource.NewProperty(""))
			if r.ID != "" {
				got = resource.NewProperty(string(r.ID))
			}
		}
		return got, []resource.URN{r.URN}, nil
	case secretValue:
		inner, refs, err := value(v.v, registered)
		return resource.MakeSecret(inner), refs, err
	case []any:
		var items []resource.PropertyValue
		var refs []resource.URN
		for _, x := range v {
			item, rs, err := value(x, registered)
			if err != nil {
				return resource.PropertyValue{}, nil, err
			}
			items, refs = append(items, item), append(refs, rs...)
		}
		return resource.NewProperty(items), refs, nil
	case map[string]any:
		m := resource.PropertyMap{}
		var refs []resource.URN
		for _, k := range slices.Sorted(maps.Keys(v)) {
			item, rs, err := value(v[k], registered)
			if err != nil {
				return resource.PropertyValue{}, nil, err
			}
			m[resource.PropertyKey(k)], refs = item, append(refs, rs...)
		}
		return resource.NewProperty(m), refs, nil
	}
	return resource.NewPropertyValue(v), nil, nil
}

// urnOf is the URN the engine gives the program's resource of that name (its parent's type qualifies it).
func (p program) urnOf(name string) resource.URN {
	r := p.find(name)
	var parentType tokens.Type
	if r.parent != "" {
		parentType = p.urnOf(r.parent).QualifiedType()
	}
	return resource.NewURN(tokens.QName(stackName), tokens.PackageName(projectName), parentType,
		tokens.Type(r.typ), r.name)
}

func (p program) find(name string) res {
	for _, r := range p {
		if r.name == name {
			return r
		}
	}
	panic("no resource " + name + " in the program")
}

// with is the program with one resource changed (found by name), the routine edit of a later commit.
func (p program) with(name string, change func(r *res)) program {
	out := make(program, len(p))
	copy(out, p)
	for i := range out {
		if out[i].name == name {
			r := out[i]
			r.in = cloneMap(r.in)
			change(&r)
			out[i] = r
			return out
		}
	}
	panic("no resource " + name + " in the program")
}

// without is the program with the named resources removed.
func (p program) without(names ...string) program {
	var out program
	for _, r := range p {
		if !contains(names, r.name) {
			out = append(out, r)
		}
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
