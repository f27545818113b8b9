package health

import "testing"

// Argo CD runs our check with its standard libraries closed: the check must work without them.
func TestTheStackOverrideRunsWithLibrariesClosed(t *testing.T) {
	if o := StackOverride(t); o.UseOpenLibs {
		t.Fatal("argocd-cm opens Lua's standard libraries for pulumi.com_Stack; the check must not need them")
	}
}
