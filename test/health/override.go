package health

import (
	"fmt"
	"strconv"
	"testing"

	"infra-change-platform/test/internal/plan"
)

// Override is Argo CD's resource override for pulumi.com/Stack as the cluster-setup plan configures it:
// argo-cd v3.4.4 util/settings/settings.go (appendResourceOverridesFromSplitKeys) reads the keys
// resource.customizations.<health|useOpenLibs>.<group>_<kind> of argocd-cm.
type Override struct {
	HealthLua   string
	UseOpenLibs bool
}

const stackKey = "pulumi.com_Stack"

// StackOverride reads argocd-cm from the values of the argocd Helm release the cluster-setup plan emits.
func StackOverride(t testing.TB) Override {
	t.Helper()
	var cm map[string]any
	for _, r := range plan.Load(t, "cluster-setup").ResourcesOfType("kubernetes:helm.sh/v3:Release") {
		if r.Name != "argocd" {
			continue
		}
		values, _ := r.Inputs["values"].(map[string]any)
		configs, _ := values["configs"].(map[string]any)
		cm, _ = configs["cm"].(map[string]any)
	}
	if cm == nil {
		t.Fatal("the cluster-setup plan has no argocd release with configs.cm")
	}
	script, ok := cm["resource.customizations.health."+stackKey].(string)
	if !ok || script == "" {
		t.Fatalf("argocd-cm has no health check for %s", stackKey)
	}
	o := Override{HealthLua: script}
	if v, ok := cm["resource.customizations.useOpenLibs."+stackKey]; ok {
		b, err := strconv.ParseBool(fmt.Sprint(v))
		if err != nil {
			t.Fatalf("resource.customizations.useOpenLibs.%s: %v", stackKey, err)
		}
		o.UseOpenLibs = b
	}
	return o
}
