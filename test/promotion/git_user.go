package promotion

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/akuity/kargo/pkg/controller/git"
	"sigs.k8s.io/yaml"

	"infra-change-platform/test/internal/plan"
)

// controllerGitUser is the identity Kargo's controller commits as: controller.gitClient of the kargo Helm
// release the plan installs, over the defaults of the chart at the Kargo version test/go.mod pins
// (akuity/kargo v1.11.2 charts/kargo/values.yaml, read from the module cache).
func controllerGitUser(kargo *plan.Project) (git.User, error) {
	dir, err := kargoModuleDir()
	if err != nil {
		return git.User{}, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "charts", "kargo", "values.yaml"))
	if err != nil {
		return git.User{}, err
	}
	var chart struct {
		Controller struct {
			GitClient struct{ Name, Email string } `json:"gitClient"`
		} `json:"controller"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		return git.User{}, fmt.Errorf("Kargo's chart values: %w", err)
	}
	user := git.User{Name: chart.Controller.GitClient.Name, Email: chart.Controller.GitClient.Email}
	for _, r := range kargo.ResourcesOfType("kubernetes:helm.sh/v3:Release") {
		values, _ := r.Inputs["values"].(map[string]any)
		controller, _ := values["controller"].(map[string]any)
		client, _ := controller["gitClient"].(map[string]any)
		if name, ok := client["name"].(string); ok {
			user.Name = name
		}
		if email, ok := client["email"].(string); ok {
			user.Email = email
		}
	}
	if user.Name == "" || user.Email == "" {
		return git.User{}, fmt.Errorf("no controller.gitClient name and email in Kargo's chart values or the plan")
	}
	return user, nil
}
