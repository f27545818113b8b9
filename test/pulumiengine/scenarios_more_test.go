package pulumiengine

import (
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// A secret reaches the events as the engine's blinded secret object, neither the value nor the unknown
// sentinel: in a key that decides a class it cannot be read, so it stops and says "secret". A secret in a
// key that decides nothing (a password) stops nothing of its own.
func TestSecretsInRiskyInputs(t *testing.T) {
	t.Parallel()
	checkHistory(t, newCloud(), secrets())
}

// secrets is a first deploy with Pulumi secrets in a rule's CIDR, a database's publiclyAccessible and its
// password.
func secrets() commit {
	prog := program{
		{typ: securityGroup, name: "web", in: map[string]any{"vpcId": "vpc-1", "description": "web"}},
		{typ: ingressRule, name: "from-partner", in: map[string]any{"securityGroupId": out("web", "id"),
			"cidrIpv4": secret("203.0.113.0/24"), "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}},
		{typ: rdsInstance, name: "db", in: map[string]any{"engine": "postgres", "instanceClass": "db.t4g.micro",
			"allocatedStorage": 20, "publiclyAccessible": secret(false), "password": secret("hunter2")}},
		{typ: rdsInstance, name: "reports", in: map[string]any{"engine": "postgres",
			"instanceClass": "db.t4g.micro", "allocatedStorage": 20, "password": secret("hunter2")}},
	}
	return commit{name: "secrets", prog: prog, opts: pulumiOptions{refresh: true},
		want: map[string][]string{
			"create from-partner": exposure,
			"create db":           {"exposure", "cost"},
			"create reports":      {"cost"},
		},
		reasons: map[string]string{"create from-partner": "secret", "create db": "secret"}}
}

// A resource whose ForceNew input is another resource's output unknown at preview is previewed as a
// replacement; when the output turns out unchanged, the update changes it in place: strictly less than
// what was approved, so the update passes.
func TestUpdateLessThanPreviewedReplacement(t *testing.T) {
	t.Parallel()
	checkHistory(t, newCloud(), lessThanReplacement()...)
}

// lessThanReplacement is a function with provisioned concurrency on its published version, then new tags and
// more concurrency.
func lessThanReplacement() []commit {
	const fn, pcc = "aws:lambda/function:Function", "aws:lambda/provisionedConcurrencyConfig:ProvisionedConcurrencyConfig"
	prog := program{
		{typ: role, name: "fn-role", in: map[string]any{"assumeRolePolicy": `{"Statement":[]}`}},
		{typ: fn, name: "api", in: map[string]any{"role": out("fn-role", "arn"), "runtime": "nodejs22.x",
			"handler": "index.handler", "code": "archive-1", "publish": true, "tags": map[string]any{"v": "1"}}},
		{typ: pcc, name: "warm", in: map[string]any{"functionName": out("api", "arn"),
			"qualifier": out("api", "version"), "provisionedConcurrentExecutions": 2}},
	}
	// Tags alone publish no new version, but the provider cannot say so before AWS answers.
	next := prog.with("api", func(r *res) { r.in["tags"] = map[string]any{"v": "2"} }).
		with("warm", func(r *res) { r.in["provisionedConcurrentExecutions"] = 4 })
	return []commit{
		{name: "first deploy", prog: prog, opts: pulumiOptions{refresh: true},
			want: map[string][]string{"create fn-role": privilege, "create api": privilege}},
		{name: "tags and concurrency", prog: next, opts: pulumiOptions{refresh: true},
			want: map[string][]string{"create-replacement warm": loss, "replace warm": loss,
				"delete-replaced warm": loss},
			less: []string{"update warm"}}}
}

// A default provider upgrade (the SDK's package version raised) creates the new default provider and
// deletes the old one; a default provider's steps are internal events, which the CLI does not upload, and the
// bucket's step is `same`: nothing is lost, and nothing stops.
func TestDefaultProviderUpgrade(t *testing.T) {
	t.Parallel()
	prog := program{{typ: bucketV2, name: "data", version: "6.83.0", in: map[string]any{"bucket": "data-1"}}}
	checkHistory(t, newCloud(),
		commit{name: "first deploy", prog: prog, opts: pulumiOptions{refresh: true}},
		commit{name: "provider upgraded", opts: pulumiOptions{refresh: true},
			prog: prog.with("data", func(r *res) { r.version = "7.0.0" })})
}

// An explicit provider (a second region) no resource uses any more is deleted: it held nothing in the cloud.
func TestExplicitProviderRemoved(t *testing.T) {
	t.Parallel()
	prog := program{
		{typ: "pulumi:providers:aws", name: "west", in: map[string]any{"region": "us-west-2"}},
		{typ: logGroup, name: "logs", provider: "west", in: map[string]any{"name": "app"}},
	}
	checkHistory(t, newCloud(),
		commit{name: "first deploy", prog: prog, opts: pulumiOptions{refresh: true}},
		commit{name: "provider and its resource removed", prog: program{}, opts: pulumiOptions{refresh: true},
			want: map[string][]string{"delete logs": loss}})
}

// An import adopts what exists: no loss, no new capacity. The update imports what the preview showed.
func TestImport(t *testing.T) {
	t.Parallel()
	cloud := newCloud()
	cloud.exists("legacy-db", map[string]any{"engine": "postgres", "instanceClass": "db.t4g.micro",
		"allocatedStorage": 20, "arn": "arn:aws:rds:legacy"})
	prog := program{{typ: rdsInstance, name: "legacy", importID: "legacy-db", in: map[string]any{
		"engine": "postgres", "instanceClass": "db.t4g.micro", "allocatedStorage": 20}}}
	checkHistory(t, cloud, commit{name: "import", prog: prog, opts: pulumiOptions{refresh: true}})
}

// `pulumi up --skip-preview --refresh`, as PKO runs the update stage (and `refresh` in the preview stage too):
// refresh steps in both streams. Drift the preview saw is part of what was approved; drift after the preview
// makes the update do what the preview did not show, and it fails.
func TestRefreshAsPKORunsIt(t *testing.T) {
	t.Parallel()
	checkHistory(t, newCloud(), versioningDrift()...)
}

// versioningDrift is a versioned bucket, then its versioning suspended by hand before a preview, then after
// one.
func versioningDrift() []commit {
	versioning := "aws:s3/bucketVersioningV2:BucketVersioningV2"
	prog := program{
		{typ: bucketV2, name: "data", in: map[string]any{"bucket": "data-1"}},
		{typ: versioning, name: "data-versioning", in: map[string]any{"bucket": out("data", "id"),
			"versioningConfiguration": map[string]any{"status": "Enabled"}}},
	}
	suspend := func(c *fakeCloud, snap *deploy.Snapshot) {
		for _, r := range snap.Resources {
			if string(r.Type) == versioning {
				c.drift(r.ID, "versioningConfiguration", map[string]any{"status": "Suspended"})
			}
		}
	}
	return []commit{
		{name: "first deploy", prog: prog, opts: pulumiOptions{refresh: true}},
		{name: "suspended by hand before the preview", prog: prog, opts: pulumiOptions{refresh: true},
			beforePreview: suspend},
		{name: "suspended by hand after the preview", prog: prog, opts: pulumiOptions{refresh: true},
			before: suspend, unexpected: []string{"update data-versioning"}},
	}
}

// Targets (`--target`): only the targeted resources' steps are uploaded, in the preview and the update alike;
// the update did what the preview showed.
func TestTargets(t *testing.T) {
	t.Parallel()
	prog := program{
		{typ: logGroup, name: "app", in: map[string]any{"name": "app", "retentionInDays": 30}},
		{typ: logGroup, name: "audit", in: map[string]any{"name": "audit", "retentionInDays": 30}},
	}
	next := prog.with("app", func(r *res) { r.in["retentionInDays"] = 90 }).
		with("audit", func(r *res) { r.in["retentionInDays"] = 90 })
	checkHistory(t, newCloud(),
		commit{name: "first deploy", prog: prog, opts: pulumiOptions{refresh: true}},
		commit{name: "one targeted", prog: next,
			opts: pulumiOptions{refresh: true, targets: []resource.URN{next.urnOf("app")}}})
}
