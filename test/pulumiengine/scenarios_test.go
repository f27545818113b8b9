package pulumiengine

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Type tokens of pulumi-aws and pulumi-kubernetes, as their SDKs register them.
const (
	securityGroup = "aws:ec2/securityGroup:SecurityGroup"
	ingressRule   = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
	classicRule   = "aws:ec2/securityGroupRule:SecurityGroupRule"
	role          = "aws:iam/role:Role"
	bucketV2      = "aws:s3/bucketV2:BucketV2"
	bucketPolicy  = "aws:s3/bucketPolicy:BucketPolicy"
	rdsInstance   = "aws:rds/instance:Instance"
	logGroup      = "aws:cloudwatch/logGroup:LogGroup"
	component     = "app:index:Service"
)

var (
	noClasses = []string(nil)
	loss      = []string{"loss"}
	exposure  = []string{"exposure"}
	privilege = []string{"privilege"}
)

// A first deploy of a security group with rules that reference it and another new group: the references are
// unknown at preview, and an unknown reference is not an open CIDR. A rule open to the world, or whose CIDR
// is unknown at preview, still stops, and says which.
func TestFirstDeployUnknownReferences(t *testing.T) {
	t.Parallel()
	prog, open, unknownCidr := unknownReferences()
	checkHistory(t, newCloud(), commit{name: "first deploy", prog: prog, opts: pulumiOptions{refresh: true},
		want: map[string][]string{}})
	checkHistory(t, newCloud(), commit{name: "first deploy, open to the world", prog: open,
		opts: pulumiOptions{refresh: true}, want: map[string][]string{"create web-from-anywhere": exposure}})
	checkHistory(t, newCloud(), commit{name: "first deploy, CIDR unknown at preview", prog: unknownCidr,
		opts: pulumiOptions{refresh: true}, want: map[string][]string{"create web-from-peer": exposure},
		reasons: map[string]string{"create web-from-peer": "unknown at preview"}})
}

// unknownReferences is a first deploy of groups and the rules between them, the same with a rule open to
// the world, and with a rule whose CIDR is unknown at preview.
func unknownReferences() (prog, open, unknownCidr program) {
	prog = program{
		{typ: securityGroup, name: "web", in: map[string]any{"vpcId": "vpc-1", "description": "web"}},
		{typ: securityGroup, name: "db", in: map[string]any{"vpcId": "vpc-1", "description": "db"}},
		{typ: ingressRule, name: "web-from-vpc", in: map[string]any{"securityGroupId": out("web", "id"),
			"cidrIpv4": "10.0.0.0/16", "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}},
		{typ: ingressRule, name: "db-from-web", in: map[string]any{"securityGroupId": out("db", "id"),
			"referencedSecurityGroupId": out("web", "id"), "fromPort": 5432, "toPort": 5432, "ipProtocol": "tcp"}},
		{typ: classicRule, name: "db-from-web-classic", in: map[string]any{"type": "ingress",
			"securityGroupId": out("db", "id"), "sourceSecurityGroupId": out("web", "id"), "fromPort": 5432,
			"toPort": 5432, "protocol": "tcp"}},
	}
	open = append(append(program{}, prog...), res{typ: ingressRule, name: "web-from-anywhere", in: map[string]any{
		"securityGroupId": out("web", "id"), "cidrIpv4": "0.0.0.0/0", "fromPort": 443, "toPort": 443,
		"ipProtocol": "tcp"}})
	// The CIDR is another new resource's output: unknown at preview, it may be anything.
	unknownCidr = append(append(program{}, prog...),
		res{typ: "aws:ec2/vpc:Vpc", name: "peer", in: map[string]any{"ipv4IpamPoolId": "ipam-pool-1",
			"ipv4NetmaskLength": 16}},
		res{typ: ingressRule, name: "web-from-peer", in: map[string]any{"securityGroupId": out("web", "id"),
			"cidrIpv4": out("peer", "cidrBlock"), "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}})
	return prog, open, unknownCidr
}

// A security group with a rule on it, deleted before it is replaced or not, and the same with its ForceNew
// `description` changed: the group is replaced, and the rule with it (its group's ID is unknown).
func replacedGroup(deleteBeforeReplace bool) (before, after program) {
	before = program{
		{typ: securityGroup, name: "web", deleteBeforeReplace: deleteBeforeReplace,
			in: map[string]any{"vpcId": "vpc-1", "description": "web"}},
		{typ: ingressRule, name: "https", in: map[string]any{"securityGroupId": out("web", "id"),
			"cidrIpv4": "10.0.0.0/16", "fromPort": 443, "toPort": 443, "ipProtocol": "tcp"}},
	}
	return before, before.with("web", func(r *res) { r.in["description"] = "web servers" })
}

// Replacements, create-before-delete (the default) and delete-before-replace, and the dependents they
// replace: loss in every environment that stops on it, and an update that did what its preview showed.
func TestReplacements(t *testing.T) {
	t.Parallel()
	for _, dbr := range []bool{false, true} {
		prog, changed := replacedGroup(dbr)
		replaced := map[string][]string{
			"create-replacement web": loss, "replace web": loss, "delete-replaced web": loss,
			"create-replacement https": loss, "replace https": loss, "delete-replaced https": loss,
		}
		name := map[bool]string{false: "create-before-delete", true: "delete-before-replace"}[dbr]
		checkHistory(t, newCloud(),
			commit{name: name + ": first deploy", prog: prog, opts: pulumiOptions{refresh: true}},
			commit{name: name, prog: changed, opts: pulumiOptions{refresh: true}, want: replaced})
	}
}

// Components: adding one, moving resources under it (aliased, unchanged), and removing it (its children
// aliased back to the stack) change nothing in the cloud: no loss. Removing a component with a child
// deletes the child: loss.
func TestComponents(t *testing.T) {
	t.Parallel()
	checkHistory(t, newCloud(), componentMoves()...)
	withChild := append(program{{typ: component, name: "svc", component: true}},
		res{typ: logGroup, name: "audit", parent: "svc", in: map[string]any{"name": "audit"}})
	checkHistory(t, newCloud(),
		commit{name: "component with a child", prog: withChild, opts: pulumiOptions{refresh: true}},
		commit{name: "component and child removed", prog: program{}, opts: pulumiOptions{refresh: true},
			want: map[string][]string{"delete audit": loss}})
}

// componentMoves is a log group moved under a new component, moved back (the component removed), then
// removed.
func componentMoves() []commit {
	flat := program{
		{typ: logGroup, name: "logs", in: map[string]any{"name": "app", "retentionInDays": 30}},
	}
	nested := program{
		{typ: component, name: "svc", component: true},
		{typ: logGroup, name: "logs", parent: "svc", in: map[string]any{"name": "app", "retentionInDays": 30},
			aliases: []resource.URN{flat.urnOf("logs")}},
	}
	flatAgain := program{
		{typ: logGroup, name: "logs", in: map[string]any{"name": "app", "retentionInDays": 30},
			aliases: []resource.URN{nested.urnOf("logs")}},
	}
	return []commit{
		{name: "first deploy", prog: flat, opts: pulumiOptions{refresh: true}},
		{name: "moved under a new component", prog: nested, opts: pulumiOptions{refresh: true}},
		{name: "component removed, its child moved back", prog: flatAgain, opts: pulumiOptions{refresh: true}},
		{name: "child removed", prog: program{}, opts: pulumiOptions{refresh: true},
			want: map[string][]string{"delete logs": loss}},
	}
}

// retainOnDelete leaves the resource in the cloud: its delete is no loss (and is worded so). protect keeps
// a resource as it is; ignoreChanges hides a change from the diff; replaceOnChanges turns an update into a
// replacement, which is loss.
func TestResourceOptions(t *testing.T) {
	t.Parallel()
	checkHistory(t, newCloud(), retainedRemoved()...)

	db := program{{typ: rdsInstance, name: "db", protect: true, in: map[string]any{
		"engine": "postgres", "instanceClass": "db.t4g.micro", "allocatedStorage": 20,
		"tags": map[string]any{"team": "a"}}}}
	checkHistory(t, newCloud(),
		commit{name: "protected database", prog: db, opts: pulumiOptions{refresh: true},
			want: map[string][]string{"create db": {"cost"}}},
		commit{name: "protected database, tags changed", opts: pulumiOptions{refresh: true},
			prog: db.with("db", func(r *res) { r.in["tags"] = map[string]any{"team": "b"} })},
		commit{name: "unprotected", opts: pulumiOptions{refresh: true},
			prog: db.with("db", func(r *res) { r.in["tags"], r.protect = map[string]any{"team": "b"}, false })},
		commit{name: "ignoreChanges hides a resize", opts: pulumiOptions{refresh: true},
			prog: db.with("db", func(r *res) {
				r.in["tags"], r.in["instanceClass"] = map[string]any{"team": "b"}, "db.r6g.large"
				r.ignoreChanges, r.protect = []string{"instanceClass"}, false
			})},
		commit{name: "replaceOnChanges turns a resize into a replacement", opts: pulumiOptions{refresh: true},
			prog: db.with("db", func(r *res) {
				r.in["tags"], r.in["instanceClass"] = map[string]any{"team": "b"}, "db.r6g.large"
				r.replaceOnChanges, r.protect = []string{"instanceClass"}, false
			}),
			want: map[string][]string{"create-replacement db": {"loss", "cost"}, "replace db": {"loss", "cost"},
				"delete-replaced db": loss}},
	)
}

// retainedRemoved is a bucket with retainOnDelete, then removed from the program.
func retainedRemoved() []commit {
	kept := program{{typ: bucketV2, name: "data", retainOnDelete: true, in: map[string]any{"bucket": "data-1"}}}
	return []commit{
		{name: "retained bucket", prog: kept, opts: pulumiOptions{refresh: true}},
		{name: "retained bucket removed", prog: program{}, opts: pulumiOptions{refresh: true},
			reasons: map[string]string{"delete data": "left in the cloud"}},
	}
}
