package analysis

import (
	"testing"

	"infra-change-platform/test/internal/plan"
)

// An all-digit commit ID reaches the conditions as the same string: Kargo would turn an unquoted result
// that parses as a number into one and refuse it as an argument (pkg/expressions/json_templates.go), and
// Argo Rollouts substitutes {{args.commit}} into the conditions as text.
func TestAllDigitCommit(t *testing.T) {
	const digits = "1234567890123456789012345678901234567890"
	kargo := plan.Load(t, "kargo")
	cluster := inCluster(t, kargo)
	for _, tr := range templateRuns(t, kargo, digits) {
		tpl, stage, base := tr.template, tr.stage, tr.base
		if v := argValue(base, "commit"); v == nil || *v != digits {
			t.Fatalf("%s: commit argument %v, want %s", stage.GetName(), v, digits)
		}
		kind := templateKind(base)
		t.Run(tpl.GetName(), func(t *testing.T) {
			t.Parallel()
			c := newCloud(t, token)
			ops(kind, op(digits, "succeeded", t0, nil), op(other, "failed", t0+100, nil))(c)
			if got := drive(t, against(base, c.URL), cluster...); got.Status.Phase != successful {
				t.Errorf("phase %s: %s", got.Status.Phase, got.Status.Message)
			}
		})
	}
}
