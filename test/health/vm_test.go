package health

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var anyObject = &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"generation": int64(3)}}}

// The VM answers like Argo CD's for the cases a health script can get wrong.
func TestVMAsArgoCDSetsItUp(t *testing.T) {
	cases := []struct {
		name, script string
		openLibs     bool
		want         Health
		err          string
	}{
		{name: "a table", script: `return {status = "Healthy", message = "m"}`, want: Health{"Healthy", "m"}},
		{name: "nil is no health", script: `return nil`, want: Health{}},
		{name: "an empty table is no health", script: `return {}`, want: Health{}},
		{name: "integers arrive as numbers", script: `return {status = "Healthy", message = tostring(obj.metadata.generation + 1)}`,
			want: Health{"Healthy", "4"}},
		{name: "no string library", script: `return {status = string.upper("healthy")}`, err: "non-table object(nil) with key 'upper'"},
		{name: "no math library", script: `return {status = "Healthy", message = tostring(math.floor(1.5))}`, err: "with key 'floor'"},
		{name: "no io", script: `io.write("x") return {}`, err: "with key 'write'"},
		{name: "no os here (Argo CD's is read-only os.time and os.date)", script: `return {status = tostring(os.time())}`, err: "with key 'time'"},
		{name: "useOpenLibs opens them", script: `return {status = string.upper("healthy"):sub(1,1) .. "ealthy"}`, openLibs: true,
			want: Health{Status: "Healthy"}},
		{name: "a string is not a table", script: `return "Healthy"`, err: "expect table output"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Run(c.script, anyObject, c.openLibs)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one mentioning %q (got %+v)", err, c.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
