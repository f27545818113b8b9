package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// trackingAnnotation is what Argo CD's default tracking method writes on every object it applies.
const trackingAnnotation = "argocd.argoproj.io/tracking-id"

// asArgoCDApplies is a manifest as Argo CD applies it for an Application: with the tracking annotation set to
// `<Application>:<group>/<kind>:<namespace>/<name>`, replacing whatever the manifest said (a model of argo-cd
// v3.4.4 util/argo/resource_tracking.go SetAppInstance and BuildAppInstanceValue, called for every target
// object in controller/state.go; the namespace defaults to the Application's destination).
func asArgoCDApplies(application, destination string, o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	ns := c.GetNamespace()
	if ns == "" {
		ns = destination
	}
	gvk := c.GroupVersionKind()
	annotations := c.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[trackingAnnotation] = fmt.Sprintf("%s:%s/%s:%s/%s", application, gvk.Group, gvk.Kind, ns, c.GetName())
	c.SetAnnotations(annotations)
	return c
}

// stageApplication is the Application of the plan that deploys one file of a stage branch, and where to.
type stageApplication struct{ name, destination string }

// applicationsByFile maps each file an Application includes from its stage branch to that Application.
func applicationsByFile(kargo *plan.Project) map[string]stageApplication {
	out := map[string]stageApplication{}
	for _, app := range kargo.OfKind("Application") {
		include, _, _ := unstructured.NestedString(app.Object, "spec", "source", "directory", "include")
		destination, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "namespace")
		for _, file := range plan.IncludedFiles(include) {
			out[file] = stageApplication{app.GetName(), destination}
		}
	}
	return out
}
