package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	luajson "layeh.com/gopher-json"
)

// Health is what Argo CD keeps of a health script's answer (gitops-engine pkg/health HealthStatus: the
// table is encoded to JSON and decoded into it).
type Health struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// The codes Argo CD accepts; any other answer becomes Unknown (argo-cd v3.4.4 util/lua/lua.go,
// isValidHealthStatusCode).
var validCodes = map[string]bool{
	"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true,
}

// TimeLimit is how long Argo CD lets a script run (argo-cd v3.4.4 util/lua/lua.go: context.WithTimeout 1s),
// counted here in the time the script is on a core (scriptContext).
const TimeLimit = 1 * time.Second

// Run evaluates a health script over obj as Argo CD v3.4.4 does (argo-cd v3.4.4 util/lua/lua.go,
// runLuaWithResourceActionParameters and ExecuteHealthLua): a state with no standard library unless the
// override sets useOpenLibs; then package, base and table opened; obj handed over as the global `obj`;
// the returned table encoded to JSON with layeh.com/gopher-json and read back as a Health. Argo CD also
// opens its own read-only `os` (os.time and os.date, util/lua/oslib_safe.go), which cannot be built here:
// this state has no `os` at all, so a script that used it fails here rather than passing untested.
func Run(script string, obj *unstructured.Unstructured, useOpenLibs bool) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !useOpenLibs})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Health{}, err
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx, cancel := scriptContext(TimeLimit)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("actionParams", l.CreateTable(0, 0))
	l.SetGlobal("obj", decodeValue(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return Health{}, err
	}
	returned := l.Get(-1)
	switch returned.Type() {
	case lua.LTNil:
		return Health{}, nil
	case lua.LTTable:
	default:
		return Health{}, fmt.Errorf("expect table output from Lua script, not %s", returned.Type())
	}
	raw, err := luajson.Encode(returned)
	if err != nil {
		return Health{}, err
	}
	var status Health
	if err := json.Unmarshal(raw, &status); err != nil {
		// An empty table encodes as [] and Argo CD takes it as no health at all.
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return Health{}, nil
		}
		return Health{}, err
	}
	if !validCodes[status.Status] {
		return Health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return status, nil
}

// decodeValue hands a Go value to Lua as Argo CD does (argo-cd v3.4.4 util/lua/lua.go, decodeValue):
// integers the API server returns (int64 in an unstructured object) become numbers, json.Number a string,
// anything else unknown nil.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}
