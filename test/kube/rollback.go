package kube

import (
	"slices"
	"sort"
)

// Who may start and finish an environment's rollback, derived from the pipeline as a reader of
// kargo/pipeline.ts would: an environment's promoters are the approvers of the gates its preview stages take
// Freight from; its deciders and promoters may promote into its preview stages and write its rollback
// request; its update stages are promoted by hand by its deciders alone.

// fromOf is a declared stage's upstream stages (none from the Warehouse).
func fromOf(from any) []string {
	var out []string
	for _, u := range asSlice(from) {
		if s, ok := u.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// promotersOf are the approvers of every gate one of the environment's preview stages takes Freight from.
func promotersOf(w intent, env string) []string {
	var gates []string
	for _, s := range w.Pipeline.Stages {
		if s.Kind == "preview" && s.Environment == env {
			gates = append(gates, fromOf(s.From)...)
		}
	}
	var out []string
	for _, s := range w.Pipeline.Stages {
		if s.Kind == "gate" && slices.Contains(gates, s.Name) {
			for _, g := range s.Approvers {
				if !slices.Contains(out, g) {
					out = append(out, g)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// requestersOf are the groups that may write the environment's rollback request: deciders and promoters.
func requestersOf(w intent, env string) []string {
	out := slices.Clone(promotersOf(w, env))
	for _, g := range w.Deciders[env] {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// previewsOf are the preview stages' Kargo Stages group g may promote into: each program's Stage of every
// preview stage one of its gates feeds, and of every environment it decides.
func previewsOf(w intent, g string) (all, fed, decided []string) {
	gates := gatesOf(w, g)
	for _, s := range w.Pipeline.Stages {
		if s.Kind != "preview" {
			continue
		}
		feeds := slices.ContainsFunc(fromOf(s.From), func(u string) bool { return slices.Contains(gates, u) })
		decides := slices.Contains(w.Deciders[s.Environment], g)
		for _, k := range w.kargoStages[s.Name].Promoted {
			if feeds {
				fed = append(fed, k)
			}
			if decides {
				decided = append(decided, k)
			}
			if feeds || decides {
				all = append(all, k)
			}
		}
	}
	return all, fed, decided
}

// environments is every environment of the pipeline.
func environments(w intent) []string { return sortedKeys(w.Deciders) }

// gatesOf are the gates group g approves; updatesOf every program's Stage of the update stages of the
// environments whose stops g decides (never a join: nothing is promoted into it).
func gatesOf(w intent, g string) []string {
	var out []string
	for _, s := range w.Pipeline.Stages {
		if s.Kind == "gate" && slices.Contains(s.Approvers, g) {
			out = append(out, s.Name)
		}
	}
	return out
}

func updatesOf(w intent, g string) []string {
	var out []string
	for _, s := range w.Pipeline.Stages {
		if s.Kind == "update" && slices.Contains(w.Deciders[s.Environment], g) {
			out = append(out, w.kargoStages[s.Name].Promoted...)
		}
	}
	return out
}

// rollbackColumn is the reach table's column of the rollback requests each group may write.
func rollbackColumn() column {
	return column{
		// Written through Kargo (`kargo update configmap`, npm run rollback), which asks RBAC whether one of the
		// person's Kargo role ServiceAccounts may get and update the request by name, then writes as itself
		// (rollback_test.go); or, where the API server knows people, by the group itself. The kargo project
		// creates each request: nobody else may.
		Title: "ask to roll back (update the `rollback-<environment>` ConfigMap)",
		Cells: func(w intent) []cell {
			var cells []cell
			for _, env := range environments(w) {
				cells = append(cells, cell{env, []access{
					{Verb: "get", Resource: "configmaps", Namespace: w.Pipeline.Project, Name: "rollback-" + env},
					{Verb: "update", Resource: "configmaps", Namespace: w.Pipeline.Project, Name: "rollback-" + env},
				}})
			}
			return cells
		},
		Expect: func(w intent, id identity) ([]string, []string) {
			var out []string
			for _, env := range environments(w) {
				if id.group != "" && slices.Contains(requestersOf(w, env), id.group) {
					out = append(out, env)
				}
			}
			return out, nil
		},
	}
}
