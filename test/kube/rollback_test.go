package kube

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
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

// kargoAPIUser is the user Kargo's API server writes as: the chart's ServiceAccount kargo-api in the namespace
// the plan installs Kargo's chart into.
func kargoAPIUser(t *testing.T) string {
	for _, r := range plan.Load(t, "kargo").ResourcesOfType("kubernetes:helm.sh/v3:Release") {
		if chart, _ := r.Inputs["chart"].(string); strings.HasSuffix(chart, "kargo") {
			if ns, _ := r.Inputs["namespace"].(string); ns != "" {
				return "system:serviceaccount:" + ns + ":kargo-api"
			}
		}
	}
	t.Fatal("the kargo plan installs no Kargo chart with a namespace")
	return ""
}

// mappedAccounts is, per Cognito group, the project's ServiceAccounts whose Kargo claims name it.
func mappedAccounts(t *testing.T, project string) map[string][]string {
	out := map[string][]string{}
	for _, sa := range plan.Load(t, "kargo").OfKind("ServiceAccount") {
		claims := sa.GetAnnotations()["rbac.kargo.akuity.io/claims"]
		if claims == "" || sa.GetNamespace() != project {
			continue
		}
		var parsed map[string][]string
		if err := json.Unmarshal([]byte(claims), &parsed); err != nil {
			t.Fatalf("ServiceAccount %s: claims %q: %v", sa.GetName(), claims, err)
		}
		for _, g := range parsed["cognito:groups"] {
			out[g] = append(out[g], sa.GetName())
		}
	}
	return out
}

// With the whole plan applied to the real kube-apiserver. Through Kargo (`kargo update configmap`, which is
// how npm run rollback writes it), Kargo's API server asks RBAC whether a ServiceAccount the person's groups
// map to may get and update the request by name (a SubjectAccessReview of the ServiceAccount's user name
// alone, akuity/kargo v1.11.2 pkg/server/kubernetes/client.go getAuthorizedClient), then writes as kargo-api:
// every group of the pipeline may write exactly the requests of the environments it is a requester of. The
// policy admits Kargo's write with every field and a known kind, whoever it names as `by`, and nobody else's
// change of the data but the environment's groups at the API server itself, signing as themselves. The kargo
// project's empty request and a change of its metadata pass; only an administrator deletes it.
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
	// Kargo's API server as itself; system:masters stands in for the chart's kargo-api ClusterRole (which
	// updates ConfigMaps), so what is asked here is the policy alone.
	kargo := as(kargoAPIUser(t), "system:serviceaccounts", "system:masters")
	cms := func(c kubernetes.Interface) typedcorev1.ConfigMapInterface { return c.CoreV1().ConfigMaps(project) }
	dry := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	update := func(c kubernetes.Interface, cm *corev1.ConfigMap, opts metav1.UpdateOptions) error {
		_, err := cms(c).Update(ctx, cm, opts)
		return err
	}
	envs := environments(w)
	// Wrong twice (an administrator's change of the data, a field missing): refused by either rule.
	untilEnforced(t, policy, func(int) error {
		return update(admin, rollbackRequest(project, envs[0], "someone@example.com", "message"), dry)
	})
	refused := func(what string, err error, by string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s was admitted", what)
		} else if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), by) {
			t.Errorf("%s was refused, but not by %s: %v", what, by, err)
		}
	}
	mayKargo := func(sa, verb, name string) bool {
		r, err := in.server.Clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:" + project + ":" + sa,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "configmaps", Version: "v1", Namespace: project, Name: name},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		return r.Status.Allowed
	}
	accounts := mappedAccounts(t, project)
	if len(accounts) == 0 {
		t.Fatal("the plan maps no Cognito group onto a Kargo role ServiceAccount")
	}
	admitted := 0
	for _, env := range envs {
		name := "rollback-" + env
		requesters := requestersOf(w, env)
		// Through Kargo: a group may write the request when one of the accounts it maps to may get and update it.
		for _, g := range sortedKeys(accounts) {
			may := slices.ContainsFunc(accounts[g], func(sa string) bool {
				return mayKargo(sa, "get", name) && mayKargo(sa, "update", name)
			})
			if want := slices.Contains(requesters, g); may != want {
				t.Errorf("through Kargo, %s may write %s: %v; the pipeline means %v (its deciders and promoters)", g, name, may, want)
			}
			for _, sa := range accounts[g] {
				if mayKargo(sa, "create", name) || mayKargo(sa, "delete", name) {
					t.Errorf("Kargo role ServiceAccount %s may create or delete ConfigMaps: only the kargo project creates a request", sa)
				}
			}
		}
		if len(requesters) == 0 {
			if _, err := cms(admin).Get(ctx, name, metav1.GetOptions{}); err == nil {
				t.Errorf("%s exists though %s has no deciders or promoters to write it", name, env)
			}
			refused("Kargo's write of "+name+", which has no deciders or promoters",
				update(kargo, rollbackRequest(project, env, "root@example.com"), dry), policy)
			continue
		}
		// The kargo project created it empty; only an administrator deletes it, and creating it empty passes.
		if cm, err := cms(admin).Get(ctx, name, metav1.GetOptions{}); err != nil || len(cm.Data) != 0 {
			t.Fatalf("the kargo project's %s, empty, is not there: %v %v", name, err, cm)
		}
		for _, g := range requesters {
			if err := cms(as("alice-"+g+"@example.com", g)).Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
				t.Errorf("%s deleted %s", g, name)
			}
		}
		if err := cms(admin).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("an administrator could not delete %s: %v", name, err)
		}
		empty := func() *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: project}}
		}
		if _, err := cms(admin).Create(ctx, empty(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the kargo project's empty %s was refused: %v", name, err)
		}
		t.Cleanup(func() {
			_ = cms(admin).Delete(context.Background(), name, metav1.DeleteOptions{})
			_, _ = cms(admin).Create(context.Background(), empty(), metav1.CreateOptions{})
		})
		// Kargo's write: every field and a known kind; `by` is as the requester stated it.
		for _, f := range rollbackFields {
			refused("Kargo's write of "+name+" without "+f, update(kargo, rollbackRequest(project, env, "anyone@example.com", f), dry), policy)
		}
		odd := rollbackRequest(project, env, "anyone@example.com")
		odd.Data["kind"] = "revert"
		refused("Kargo's write of "+name+" of kind revert", update(kargo, odd, dry), policy)
		if err := update(kargo, rollbackRequest(project, env, "anyone@example.com"), metav1.UpdateOptions{}); err != nil {
			t.Errorf("Kargo's well-formed write of %s was refused: %v", name, err)
			continue
		}
		admitted++
		// Nobody else changes the data: an administrator, another component, another environment's people.
		refused("an administrator's change of "+name, update(admin, rollbackRequest(project, env, "root@example.com"), dry), policy)
		controller := as("system:serviceaccount:kargo:kargo-controller", "system:masters")
		refused("another component's change of "+name, update(controller, rollbackRequest(project, env, "x@example.com"), dry), policy)
		for _, og := range outsiders(w, requesters) {
			user := "eve-" + og + "@example.com"
			if err := update(as(user, og), rollbackRequest(project, env, user), dry); err == nil {
				t.Errorf("%s (not %s's deciders or promoters) rewrote %s", og, env, name)
			}
		}
		// A change of its metadata alone (a later deploy of the kargo project) passes.
		labelled, err := cms(admin).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		labelled.Labels = map[string]string{"example.com/touched": "yes"}
		if err := update(admin, labelled, dry); err != nil {
			t.Errorf("an administrator's change of %s's labels alone was refused: %v", name, err)
		}
		// At an API server that knows people: the environment's groups, signing as themselves.
		for _, g := range requesters {
			user := "alice-" + g + "@example.com"
			alice := as(user, g)
			refused(g+"'s request for "+env+" signed by someone else", update(alice, rollbackRequest(project, env, "mallory@example.com"), dry), policy)
			if err := update(alice, rollbackRequest(project, env, user), dry); err != nil {
				t.Errorf("%s's request for %s, signed by themselves, was refused: %v", g, env, err)
			}
		}
	}
	if admitted == 0 {
		t.Fatal("no environment has deciders or promoters: no request was admitted")
	}
	// Every other ConfigMap passes untouched, one with a generated name included.
	generated := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "settings-", Namespace: project}, Data: map[string]string{"a": "b"}}
	if _, err := cms(admin).Create(ctx, generated, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("an administrator's ConfigMap with a generated name was refused: %v", err)
	}
	for _, name := range []string{"settings", "rollback-" + strings.Join(envs, "-") + "-notes"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: project}, Data: map[string]string{"a": "b"}}
		if _, err := cms(admin).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
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
