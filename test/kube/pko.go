package kube

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pkoFinalizer is the finalizer PKO's stack controller adds to every Stack it reconciles and removes once
// the Stack is finalized (pulumi-kubernetes-operator v2.9.0
// operator/internal/controller/pulumi/stack_controller.go, PulumiFinalizer).
const pkoFinalizer = "finalizer.stack.pulumi.com"

// pkoFieldManager is the field manager of PKO's updates of a Stack (the same file, FieldManager).
const pkoFieldManager = "pulumi-kubernetes-operator"

// pkoWrites is a model of the Stack PKO's finalizer updates send: the stack controller reads the Stack into
// its Go types and sends them whole (`r.Update(ctx, instance, ...)` with controller-runtime's typed client,
// stack_controller.go Reconcile), so the spec goes back as those types encode it, not as it was stored.
// What that changes, from PKO v2.9.0's types:
//   - StackSpec (operator/api/pulumi/shared/stack_types.go): every field but `stack` is `omitempty`, and its
//     scalars are not pointers, so a false, empty or zero field is left out;
//   - workspaceTemplate.spec (operator/internal/apply/auto/v1alpha1/workspacespec.go) holds core/v1 types for
//     `env` ([]EnvVar), `resources` (*ResourceRequirements) and the pod template's `spec` (*PodSpec,
//     embeddedpodtemplatespec.go), which encode as k8s.io/api's types do (a container's `resources` always,
//     quantities in canonical form); the rest of it is apply configurations, all pointers, unchanged;
//   - gitAuth and envRefs hold PKO's ResourceRef, whose fields the plan sets (type, secret name and key):
//     unchanged.
func pkoWrites(o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	c := o.DeepCopy()
	spec, _, _ := unstructured.NestedMap(c.Object, "spec")
	for k, v := range spec {
		if k != "stack" && isZero(v) {
			delete(spec, k)
		}
	}
	workspace := []string{"workspaceTemplate", "spec"}
	for _, typed := range []struct {
		path []string
		into any
	}{
		{append(workspace, "env"), &[]corev1.EnvVar{}},
		{append(workspace, "resources"), &corev1.ResourceRequirements{}},
		{append(workspace, "podTemplate", "spec"), &corev1.PodSpec{}},
	} {
		if err := roundTrip(spec, typed.into, typed.path...); err != nil {
			return nil, err
		}
	}
	if err := unstructured.SetNestedMap(c.Object, spec, "spec"); err != nil {
		return nil, err
	}
	return c, nil
}

// roundTrip replaces the value at path with what it becomes decoded into `into` and encoded again.
func roundTrip(m map[string]any, into any, path ...string) error {
	v, found, err := unstructured.NestedFieldNoCopy(m, path...)
	if err != nil || !found {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%v: %w", path, err)
	}
	if raw, err = json.Marshal(into); err != nil {
		return err
	}
	var back any
	if err := json.Unmarshal(raw, &back); err != nil {
		return err
	}
	return unstructured.SetNestedField(m, normalize(back), path...)
}

// normalize turns encoding/json's float64 numbers into the int64 unstructured objects hold.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case int64:
		return x == 0
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
