package kube

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"infra-change-platform/test/internal/plan"
)

// A Promotion into a Stage, made by hand through Kargo's API (`kargo promote`, the Promote button), takes
// `promote` on that Stage and `create` on promotions (akuity/kargo v1.11.2 pkg/server/promote_to_stage_v1alpha1.go),
// and Kargo's Promotion webhook asks the same `promote` of whoever creates it
// (pkg/webhook/kubernetes/promotion/webhook.go authorize). Asked of the API server's authorizer over the whole
// plan: every program's update Stage of every environment is promoted into by its deciders alone, every
// preview Stage by its deciders and the approvers of the gates that feed it, so a promoter who is not a
// decider starts a rollback and only a decider finishes it.
func TestHandMadeUpdatesAreDecidersActs(t *testing.T) {
	table, w := reach(t)
	col := slices.IndexFunc(table.columns, func(c column) bool { return strings.HasPrefix(c.Title, "promote into (") })
	if col < 0 {
		t.Fatal("the reach table has no promotion column")
	}
	who := func(stage string) []string {
		var out []string
		for i, row := range table.rows {
			if slices.Contains(table.allowed[i][col], stage) {
				out = append(out, strings.TrimPrefix(row.Name, "`")) // a non-group row shows as itself
				if row.group != "" {
					out[len(out)-1] = row.group
				}
			}
		}
		sort.Strings(out)
		return out
	}
	asked := 0
	for _, s := range w.Pipeline.Stages {
		var want []string
		switch s.Kind {
		case "update":
			want = slices.Clone(w.Deciders[s.Environment])
		case "preview":
			want = slices.Clone(w.Deciders[s.Environment])
			for _, g := range w.Pipeline.Stages {
				if g.Kind == "gate" && slices.Contains(fromOf(s.From), g.Name) {
					want = append(want, g.Approvers...)
				}
			}
		default:
			continue
		}
		sort.Strings(want)
		want = slices.Compact(want)
		for _, stage := range w.kargoStages[s.Name].Promoted {
			asked++
			if got := who(stage); !slices.Equal(got, want) {
				t.Errorf("%s stage %s of environment %s: %v may promote into it by hand; the pipeline means %v (update: its deciders; preview: its deciders and the approvers of the gates feeding it)", s.Kind, stage, s.Environment, got, want)
			}
		}
	}
	if asked == 0 {
		t.Fatal("the pipeline has no preview or update stage: nothing was asked")
	}
}

// rollbackFields are what a rollback request holds (the contract the rollback command writes and the
// promotions read): every one is required.
var rollbackFields = []string{"kind", "to", "from", "stages", "by", "message", "at"}

func rollbackRequest(project, env, by string, drop ...string) *corev1.ConfigMap {
	data := map[string]string{
		"kind": "rollback", "to": "f0e1d2c3b4a5968778695a4b3c2d1e0f12345678", "from": `{"` + env + `-bucket":"a1"}`,
		"stages": `["` + env + `-bucket"]`, "by": by, "message": "the release broke uploads", "at": "2026-11-28T11:00:00Z",
	}
	for _, f := range drop {
		delete(data, f)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rollback-" + env, Namespace: project}, Data: data}
}

// With the whole plan applied to the real kube-apiserver: an environment's rollback request is written only by
// a member of its deciders or promoters (as a Kubernetes user in that group, which is all RBAC and the policy
// see), only with every field, a known kind and `by` the writer's own user name; another environment's people
// are refused, and so is anyone for an environment with neither; the requesters create no other ConfigMap
// there, and everybody else's ConfigMaps pass untouched.
func TestRollbackRequestsComeFromTheEnvironmentsPeople(t *testing.T) {
	in := install(t)
	w := readIntent(t)
	project, ctx := w.Pipeline.Project, context.Background()
	var policy string
	for _, o := range plan.Load(t, "kargo").OfKind("ValidatingAdmissionPolicy") {
		if strings.HasSuffix(o.GetName(), "-rollback-requests") {
			policy = o.GetName()
		}
	}
	if policy == "" {
		t.Fatal("the kargo plan has no rollback requests' admission policy")
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		c := rest.CopyConfig(in.server.Config)
		c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		return kubernetes.NewForConfigOrDie(c)
	}
	admin := as("root@example.com", "system:masters")
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	create := func(c kubernetes.Interface, cm *corev1.ConfigMap, opts metav1.CreateOptions) error {
		_, err := c.CoreV1().ConfigMaps(project).Create(ctx, cm, opts)
		return err
	}
	envs := environments(w)
	deadline := time.Now().Add(enforcedWithin)
	for {
		// Wrong thrice (not a requester, signed by someone else, a field missing): refused by any of the rules.
		err := create(admin, rollbackRequest(project, envs[0], "someone-else@example.com", "message"), dry)
		if err != nil && strings.Contains(err.Error(), policy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s is not enforced after %s: %v", policy, enforcedWithin, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	refused := func(what string, err error, by string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s was admitted", what)
		} else if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), by) {
			t.Errorf("%s was refused, but not by %s: %v", what, by, err)
		}
	}
	admitted := 0
	for _, env := range envs {
		requesters := requestersOf(w, env)
		if len(requesters) == 0 {
			refused("an administrator's request for "+env+", which has no deciders or promoters",
				create(admin, rollbackRequest(project, env, "root@example.com"), dry), policy)
			continue
		}
		for _, g := range requesters {
			user := "alice-" + g + "@example.com"
			alice := as(user, g)
			refused(g+"'s request for "+env+" signed by someone else", create(alice, rollbackRequest(project, env, "mallory@example.com"), dry), policy)
			for _, f := range rollbackFields {
				refused(g+"'s request for "+env+" without "+f, create(alice, rollbackRequest(project, env, user, f), dry), policy)
			}
			odd := rollbackRequest(project, env, user)
			odd.Data["kind"] = "revert"
			refused(g+"'s request for "+env+" of kind revert", create(alice, odd, dry), policy)
			other := rollbackRequest(project, env, user)
			other.Name = "settings-" + env
			refused(g+"'s ConfigMap that is no rollback request", create(alice, other, dry), policy)
			if err := create(alice, rollbackRequest(project, env, user), metav1.CreateOptions{}); err != nil {
				t.Errorf("%s's request for %s, signed by themselves, was refused: %v", g, env, err)
				continue
			}
			admitted++
			// A second rollback rewrites it, by the one who asks now.
			cm := rollbackRequest(project, env, user)
			cm.Data["kind"], cm.Data["message"] = "reconcile", "drift in the bucket policy"
			if _, err := alice.CoreV1().ConfigMaps(project).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Errorf("%s's rewrite of %s's request was refused: %v", g, env, err)
			}
			// Nobody else rewrites or deletes it: RBAC names the request in each environment's Role.
			for _, og := range outsiders(w, requesters) {
				eve := as("eve-"+og+"@example.com", og)
				if _, err := eve.CoreV1().ConfigMaps(project).Update(ctx, rollbackRequest(project, env, "eve-"+og+"@example.com"), metav1.UpdateOptions{}); err == nil {
					t.Errorf("%s (not %s's) rewrote %s's rollback request", og, env, env)
				}
				if err := eve.CoreV1().ConfigMaps(project).Delete(ctx, "rollback-"+env, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
					t.Errorf("%s (not %s's) deleted %s's rollback request", og, env, env)
				}
			}
			if err := alice.CoreV1().ConfigMaps(project).Delete(ctx, "rollback-"+env, metav1.DeleteOptions{}); err != nil {
				t.Errorf("%s could not delete %s's rollback request: %v", g, env, err)
			}
		}
		// Everyone else, another environment's people who may create their own included: refused.
		for _, og := range outsiders(w, requesters) {
			user := "eve-" + og + "@example.com"
			if err := create(as(user, og), rollbackRequest(project, env, user), dry); err == nil {
				t.Errorf("%s (not %s's deciders or promoters) asked for %s's rollback", og, env, env)
			} else if !apierrors.IsForbidden(err) {
				t.Errorf("%s's request for %s was refused, but not as forbidden: %v", og, env, err)
			}
		}
		refused("an administrator's request for "+env, create(admin, rollbackRequest(project, env, "root@example.com"), dry), policy)
	}
	if admitted == 0 {
		t.Fatal("no environment has deciders or promoters: no request was admitted")
	}
	// A generated name is judged as any other, never refused for lack of one.
	generated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "settings-", Namespace: project}, Data: map[string]string{"a": "b"}}
	if err := create(admin, generated, dry); err != nil {
		t.Errorf("an administrator's ConfigMap with a generated name was refused: %v", err)
	}
	for _, name := range []string{"settings", "rollback-" + strings.Join(envs, "-") + "-notes"} {
		if slices.Contains(envs, strings.TrimPrefix(name, "rollback-")) {
			continue
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: project}, Data: map[string]string{"a": "b"}}
		if err := create(admin, cm, dry); err != nil {
			t.Errorf("an administrator's ConfigMap %s, no environment's request, was refused: %v", name, err)
		}
	}
}

// outsiders are the pipeline's groups (every gate's approvers, every environment's deciders) outside `in`,
// and one group the pipeline never names.
func outsiders(w intent, in []string) []string {
	out := []string{"not-in-the-pipeline"}
	add := func(groups []string) {
		for _, g := range groups {
			if !slices.Contains(in, g) && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	for _, s := range w.Pipeline.Stages {
		add(s.Approvers)
	}
	for _, env := range environments(w) {
		add(w.Deciders[env])
	}
	return out
}
