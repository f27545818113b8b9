package analysis

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1"
	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// The values the engine puts in its events' inputs where it cannot say one: the unknown sentinel
// (pulumi/pulumi v3.274.1 pkg/resource/stack/deployment.go computedValuePlaceholder) and a secret blinded as
// the CLI uploads it (pkg/backend/httpstate/state.go, ConvertEngineEvent with showSecrets false).
const unknownAtPreview = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

func blindedSecret() map[string]any {
	return map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "[secret]"}
}

const ingressRule = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"

// A preview stops where a value deciding a class cannot be told, saying which and why, and not for an
// unknown reference, a component's or provider's delete, or a resource left in the cloud: through the plan's
// preview template, Argo Rollouts' analysis controller and the Job.
func TestPreviewStopsOnlyWhereItCannotTell(t *testing.T) {
	t.Parallel()
	tr, cluster, _ := templateOf(t, "preview")
	firstDeploy := []step{
		{op: "create", typ: "aws:ec2/securityGroup:SecurityGroup", name: "app", inputs: map[string]any{"vpcId": unknownAtPreview}},
		{op: "create", typ: ingressRule, name: "from-lb", inputs: map[string]any{"securityGroupId": unknownAtPreview, "referencedSecurityGroupId": unknownAtPreview, "fromPort": 8080}},
	}
	for _, c := range []struct {
		name, stopOn string
		steps        []step
		want         v1alpha1.AnalysisPhase
		line         string
	}{
		{name: "a first deploy whose rules reference new groups", stopOn: "exposure", steps: firstDeploy, want: successful},
		{name: "a CIDR unknown at preview", stopOn: "exposure", want: failed,
			steps: append(append([]step{}, firstDeploy...), step{op: "create", typ: ingressRule, name: "from-vpc", inputs: map[string]any{"securityGroupId": unknownAtPreview, "cidrIpv4": unknownAtPreview}}),
			line:  `- from-vpc (` + ingressRule + `): create, exposure (cidrIpv4 unknown at preview)`},
		{name: "a secret CIDR", stopOn: "exposure", want: failed,
			steps: []step{{op: "create", typ: ingressRule, name: "from-partner", inputs: map[string]any{"cidrIpv4": blindedSecret()}}},
			line:  `- from-partner (` + ingressRule + `): create, exposure (cidrIpv4 secret)`},
		{name: "a component and a provider removed, a retained bucket dropped", stopOn: "loss", want: successful, steps: []step{
			{op: "delete", typ: "app:index:Service", name: "old-api", component: true},
			{op: "delete", typ: "pulumi:providers:aws", name: "eu"},
			{op: "delete", typ: "aws:s3/bucketV2:BucketV2", name: "archive", retain: true},
		}},
		{name: "a retained bucket dropped, where every change stops", stopOn: "all", want: failed,
			steps: []step{{op: "delete", typ: "aws:s3/bucketV2:BucketV2", name: "archive", retain: true}},
			line:  `- archive (aws:s3/bucketV2:BucketV2): delete, left in the cloud (retainOnDelete), only dropped from the stack`},
		{name: "a bucket dropped without retainOnDelete", stopOn: "loss", want: failed,
			steps: []step{{op: "delete", typ: "aws:s3/bucketV2:BucketV2", name: "archive"}},
			line:  `- archive (aws:s3/bucketV2:BucketV2): delete, loss`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			previewWith(cloud, c.steps...)
			run := withArgs(against(tr.base, cloud.URL), map[string]string{"stop-on": c.stopOn, "deciders": "security-approvers", "approve-stage": "qa-app"})
			got, jobs := driveJobs(t, run, cluster...)
			if got.Status.Phase != c.want {
				t.Fatalf("phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
			}
			if c.line != "" {
				expectReason(t, jobs, `(?m)^`+regexp.QuoteMeta(c.line)+`$`)
			}
		})
	}
}

// An update that did less than its preview's replacement (a trigger unknown at preview turned out unchanged,
// and the provider updated in place) passes, and its record and log say so.
func TestUpdateLessThanItsReplacement(t *testing.T) {
	t.Parallel()
	tr, cluster, _ := templateOf(t, "update")
	db := func(op string) step {
		return step{op: op, typ: "aws:rds/instance:Instance", name: "db", diffs: []string{"dbSubnetGroupName", "tags"}, inputs: map[string]any{"dbSubnetGroupName": unknownAtPreview}}
	}
	for _, c := range []struct {
		name   string
		update step
		want   v1alpha1.AnalysisPhase
	}{
		{name: "updated in place", update: step{op: "update", typ: "aws:rds/instance:Instance", name: "db", diffs: []string{"tags"}}, want: successful},
		{name: "updated in place, and more", update: step{op: "update", typ: "aws:rds/instance:Instance", name: "db", diffs: []string{"tags", "publiclyAccessible"}}, want: failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			ops("update", op(commit, "succeeded", t0, nil))(cloud)
			cloud.stack.setEvents("update", updateID(1), engineEvents(false, c.update))
			for id, v := range cloud.stack.previewed {
				if v == 1 {
					cloud.stack.setEvents("preview", id, engineEvents(true, db("create-replacement"), db("replace"), step{op: "delete-replaced", typ: "aws:rds/instance:Instance", name: "db"}))
				}
			}
			got, jobs := driveJobs(t, against(tr.base, cloud.URL), cluster...)
			if got.Status.Phase != c.want {
				t.Fatalf("phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
			}
			if c.want == failed {
				expectReason(t, jobs, `(?m)^- db \(aws:rds/instance:Instance\): update: changed publiclyAccessible, which the preview did not show changing$`)
				return
			}
			matched, _ := recordOf(t, jobs[0])["matched"].([]any)
			if len(matched) != 1 || !strings.HasPrefix(matched[0].(map[string]any)["lessThan"].(string), "less than its preview: the preview replaced it") {
				t.Errorf("the record does not say the update did less than its preview: %v", matched)
			}
			if !strings.Contains(jobs[0].Stdout, "passed; it did less than its preview:\n- db (aws:rds/instance:Instance): update: less than its preview") {
				t.Errorf("the log does not say the update did less: %q", jobs[0].Stdout)
			}
		})
	}
}

// Events that are fewer than their summary counts right after the operation succeeded are read again at each
// interval, and pass once they are all there; the batch lost for good fails once the looks run out.
func TestIncompleteEventsReadAgain(t *testing.T) {
	t.Parallel()
	tr, cluster, _ := templateOf(t, "update")
	changed := append(append([]step{}, harmless...), ofClass["loss"]...)
	for _, c := range []struct {
		name     string
		complete int // the look (first page asked) from which the events are all there; 0: never
		want     v1alpha1.AnalysisPhase
	}{
		{name: "all there on the third look", complete: 3, want: successful},
		{name: "a replacement's delete lost for good", want: failed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cloud := newCloud(t, token)
			ops("update", op(commit, "succeeded", t0, nil))(cloud)
			full := engineEvents(false, changed...)
			// The replacement's delete-replaced, a half the summary does not count, not there yet.
			short := append(append([]apitype.EngineEvent{}, full[:len(full)-2]...), full[len(full)-1])
			cloud.stack.setEvents("update", updateID(1), short)
			for id, v := range cloud.stack.previewed {
				if v == 1 {
					cloud.stack.setEvents("preview", id, full)
				}
			}
			looks := 0
			cloud.override = func(r *http.Request) *answer {
				if strings.HasSuffix(r.URL.Path, "/update/"+updateID(1)+"/events") && r.URL.Query().Get("continuationToken") == "" {
					if looks++; looks == c.complete {
						cloud.stack.setEvents("update", updateID(1), full)
					}
				}
				return nil
			}
			got, jobs := driveJobs(t, against(tr.base, cloud.URL), cluster...)
			if got.Status.Phase != c.want {
				t.Fatalf("phase %s, want %s: %s (jobs %+v)", got.Status.Phase, c.want, got.Status.Message, jobs)
			}
			if c.want == failed {
				expectReason(t, jobs, `^events incomplete: replace of data \(aws:s3/bucketV2:BucketV2\) without its delete-replaced or discard-replaced; still so after 7 looks over \d+s$`)
				return
			}
			if n := strings.Count(jobs[0].Stderr, "events incomplete: replace of data"); n != c.complete-1 {
				t.Errorf("%d looks said the events were incomplete, want %d: %q", n, c.complete-1, jobs[0].Stderr)
			}
		})
	}
}
