package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// letsThrough is what Kargo's API checks before it approves Freight for a Stage, each asked of the API
// server's authorizer (akuity/kargo v1.11.2 pkg/server/approve_freight_v1alpha1.go: `promote` on the Stage,
// then the Freight's status patched as the user).
func letsThrough(project, stage string) []access {
	return []access{
		{Verb: "promote", Group: kargoGroup, Resource: "stages", Namespace: project, Name: stage},
		{Verb: "patch", Group: kargoGroup, Resource: "freights", Subresource: "status", Namespace: project},
	}
}

// The API server lets exactly an environment's deciders let a stop of its previews through, by approving
// the Freight for each program's Stage of the environment's update stage, and nobody else: no other Cognito
// group the plan maps, no stack identity, no access entry.
func TestOnlyDecidersLetAStopThrough(t *testing.T) {
	table, w := reach(t)
	col := slices.IndexFunc(table.columns, func(c column) bool { return strings.HasPrefix(c.Title, "approve Freight for (") })
	if col < 0 {
		t.Fatal("the reach table has no approval column")
	}
	stopping := 0
	for _, s := range w.Pipeline.Stages {
		if s.Kind != "update" {
			continue
		}
		deciders := slices.Clone(w.Deciders[s.Environment])
		sort.Strings(deciders)
		if len(deciders) > 0 {
			stopping++
		}
		for _, stage := range w.kargoStages[s.Name].Promoted {
			var allowed []string
			for i, row := range table.rows {
				if slices.Contains(table.allowed[i][col], stage) {
					if row.group == "" {
						t.Errorf("%s may approve Freight for %s: only Cognito groups may", row.Name, stage)
						continue
					}
					allowed = append(allowed, row.group)
				}
			}
			sort.Strings(allowed)
			if !slices.Equal(allowed, deciders) {
				t.Errorf("environment %s: the API server lets %v approve Freight for %s; its deciders are %v", s.Environment, allowed, stage, deciders)
			}
		}
	}
	if stopping == 0 {
		t.Fatal("no environment of the plan stops on anything: nothing was asked")
	}
}

// Nobody outside the plan's roles reaches an approval either: any other ServiceAccount of the Kargo project
// (Kargo maps a user only onto ServiceAccounts whose claims match), or a signed-in Kubernetes user.
func TestNoOneElseLetsAStopThrough(t *testing.T) {
	in := install(t)
	_, w := reach(t)
	others := []subject{
		{User: fmt.Sprintf("system:serviceaccount:%s:default", w.Pipeline.Project), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + w.Pipeline.Project, "system:authenticated"}},
		{User: "someone", Groups: []string{"system:authenticated"}},
	}
	for _, s := range w.Pipeline.Stages {
		if s.Kind != "update" {
			continue
		}
		for _, stage := range w.kargoStages[s.Name].Promoted {
			for _, who := range others {
				all := true
				for _, a := range letsThrough(w.Pipeline.Project, stage) {
					r, err := in.server.Clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(),
						&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
							User: who.User, Groups: who.Groups,
							ResourceAttributes: &authorizationv1.ResourceAttributes{
								Verb: a.Verb, Group: a.Group, Resource: a.Resource, Subresource: a.Subresource,
								Namespace: a.Namespace, Name: a.Name,
							},
						}}, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					all = all && r.Status.Allowed
				}
				if all {
					t.Errorf("%s may approve Freight for %s: only %s's deciders may", who.User, stage, s.Environment)
				}
			}
		}
	}
}
