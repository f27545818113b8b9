package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

// subject is one Kubernetes identity the authorizer is asked about.
type subject struct {
	User   string
	Groups []string
}

// identity is one row of the reach table: who, and the Kubernetes subjects whose permissions they hold.
// A Cognito group holds the union of its claim-mapped ServiceAccounts' permissions: Kargo's API server asks
// SubjectAccessReview for each ServiceAccount of the project whose claims match, user name only, and
// allows what any of them may do (akuity/kargo v1.11.2 pkg/server/kubernetes/client.go getAuthorizedClient).
type identity struct {
	Name     string    // as the README shows it
	Via      string    // the ServiceAccounts or the access entry
	Subjects []subject // empty: nothing Kubernetes RBAC knows (the note says why)
	Note     string
	group    string // the Cognito group, for approver rows
	stackEnv string // the environment, for stack rows ("" for the preview identity)
	stack    bool
}

// access is one SubjectAccessReview question.
type access struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

func (a access) String() string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += "." + a.Group
	}
	if a.Name != "" {
		r += " " + a.Name
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in " + a.Namespace
	}
	return fmt.Sprintf("%s %s %s", a.Verb, r, where)
}

const kargoGroup = "kargo.akuity.io"

// identities derives the table's rows from the plan: each Cognito group named in a Kargo claims annotation
// of the project's ServiceAccounts, each stack ServiceAccount cluster-setup creates, and each access entry
// of the cluster (CI and admins) with its Kubernetes groups.
func identities(t testing.TB, want intent) []identity {
	t.Helper()
	var rows []identity
	groups := map[string][]string{} // Cognito group → ServiceAccounts
	for _, sa := range plan.Load(t, "kargo").OfKind("ServiceAccount") {
		claims := sa.GetAnnotations()["rbac.kargo.akuity.io/claims"]
		if claims == "" || sa.GetNamespace() != want.Pipeline.Project {
			continue
		}
		var parsed map[string][]string
		if err := json.Unmarshal([]byte(claims), &parsed); err != nil {
			t.Fatalf("ServiceAccount %s: claims annotation %q: %v", sa.GetName(), claims, err)
		}
		for _, g := range parsed["cognito:groups"] {
			groups[g] = append(groups[g], sa.GetName())
		}
	}
	// The Roles bound to a Cognito group as a Kubernetes group: what a person holds at the API server itself,
	// signed in with their groups (the rollback request, lib/pipeline/rollback-request.ts).
	asGroup := map[string][]string{}
	for _, b := range plan.Load(t, "kargo").OfKind("RoleBinding") {
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			if m, _ := s.(map[string]any); m["kind"] == "Group" {
				g := fmt.Sprint(m["name"])
				asGroup[g] = append(asGroup[g], b.GetName())
			}
		}
	}
	for _, g := range sortedKeys(groups) {
		row := identity{Name: "`" + g + "` (Cognito)", group: g}
		sort.Strings(groups[g])
		var via []string
		for _, sa := range groups[g] {
			via = append(via, "`"+sa+"`")
			row.Subjects = append(row.Subjects, subject{User: fmt.Sprintf("system:serviceaccount:%s:%s", want.Pipeline.Project, sa)})
		}
		for _, b := range asGroup[g] {
			via = append(via, "`"+b+"` (as a Kubernetes group)")
		}
		row.Subjects = append(row.Subjects, subject{User: "member-of-" + g, Groups: []string{g, "system:authenticated"}})
		row.Via = strings.Join(via, ", ")
		rows = append(rows, row)
	}
	ns := want.Stacks.Namespace
	// A pod's ServiceAccount token authenticates with these groups too.
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	stackRow := func(name, env string) identity {
		return identity{
			Name: "`" + name + "` (stack)", Via: "ServiceAccount in `" + ns + "`", stack: true, stackEnv: env,
			Subjects: []subject{{User: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name), Groups: saGroups}},
		}
	}
	for _, env := range want.Stacks.Environments {
		rows = append(rows, stackRow(want.Stacks.ServiceAccount+"-"+env, env))
	}
	rows = append(rows, stackRow(want.Stacks.ServiceAccount+"-preview", ""))

	for _, r := range plan.Load(t, "cluster").ResourcesOfType("eks:index:Cluster") {
		entries, _ := r.Inputs["accessEntries"].(map[string]any)
		for _, key := range sortedKeys(entries) {
			entry, _ := entries[key].(map[string]any)
			var groups []string
			for _, g := range asSlice(entry["kubernetesGroups"]) {
				groups = append(groups, fmt.Sprint(g))
			}
			policies, _ := entry["accessPolicies"].(map[string]any)
			row := identity{Name: "`" + key + "` (EKS access entry)", Via: "`" + fmt.Sprint(entry["principalArn"]) + "`"}
			if len(groups) > 0 {
				row.Subjects = []subject{{User: "access-entry:" + key, Groups: append(groups, "system:authenticated")}}
			}
			row.Note = fmt.Sprintf("Kubernetes groups: %s. What it may do is its EKS access policy (%s), which EKS's own authorizer decides, not RBAC: not asked here",
				orNone(groups), strings.Join(sortedKeys(policies), ", "))
			rows = append(rows, row)
		}
	}
	return rows
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// column is one column of the table: questions for the authorizer, the answer shown, and what the pipeline
// and config mean each identity to have.
type column struct {
	Title string
	// Cells are named alternatives (a stage, a namespace, a verb); each holds when all its questions are allowed.
	Cells func(w intent) []cell
	// Expect is the set of cell names the identity must be allowed, and of those the ones only the union of
	// several claim-mapped roles grants (marked in the table); every other cell must be refused.
	Expect func(w intent, id identity) (allowed, combined []string)
}

type cell struct {
	Name string
	All  []access
}

var readVerbs = []string{"get", "list", "watch"}
var writeVerbs = []string{"create", "update", "patch", "delete"}

// kargoStageNames is every Stage of the kargo plan, declared stage by declared stage: gates, each program's
// Stage of a preview or update stage, joins.
func kargoStageNames(w intent) []string { return w.kargoOrder }

// ruleAllows is what cluster-setup's stackRbacRules grant the stack identities: an environment's the rules
// as configured, the preview identity their read verbs only (README "Deploy cluster-setup").
func ruleAllows(w intent, id identity, group, resource, verb string) bool {
	if !id.stack || (id.stackEnv == "" && !slices.Contains(readVerbs, verb)) {
		return false
	}
	for _, r := range w.Stacks.RBACRules {
		if len(r.ResourceNames) == 0 && slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

func columns() []column {
	return []column{
		{
			Title: "promote into (`kargo promote`)",
			// Kargo checks `promote` on the Stage, then creates the Promotion as the user
			// (pkg/server/promote_to_stage_v1alpha1.go).
			Cells: func(w intent) []cell {
				var cells []cell
				for _, s := range kargoStageNames(w) {
					cells = append(cells, cell{s, []access{
						{Verb: "promote", Group: kargoGroup, Resource: "stages", Namespace: w.Pipeline.Project, Name: s},
						{Verb: "create", Group: kargoGroup, Resource: "promotions", Namespace: w.Pipeline.Project},
					}})
				}
				return cells
			},
			// Gates by their approvers; previews by the approvers of the gates that feed them and by their
			// environment's deciders; update stages by their environment's deciders alone (a rollback's
			// update is a decider's act). Each role holds both checks for its own Stages.
			Expect: func(w intent, id identity) ([]string, []string) {
				previews, _, _ := previewsOf(w, id.group)
				return slices.Concat(gatesOf(w, id.group), previews, updatesOf(w, id.group)), nil
			},
		},
		{
			Title: "approve Freight for (`kargo approve`; admitted only where the path brought it)",
			// Kargo checks `promote` on the Stage, then patches the Freight's status
			// (pkg/server/approve_freight_v1alpha1.go); lib/pipeline/approval-admission.ts then admits the
			// approval only for Freight the path brought to the Stage (approval_test.go).
			Cells: func(w intent) []cell {
				var cells []cell
				for _, s := range kargoStageNames(w) {
					cells = append(cells, cell{s, []access{
						{Verb: "promote", Group: kargoGroup, Resource: "stages", Namespace: w.Pipeline.Project, Name: s},
						{Verb: "patch", Group: kargoGroup, Resource: "freights", Subresource: "status", Namespace: w.Pipeline.Project},
					}})
				}
				return cells
			},
			// The decider role's `patch freights/status` with any role's `promote`: a gate's and the previews it
			// feeds come from the gate role (†). The API server admits no approval for a preview stage.
			Expect: func(w intent, id identity) ([]string, []string) {
				gates, updates := gatesOf(w, id.group), updatesOf(w, id.group)
				if len(updates) == 0 {
					return nil, nil
				}
				previews, fed, decided := previewsOf(w, id.group)
				combined := slices.Clone(gates)
				for _, p := range fed {
					if !slices.Contains(decided, p) {
						combined = append(combined, p)
					}
				}
				return slices.Concat(updates, gates, previews), combined
			},
		},
		{
			// The gap no policy closes: a Promotion created through Kargo's generic resource API is checked for
			// the user's `create promotions` only, then created by Kargo's API server as itself
			// (pkg/server/create_resource_v1alpha1.go, through pkg/server/kubernetes/client.go Create); Kargo's
			// Promotion webhook then asks whether that server
			// may promote (it may, everywhere) and whether the Freight is available to the Stage
			// (pkg/webhook/kubernetes/promotion/webhook.go ValidateCreate, at v1.11.2). So any Stage, gates
			// included, with Freight the path (or an admitted approval) brought there.
			Title: "promote through Kargo's resource API (`kargo apply -f promotion.yaml`)",
			Cells: func(w intent) []cell {
				return []cell{{"any Stage, Freight available to it", []access{
					{Verb: "create", Group: kargoGroup, Resource: "promotions", Namespace: w.Pipeline.Project},
				}}}
			},
			Expect: func(w intent, id identity) ([]string, []string) {
				if len(gatesOf(w, id.group)) == 0 && len(updatesOf(w, id.group)) == 0 {
					return nil, nil
				}
				return []string{"any Stage, Freight available to it"}, nil
			},
		},
		rollbackColumn(),
		{
			Title: "change Kargo objects",
			Cells: func(w intent) []cell {
				var cells []cell
				for _, r := range []string{"stages", "warehouses", "freights", "promotiontasks", "projectconfigs", "promotions"} {
					for _, v := range []string{"update", "patch", "delete"} {
						cells = append(cells, cell{v + " " + r, []access{{Verb: v, Group: kargoGroup, Resource: r, Namespace: w.Pipeline.Project}}})
					}
				}
				cells = append(cells, cell{"create stages", []access{{Verb: "create", Group: kargoGroup, Resource: "stages", Namespace: w.Pipeline.Project}}})
				return cells
			},
			Expect: func(intent, identity) ([]string, []string) { return nil, nil },
		},
		{
			Title: "read Secrets in",
			Cells: func(w intent) []cell {
				var cells []cell
				for _, ns := range []string{w.Pipeline.Project, w.Stacks.Namespace, "argocd", "kargo", "kube-system"} {
					cells = append(cells, cell{ns, []access{{Verb: "get", Resource: "secrets", Namespace: ns}}})
				}
				return cells
			},
			Expect: func(w intent, id identity) ([]string, []string) {
				var out []string
				if ruleAllows(w, id, "", "secrets", "get") {
					out = append(out, w.Stacks.Namespace)
				}
				return out, nil
			},
		},
		{
			Title: "change Stacks or Applications",
			Cells: func(w intent) []cell {
				return []cell{
					{"Stacks", []access{{Verb: "patch", Group: "pulumi.com", Resource: "stacks", Namespace: w.Stacks.Namespace}}},
					{"Applications", []access{{Verb: "patch", Group: "argoproj.io", Resource: "applications", Namespace: "argocd"}}},
				}
			},
			Expect: func(intent, identity) ([]string, []string) { return nil, nil },
		},
		{
			Title: "in the stacks namespace",
			Cells: func(w intent) []cell {
				var cells []cell
				seen := map[string]bool{}
				for _, r := range w.Stacks.RBACRules {
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							for _, v := range append(slices.Clone(readVerbs), writeVerbs...) {
								name := resourceVerb(g, res, v)
								if !seen[name] {
									seen[name] = true
									cells = append(cells, cell{name, []access{{Verb: v, Group: g, Resource: res, Namespace: w.Stacks.Namespace}}})
								}
							}
						}
					}
				}
				return cells
			},
			Expect: func(w intent, id identity) ([]string, []string) {
				var out []string
				for _, r := range w.Stacks.RBACRules {
					for _, g := range r.APIGroups {
						for _, res := range r.Resources {
							for _, v := range append(slices.Clone(readVerbs), writeVerbs...) {
								name := resourceVerb(g, res, v)
								if ruleAllows(w, id, g, res, v) && !slices.Contains(out, name) {
									out = append(out, name)
								}
							}
						}
					}
				}
				return out, nil
			},
		},
		{
			Title: "token and access reviews",
			// system:auth-delegator, which PKO v2 workspaces need (README "Deploy cluster-setup").
			Cells: func(intent) []cell {
				return []cell{{"yes", []access{
					{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
					{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
				}}}
			},
			Expect: func(_ intent, id identity) ([]string, []string) {
				if id.stack {
					return []string{"yes"}, nil
				}
				return nil, nil
			},
		},
		{
			Title: "escalate",
			Cells: func(w intent) []cell {
				var cells []cell
				for _, ns := range []string{w.Pipeline.Project, w.Stacks.Namespace} {
					cells = append(cells,
						cell{"create rolebindings in " + ns, []access{{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: ns}}},
						cell{"bind roles in " + ns, []access{{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: ns}}},
						cell{"escalate roles in " + ns, []access{{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: ns}}},
						cell{"ServiceAccount tokens in " + ns, []access{{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: ns}}},
						cell{"pods/exec in " + ns, []access{{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: ns}}},
					)
				}
				cells = append(cells, cell{"impersonate", []access{{Verb: "impersonate", Resource: "serviceaccounts"}}})
				return cells
			},
			Expect: func(intent, identity) ([]string, []string) { return nil, nil },
		},
	}
}

// resourceVerb names a cell "resource: verb", which the table shows as "resource: verb, verb".
func resourceVerb(group, resource, verb string) string {
	if group != "" {
		resource += "." + group
	}
	return resource + ": " + verb
}
