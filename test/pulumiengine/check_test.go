package pulumiengine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
)

// commit is one commit of a program reaching a stage: its preview (`pulumi preview`, as the preview stage's
// Stack runs it) and then its update (`pulumi up --skip-preview`, as the update stage's Stack runs it), both
// over the state the previous commit left.
type commit struct {
	name string
	prog program
	opts pulumiOptions
	// beforePreview runs before the preview, and before between the preview and the update: a change in
	// the cloud outside the program (drift), given the state the previous commit left.
	beforePreview, before func(c *fakeCloud, snap *deploy.Snapshot)
	// want is the risk classes each step of the preview should have, by "op name" (the URN's last part); a
	// changing step not listed should have none. Every environment's stops follow from it.
	want map[string][]string
	// reasons are words each stop line of the named step should hold ("unknown at preview", "secret").
	reasons map[string]string
	// unexpected is the steps of the update its preview did not show, by "op name"; none: the update passes.
	unexpected []string
	// less is the update's steps the Job records as less than their preview's, by "op name".
	less []string
}

// history runs the commits one after the other on one stack, as a stage's Stacks would, and returns the
// events of each commit's preview and update.
func history(t *testing.T, cloud *fakeCloud, commits ...commit) []verdictCase {
	t.Helper()
	var snap *deploy.Snapshot
	var cases []verdictCase
	for _, c := range commits {
		if c.beforePreview != nil {
			c.beforePreview(cloud, snap)
		}
		preview := runEngine(t, snap, c.prog, cloud, c.opts, true)
		if c.before != nil {
			c.before(cloud, snap)
		}
		update := runEngine(t, snap, c.prog, cloud, c.opts, false)
		snap = update.snap
		cases = append(cases, verdictCase{Preview: preview.events, Update: update.events, StopOn: stopOnValues(t)})
	}
	return cases
}

// checkHistory runs the commits and holds the verification Job's verdicts on each to what the commit wants:
// each changing step's classes, the stops of every environment's policy that follow from them (STOP_ON from
// the offline plan, "all" and ""), the words of each stop, and the update's verdict.
func checkHistory(t *testing.T, cloud *fakeCloud, commits ...commit) []verdict {
	t.Helper()
	verdicts := judge(t, history(t, cloud, commits...)...)
	for i, c := range commits {
		checkCommit(t, c, verdicts[i])
	}
	return verdicts
}

func checkCommit(t *testing.T, c commit, v verdict) {
	t.Helper()
	if v.Preview.Error != "" {
		t.Errorf("%s: the Job cannot read the preview's events: %s", c.name, v.Preview.Error)
		return
	}
	got := map[string][]string{}
	for _, s := range v.Preview.Operations {
		got[opName(s)] = s.Classes
	}
	for name, want := range c.want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: the preview has no step %q; it has %v", c.name, name, slices.Sorted(maps.Keys(got)))
		}
		_ = want
	}
	for name, classes := range got {
		want := c.want[name]
		if !sameSet(classes, want) {
			t.Errorf("%s: %s is %v to the Job, want %v", c.name, name, classes, orNone(want))
		}
	}
	for stopOn, p := range v.Preview.Policies {
		var wantStops []string
		for _, s := range v.Preview.Operations {
			if stopOn == "all" || overlaps(c.want[opName(s)], splitStopOn(stopOn)) {
				wantStops = append(wantStops, opName(s))
			}
		}
		gotStops := names(p.Stopped)
		sort.Strings(wantStops)
		if !reflect.DeepEqual(gotStops, wantStops) && !(len(gotStops) == 0 && len(wantStops) == 0) {
			t.Errorf("%s: STOP_ON=%q stops %v, want %v", c.name, stopOn, gotStops, wantStops)
		}
		for name, words := range c.reasons {
			for _, s := range p.Stopped {
				if opName(s) == name && !strings.Contains(s.Line, words) {
					t.Errorf("%s: STOP_ON=%q: the stop of %s does not say %q: %s", c.name, stopOn, name, words, s.Line)
				}
			}
		}
	}
	if v.Update == nil {
		return
	}
	if v.Update.Error != "" {
		t.Errorf("%s: the Job cannot read the update's events: %s", c.name, v.Update.Error)
		return
	}
	checkLess(t, c, v.Update.Matched)
	gotUnexpected := names(v.Update.Unexpected)
	wantUnexpected := append([]string(nil), c.unexpected...)
	sort.Strings(wantUnexpected)
	if !reflect.DeepEqual(gotUnexpected, wantUnexpected) && !(len(gotUnexpected) == 0 && len(wantUnexpected) == 0) {
		var why []string
		for _, u := range v.Update.Unexpected {
			why = append(why, u.Line)
		}
		t.Errorf("%s: the update fails for %v, want %v\n%s", c.name, gotUnexpected, orNone(wantUnexpected),
			strings.Join(why, "\n"))
	}
}

func checkLess(t *testing.T, c commit, matched []step) {
	t.Helper()
	got := []string{}
	for _, s := range matched {
		if s.LessThan != "" {
			got = append(got, opName(s))
		}
	}
	sort.Strings(got)
	want := append([]string{}, c.less...)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: the update's record has %v as less than its preview, want %v", c.name, got, want)
	}
}

// opName is a step as "op name", the name being the URN's last part.
func opName(s step) string { return s.Op + " " + s.URN[strings.LastIndex(s.URN, "::")+2:] }

func names(steps []step) []string {
	out := []string{}
	for _, s := range steps {
		out = append(out, opName(s))
	}
	sort.Strings(out)
	return out
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !contains(b, x) {
			return false
		}
	}
	return true
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return fmt.Sprint(list)
}

// splitStopOn is STOP_ON's classes ("" is none).
func splitStopOn(stopOn string) []string {
	if stopOn == "" {
		return nil
	}
	return strings.Split(stopOn, ",")
}
