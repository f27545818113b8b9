package links

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"infra-change-platform/test/internal/plan"
)

func projectLinks(t *testing.T, kargo *plan.Project, field string) []Link {
	t.Helper()
	raw, _, _ := unstructured.NestedSlice(kargo.OfKind("ProjectConfig")[0].Object, "spec", field)
	var links []Link
	plan.Into(t, raw, &links)
	return links
}

// verificationArg is a Stage's verification argument, or "" for a Stage that verifies nothing (a gate).
func verificationArg(stage *unstructured.Unstructured, name string) string {
	args, _, _ := unstructured.NestedSlice(stage.Object, "spec", "verification", "args")
	for _, a := range args {
		if m, ok := a.(map[string]any); ok && m["name"] == name {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// templateArg is a value every AnalysisTemplate gives an argument (organization).
func templateArg(t *testing.T, kargo *plan.Project, name string) string {
	t.Helper()
	args, _, _ := unstructured.NestedSlice(kargo.OfKind("AnalysisTemplate")[0].Object, "spec", "args")
	for _, a := range args {
		if m, ok := a.(map[string]any); ok && m["name"] == name {
			return m["value"].(string)
		}
	}
	t.Fatalf("no AnalysisTemplate argument %s", name)
	return ""
}

// Every Stage that runs a Pulumi stack links to exactly that stack in Pulumi Cloud's console: its program's
// project (the Stage's own verification argument) and its environment's stack; gates and joins link
// nowhere; nothing errors.
func TestStageLinks(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	links := projectLinks(t, kargo, "stageLinks")
	org := templateArg(t, kargo, "organization")
	stages := kargo.OfKind("Stage")
	if len(stages) == 0 {
		t.Fatal("the plan has no Stage")
	}
	for _, stage := range stages {
		ctx, err := Context("stage", stage.Object)
		if err != nil {
			t.Fatal(err)
		}
		urls, errs := Resolve(links, ctx)
		for _, err := range errs {
			t.Errorf("Stage %s: %v", stage.GetName(), err)
		}
		stack, project := verificationArg(stage, "stack"), verificationArg(stage, "project")
		if stack == "" {
			if len(urls) > 0 {
				t.Errorf("gate or join %s links to %v", stage.GetName(), urls)
			}
			continue
		}
		if project == "" {
			t.Errorf("Stage %s verifies stack %s of no project", stage.GetName(), stack)
			continue
		}
		if len(urls) != 1 {
			t.Errorf("Stage %s shows %d stack links, want 1: %v", stage.GetName(), len(urls), urls)
			continue
		}
		if !strings.HasPrefix(urls[0], "https://") || !strings.HasSuffix(urls[0], "/"+org+"/"+project+"/"+stack) {
			t.Errorf("Stage %s links to %s, want the console page of %s/%s/%s", stage.GetName(), urls[0], org, project, stack)
		}
	}
}

// Freight links to its commit on the repository's web page, and shows no link (and no error) without one.
func TestFreightLinks(t *testing.T) {
	kargo := plan.Load(t, "kargo")
	links := projectLinks(t, kargo, "freightLinks")
	subs, _, _ := unstructured.NestedSlice(kargo.OfKind("Warehouse")[0].Object, "spec", "subscriptions")
	repo, _, _ := unstructured.NestedString(subs[0].(map[string]any), "git", "repoURL")
	const id = "4f1c2b9e8d7a6c5b4a3928171605f4e3d2c1b0a9"
	// A Freight as Kargo's API serves it: commits, images and charts at the top level.
	freight := func(commits any) map[string]any {
		f := map[string]any{
			"metadata": map[string]any{"name": "0123456789abcdef", "namespace": "infra"},
			"origin":   map[string]any{"kind": "Warehouse", "name": "program"},
		}
		if commits != nil {
			f["commits"] = commits
		}
		return f
	}
	cases := []struct {
		name    string
		freight map[string]any
		want    []string
	}{
		{"with its commit", freight([]any{map[string]any{"repoURL": repo, "id": id, "branch": "main"}}),
			[]string{strings.TrimSuffix(repo, ".git") + "/commit/" + id}},
		{"with no commits", freight([]any{}), nil},
		{"without a commits field", freight(nil), nil},
	}
	for _, c := range cases {
		ctx, err := Context("freight", c.freight)
		if err != nil {
			t.Fatal(err)
		}
		urls, errs := Resolve(links, ctx)
		for _, err := range errs {
			t.Errorf("%s: %v", c.name, err)
		}
		if strings.Join(urls, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: links %v, want %v", c.name, urls, c.want)
		}
	}
}
