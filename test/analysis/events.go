package analysis

import (
	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// step is one resource step of an operation, as its engine events carry it.
type step struct {
	op, typ, name string
	diffs         []string
	inputs        map[string]any
	// component: a component resource, whose states omit `custom`; retain: its old state's retainOnDelete.
	component, retain bool
}

// urnOf is the step's URN on the stand-in's stack (pulumi/pulumi sdk/go/common/resource/urn.go:
// urn:pulumi:<stack>::<project>::<type>::<name>).
func urnOf(s step) string { return "urn:pulumi:dev::app::" + s.typ + "::" + s.name }

// logical is whether the engine counts the step in its summary (pulumi/pulumi pkg/resource/deploy/step.go:
// a replacement's create and delete are not logical; pkg/engine/update.go OnResourceStepPost counts logical
// steps).
func (s step) logical() bool { return s.op != "create-replacement" && s.op != "delete-replaced" }

// engineEvents is the events Pulumi Cloud holds for an operation with these steps: a prelude, one
// resourcePreEvent per step and the summary counting them, in pulumi-cloud-sdk's own types
// (pulumi-cloud-sdk v1.20261110.0 apitype/engine_event_.go, app_step_event_metadata_.go,
// app_summary_event_.go), served in pages of apitype/get_update_events_response_.go (pulumicloud.go).
func engineEvents(preview bool, steps ...step) []apitype.EngineEvent {
	events := []apitype.EngineEvent{{Timestamp: 1, Type: "preludeEvent", PreludeEvent: &apitype.AppPreludeEvent{Config: map[string]string{}}}}
	changes := map[string]int{}
	for _, s := range steps {
		state := func() *apitype.AppStepEventStateMetadata {
			inputs := s.inputs
			if inputs == nil {
				inputs = map[string]any{}
			}
			return &apitype.AppStepEventStateMetadata{Type: s.typ, URN: urnOf(s), Custom: !s.component, RetainOnDelete: s.retain, ID: "id-" + s.name, Inputs: inputs, Outputs: map[string]any{}, Provider: "urn:pulumi:dev::app::pulumi:providers:aws::default::1"}
		}
		md := apitype.AppStepEventMetadata{Op: apitype.AppOpType(s.op), URN: urnOf(s), Type: s.typ, Diffs: s.diffs, Logical: s.logical(), Provider: "urn:pulumi:dev::app::pulumi:providers:aws::default::1"}
		if s.op != "create" && s.op != "create-replacement" {
			md.Old = state()
		}
		if s.op != "delete" && s.op != "delete-replaced" {
			md.New = state()
		}
		events = append(events, apitype.EngineEvent{Timestamp: 2, Type: "resourcePreEvent", ResourcePreEvent: &apitype.AppResourcePreEvent{Metadata: md, Planning: preview}})
		if s.logical() {
			changes[s.op]++
		}
	}
	return append(events, apitype.EngineEvent{Timestamp: 3, Type: "summaryEvent", SummaryEvent: &apitype.AppSummaryEvent{
		ResourceChanges: changes, PolicyPacks: map[string]string{}, IsPreview: preview, Result: "succeeded", DurationSeconds: 1,
	}})
}

// unchanged is the events of an operation that changed nothing: its stack resource, the same.
func unchanged(preview bool) []apitype.EngineEvent {
	return engineEvents(preview, step{op: "same", typ: "pulumi:pulumi:Stack", name: "app-dev"})
}
