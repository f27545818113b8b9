package kube

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// mutation is one object we emit with one thing made wrong (or, for "as emitted", nothing).
type mutation struct {
	kind   string // what was done: "as emitted", "missing required", "wrong type", "unknown field", "CEL: ..."
	path   string // where, as a JSON pointer
	from   string // the emitted object's id
	object *unstructured.Unstructured
}

func (m mutation) String() string { return fmt.Sprintf("%s %s of %s", m.kind, m.path, m.from) }

type schemaNode = map[string]any

// crdSchemas maps "group/version/Kind" to the openAPIV3Schema of that served version.
func crdSchemas(crds []*unstructured.Unstructured) map[string]schemaNode {
	out := map[string]schemaNode{}
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			version, _ := v.(map[string]any)
			schema, _, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema")
			if schema != nil {
				out[fmt.Sprintf("%s/%s/%s", group, version["name"], kind)] = schema
			}
		}
	}
	return out
}

// corpus is, for every custom resource we emit, the object as emitted and its mutations: each required
// field present removed, each typed scalar given another type, an unknown field added to each object that
// allows none, and around each CEL rule each optional field removed and each absent one added (the values
// such rules forbid). Each schema location is mutated once per kind, in the first object that reaches it.
func corpus(objects []source, schemas map[string]schemaNode) []mutation {
	var out []mutation
	seen := map[string]bool{}
	for _, src := range objects {
		gvk := src.object.GroupVersionKind()
		schema := schemas[fmt.Sprintf("%s/%s/%s", gvk.Group, gvk.Version, gvk.Kind)]
		if schema == nil {
			continue
		}
		out = append(out, mutation{"as emitted", "", src.id(), src.object})
		add := func(kind, path, location string, change func(root map[string]any)) {
			key := gvk.Kind + " " + kind + " " + location
			if seen[key] {
				return
			}
			seen[key] = true
			c := src.object.DeepCopy()
			change(c.Object)
			out = append(out, mutation{kind, path, src.id(), c})
		}
		// Kubernetes checks the name of every object; Stack's CEL rule bounds it at 42 characters.
		add("long name", "/metadata/name", "/metadata/name", func(root map[string]any) {
			meta := root["metadata"].(map[string]any)
			meta["name"] = strings.Repeat("n", 60)
		})
		walk(src.object.Object, schema, nil, nil, add)
	}
	return out
}

type adder func(kind, path, location string, change func(root map[string]any))

// walk visits value (at path; location is path with list indices as "*") with its schema node.
func walk(value any, node schemaNode, path, location []string, add adder) {
	if node == nil || node["x-kubernetes-preserve-unknown-fields"] == true || node["x-kubernetes-int-or-string"] == true {
		return // free-form (Kargo's step configs, Helm-like values): nothing typed to mutate
	}
	pointer, loc := "/"+strings.Join(path, "/"), "/"+strings.Join(location, "/")
	switch v := value.(type) {
	case map[string]any:
		props, _ := node["properties"].(map[string]any)
		if props == nil {
			if items, ok := node["additionalProperties"].(map[string]any); ok {
				for _, k := range sortedKeys(v) {
					walk(v[k], items, append(clone(path), k), append(clone(location), "*"), add)
				}
			}
			return
		}
		required := map[string]bool{}
		for _, r := range asSlice(node["required"]) {
			required[fmt.Sprint(r)] = true
		}
		for _, k := range sortedKeys(v) {
			if required[k] {
				add("missing required", pointer+"/"+k, loc+"/"+k, func(root map[string]any) { delete(at(root, path), k) })
			}
		}
		if _, ok := node["additionalProperties"]; !ok && len(path) > 0 {
			add("unknown field", pointer+"/unknownFieldForTest", loc, func(root map[string]any) { at(root, path)["unknownFieldForTest"] = "x" })
		}
		if rules := asSlice(node["x-kubernetes-validations"]); len(rules) > 0 {
			for _, k := range sortedKeys(props) {
				k := k
				if _, present := v[k]; present && !required[k] {
					add("CEL: without", pointer+"/"+k, loc+"/"+k, func(root map[string]any) { delete(at(root, path), k) })
				} else if !present {
					child, _ := props[k].(map[string]any)
					add("CEL: with", pointer+"/"+k, loc+"/"+k, func(root map[string]any) { at(root, path)[k] = minimal(child) })
				}
			}
		}
		for _, k := range sortedKeys(v) {
			if child, ok := props[k].(map[string]any); ok && !(len(path) == 0 && k == "metadata") {
				walk(v[k], child, append(clone(path), k), append(clone(location), k), add)
			}
		}
	case []any:
		if n, ok := number(node["maxItems"]); ok {
			add("out of bounds: maxItems", pointer, loc, func(root map[string]any) {
				list := at(root, path[:len(path)-1])[path[len(path)-1]].([]any)
				for len(list) <= int(n) {
					list = append(list, list[0])
				}
				set(root, path[:len(path)-1], path[len(path)-1], list)
			})
		}
		if _, ok := number(node["minItems"]); ok && len(path) > 0 {
			add("out of bounds: minItems", pointer, loc, func(root map[string]any) { set(root, path[:len(path)-1], path[len(path)-1], []any{}) })
		}
		items, _ := node["items"].(map[string]any)
		for i, item := range v {
			walk(item, items, append(clone(path), fmt.Sprint(i)), append(clone(location), "*"), add)
		}
	case string, bool, int64, float64, int:
		var wrong any
		switch node["type"] {
		case "string":
			wrong = int64(12345)
		case "integer", "number":
			wrong = "not-a-number"
		case "boolean":
			wrong = "yes"
		default:
			return
		}
		parent, key := path[:len(path)-1], path[len(path)-1]
		add("wrong type", pointer, loc, func(root map[string]any) { set(root, parent, key, wrong) })
		// Values of the right type the schema bounds: a value outside the enum, one the pattern refuses
		// (the server's RE2 and our JavaScript regular expressions must agree), lengths and ranges.
		bound := func(what string, v any) {
			add("out of bounds: "+what, pointer, loc, func(root map[string]any) { set(root, parent, key, v) })
		}
		if len(asSlice(node["enum"])) > 0 {
			bound("enum", "not-in-the-enum")
		}
		if p, ok := node["pattern"].(string); ok {
			for _, candidate := range []string{"", " ", "UPPER case", "-x-", "a/b", "x..y", strings.Repeat("9", 70)} {
				if matches(p, candidate) == false {
					bound("pattern", candidate)
					break
				}
			}
		}
		if n, ok := number(node["maxLength"]); ok {
			bound("maxLength", strings.Repeat("x", int(n)+1))
		}
		if n, ok := number(node["minLength"]); ok && n > 0 {
			bound("minLength", "")
		}
		if n, ok := number(node["maximum"]); ok {
			bound("maximum", int64(n)+1)
		}
		if n, ok := number(node["minimum"]); ok {
			bound("minimum", int64(n)-1)
		}
	}
}

// minimal is the smallest value a schema node accepts on its own: its first enum value, or a value of its
// type with the required fields filled in.
func minimal(node schemaNode) any {
	if enum := asSlice(node["enum"]); len(enum) > 0 {
		return enum[0]
	}
	switch node["type"] {
	case "string":
		return "x"
	case "integer", "number":
		return int64(1)
	case "boolean":
		return true
	case "array":
		return []any{}
	}
	out := map[string]any{}
	props, _ := node["properties"].(map[string]any)
	for _, r := range asSlice(node["required"]) {
		if child, ok := props[fmt.Sprint(r)].(map[string]any); ok {
			out[fmt.Sprint(r)] = minimal(child)
		}
	}
	return out
}

// valueAt is the value at path (list indices as numbers) inside root.
func valueAt(root map[string]any, path []string) any {
	var cur any = root
	for _, p := range path {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			fmt.Sscan(p, &i)
			cur = c[i]
		}
	}
	return cur
}

// at is the map at path inside root.
func at(root map[string]any, path []string) map[string]any {
	m, _ := valueAt(root, path).(map[string]any)
	return m
}

// set replaces the value under key (a map key or a list index) of the container at parent.
func set(root map[string]any, parent []string, key string, value any) {
	switch c := valueAt(root, parent).(type) {
	case map[string]any:
		c[key] = value
	case []any:
		var i int
		fmt.Sscan(key, &i)
		c[i] = value
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func clone(s []string) []string { return append([]string(nil), s...) }

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// matches reports whether value matches the schema pattern, or nil when Go cannot compile it (the server
// would have refused the CRD; the candidates are then not tried).
func matches(pattern, value string) any {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil
	}
	return re.MatchString(value)
}
