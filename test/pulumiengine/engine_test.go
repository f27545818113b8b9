package pulumiengine

import (
	"encoding/json"
	"testing"

	"github.com/blang/semver"
	cloudapi "github.com/pulumi/pulumi-cloud-sdk/go/apitype"
	"github.com/pulumi/pulumi/pkg/v3/backend/display"
	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// stack and project of every run: the URNs the events carry are urn:pulumi:dev::app::<type>::<name>.
const (
	stackName   = "dev"
	projectName = "app"
)

// pulumiOptions are the `pulumi preview` / `pulumi up` flags a run is given: PKO passes `refresh` to both
// (lib/pipeline/stack-manifest.ts), targets narrow what changes.
type pulumiOptions struct {
	refresh bool
	targets []resource.URN
	// replace lists the URNs `--replace` forces a replacement of.
	replace []resource.URN
}

// operation is what one run of the engine left: the events the CLI uploads, as Pulumi Cloud serves them back
// (JSON), and for an update the stack's state after it.
type operation struct {
	events []json.RawMessage
	snap   *deploy.Snapshot
}

// providerVersions are the plugin versions each fake provider is loaded at: a program pins its default
// provider by naming one of them (res.version), as an SDK's package version does.
var providerVersions = map[tokens.Package][]string{
	"aws":        {"6.83.0", "7.0.0"},
	"kubernetes": {"4.23.0"},
}

// runEngine runs Pulumi's deployment engine once, a preview (dryRun) or an update, over the state `snap`
// (nil: a new stack), with `prog` as the program and `cloud` behind every fake provider, as pulumi
// v3.274.1 pkg/engine/lifecycletest/framework/framework.go (TestOp.RunStep) drives it in Pulumi's own tests.
func runEngine(t *testing.T, snap *deploy.Snapshot, prog program, cloud *fakeCloud, opts pulumiOptions,
	dryRun bool,
) operation {
	t.Helper()
	var loaders []*deploytest.ProviderLoader
	for pkg, versions := range providerVersions {
		for _, v := range versions {
			pkg := pkg
			loaders = append(loaders, deploytest.NewProviderLoader(pkg, semver.MustParse(v),
				func() (plugin.Provider, error) { return cloud.provider(pkg), nil }))
		}
	}
	runtime := deploytest.NewLanguageRuntimeF(func(_ plugin.RunInfo, monitor *deploytest.ResourceMonitor) error {
		return prog.register(monitor)
	})
	update := engine.UpdateOptions{Refresh: opts.refresh, Parallel: 1}
	if len(opts.targets) > 0 {
		update.Targets = deploy.NewUrnTargetsFromUrns(opts.targets)
	}
	if len(opts.replace) > 0 {
		update.ReplaceTargets = deploy.NewUrnTargetsFromUrns(opts.replace)
	}
	testOpts := lt.TestUpdateOptions{
		T:                t,
		HostF:            deploytest.NewPluginHostF(nil, nil, runtime, nil, nil, loaders...),
		UpdateOptions:    update,
		SkipDisplayTests: true,
	}
	plan := &lt.TestPlan{Project: projectName, Stack: stackName}
	var fired []engine.Event
	validate := func(_ workspace.Project, _ deploy.Target, _ engine.JournalEntries, events []engine.Event,
		err error,
	) error {
		fired = events
		return err
	}
	after, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, snap), testOpts, dryRun,
		nil, validate, "")
	if err != nil {
		t.Fatalf("the engine's %s failed: %v", map[bool]string{true: "preview", false: "update"}[dryRun], err)
	}
	return operation{events: uploaded(t, fired), snap: after}
}

// uploaded is what the CLI sends Pulumi Cloud of an operation's events: each event the engine fires but its
// internal, ephemeral and untargeted ones, converted by display.ConvertEngineEvent with secrets hidden, in
// order (pulumi v3.274.1 pkg/backend/httpstate/state.go, recordEngineEvents and persistEngineEvents).
func uploaded(t *testing.T, events []engine.Event) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, e := range events {
		if e.Internal() || e.Ephemeral() || untargeted(e) {
			continue
		}
		api, err := display.ConvertEngineEvent(e, false /* showSecrets */)
		if err != nil {
			t.Fatalf("converting a %s event: %v", e.Type, err)
		}
		api.Sequence = len(out)
		api.Timestamp = 1_700_000_000 + len(out)
		out = append(out, served(t, api))
	}
	return out
}

// served is an uploaded event as Pulumi Cloud's events route answers it: pulumi-cloud-sdk's EngineEvent
// (github.com/pulumi/pulumi-cloud-sdk/go v1.20261104.0 apitype/engine_event_.go), the same payload under the
// same key, and `type` naming that key.
func served(t *testing.T, api apitype.EngineEvent) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(api)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	var event cloudapi.EngineEvent
	if err := json.Unmarshal(raw, &event); err != nil {
		t.Fatalf("an uploaded event is not Pulumi Cloud's EngineEvent: %v\n%s", err, raw)
	}
	for key := range fields {
		if key != "sequence" && key != "timestamp" {
			event.Type = key
		}
	}
	raw, err = json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// untargeted is pulumi v3.274.1 pkg/backend/httpstate/state.go isUntargetedEvent: steps outside --target are
// not uploaded.
func untargeted(e engine.Event) bool {
	switch p := e.Payload().(type) {
	case engine.ResourcePreEventPayload:
		return p.Metadata.Untargeted
	case engine.ResourceOutputsEventPayload:
		return p.Metadata.Untargeted
	}
	return false
}
