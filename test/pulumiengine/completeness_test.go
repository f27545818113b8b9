package pulumiengine

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every step the engine uploads is accounted for: remove any one resource step from a real stream (a lost
// batch) and the Job says the events are incomplete, rather than judging what is left. The exceptions are
// the steps the summary does not count and whose loss changes nothing the Job decides: `same`, `refresh`
// (not logical in `pulumi up --refresh`), and a delete-before-replace's delete, which an interrupted
// update may already have done (pulumi v3.274.1 pkg/resource/deploy/step_generator.go).
func TestEveryUploadedStepIsAccountedFor(t *testing.T) {
	t.Parallel()
	var streams [][]json.RawMessage
	var runs [][]commit
	for _, dbr := range []bool{false, true} {
		prog, changed := replacedGroup(dbr)
		runs = append(runs, []commit{{prog: prog, opts: refresh}, {prog: changed, opts: refresh}})
	}
	cloud := newCloud()
	cloud.exists("legacy-db", map[string]any{"engine": "postgres", "instanceClass": "db.t4g.micro"})
	imported := []commit{{prog: program{{typ: rdsInstance, name: "legacy", importID: "legacy-db",
		in: map[string]any{"engine": "postgres", "instanceClass": "db.t4g.micro"}}}, opts: refresh}}
	runs = append(runs, lessThanReplacement(), componentMoves(), versioningDrift())
	for _, commits := range runs {
		for _, c := range history(t, newCloud(), commits...) {
			streams = append(streams, c.Preview, c.Update)
		}
	}
	for _, c := range history(t, cloud, imported...) {
		streams = append(streams, c.Preview, c.Update)
	}

	var cases []verdictCase
	var dropped []string
	for _, events := range streams {
		for i := range events {
			op, name, dbrDelete := stepOf(t, events, i)
			if op == "" || op == "same" || op == "refresh" || dbrDelete {
				continue
			}
			lost := append(append([]json.RawMessage{}, events[:i]...), events[i+1:]...)
			cases = append(cases, verdictCase{Preview: lost, StopOn: []string{}})
			dropped = append(dropped, op+" "+name)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no step to drop")
	}
	for i, v := range judge(t, cases...) {
		if !strings.Contains(v.Preview.Error, "incomplete") {
			t.Errorf("without its %s, the events are judged (error %q): a lost step passes unnoticed",
				dropped[i], v.Preview.Error)
		}
	}
}

// stepOf is the op and name of the resourcePreEvent at i ("" when it is another event), and whether it is a
// delete-before-replace's delete (a delete-replaced before its replace).
func stepOf(t *testing.T, events []json.RawMessage, i int) (op, name string, dbrDelete bool) {
	meta := func(raw json.RawMessage) (string, string) {
		var e struct {
			ResourcePreEvent *struct{ Metadata struct{ Op, URN string } } `json:"resourcePreEvent"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		if e.ResourcePreEvent == nil {
			return "", ""
		}
		return e.ResourcePreEvent.Metadata.Op, e.ResourcePreEvent.Metadata.URN
	}
	op, urn := meta(events[i])
	if op == "" {
		return "", "", false
	}
	if op == "delete-replaced" {
		for _, later := range events[i+1:] {
			if o, u := meta(later); o == "replace" && u == urn {
				dbrDelete = true
			}
		}
	}
	return op, urn[strings.LastIndex(urn, "::")+2:], dbrDelete
}
