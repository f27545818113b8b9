package pulumiengine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// What the Pulumi CLI does with a drift check, read from its source at the version go.mod pins
// (github.com/pulumi/pulumi pkg/v3 v3.274.1, cmd/pulumi/cmd/exit_codes.go and cmd/pulumi/metadata/metadata.go).
// Read, not run: the packages that hold it link the CLI's state backends and secrets providers (some 650
// packages of cloud SDKs that nothing else here builds), three minutes of CPU on a first run. docs/testing.md
// says so.

// A failed drift check is the CLI's NoChangesExpectedError, which it exits with a code of its own, not 0:
// PKO's Update records the run as failed (TestDriftFoundByTheCheck finds the drift itself).
func TestDriftCheckExitCode(t *testing.T) {
	file := cliSource(t, "cmd/pulumi/cmd/exit_codes.go")
	code := constValue(t, file, "ExitNoChanges")
	if code == 0 {
		t.Fatalf("ExitNoChanges is 0: a drift check that finds changes would succeed")
	}
	fn := funcDecl(t, file, "ExitCodeFor")
	found := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if s, ok := n.(*ast.IfStmt); ok && mentions(s.Init, "backenderr", "NoChangesExpectedError") &&
			returns(s.Body, "ExitNoChanges") {
			found = true
		}
		return true
	})
	if !found {
		t.Errorf("ExitCodeFor no longer maps backenderr.NoChangesExpectedError to ExitNoChanges (%d)", code)
	}
}

// The drift check's workspace carries a variable (stacks/*-drift.yaml) that the CLI records into the
// update's `environment`, which Pulumi Cloud lists with every preview; the verification Job leaves such
// previews out (kargo/verification/cloud.mjs isDriftCheck). GetUpdateMetadata, which `pulumi preview` calls for
// every operation, records each PULUMI_* variable of the process's environment by name: "set", or its truth
// for one of Pulumi's declared booleans.
func TestDriftCheckMark(t *testing.T) {
	name := driftVariable(t)
	if !strings.HasPrefix(name, "PULUMI_") {
		t.Fatalf("the drift Stacks mark their workspaces with %s, which the CLI would not record", name)
	}
	file := cliSource(t, "cmd/pulumi/metadata/metadata.go")
	get := funcDecl(t, file, "GetUpdateMetadata")
	if !calls(get.Body, "addPulumiCLIMetadataToEnvironment", "os", "Environ") {
		t.Errorf("GetUpdateMetadata no longer records the process's environment (addPulumiCLIMetadataToEnvironment with os.Environ)")
	}
	// The loop over the environment GetUpdateMetadata hands in: each PULUMI_ variable, recorded under a prefix.
	add := funcDecl(t, file, "addPulumiCLIMetadataToEnvironment")
	var loop *ast.RangeStmt
	ast.Inspect(add.Body, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok {
			if c, ok := r.X.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "getEnviron" {
					loop = r
				}
			}
		}
		return true
	})
	if loop == nil || !calls(loop.Body, "HasPrefix", "", `"PULUMI_"`) {
		t.Fatalf("addPulumiCLIMetadataToEnvironment no longer takes every PULUMI_ variable of the environment")
	}
	prefix := ""
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok {
			if ix, ok := a.Lhs[0].(*ast.IndexExpr); ok {
				if b, ok := ix.Index.(*ast.BinaryExpr); ok && b.Op == token.ADD {
					if lit, ok := b.X.(*ast.BasicLit); ok {
						prefix, _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
		return true
	})
	if want := driftKeyOfVerification(t); prefix+name != want {
		t.Errorf("the CLI records %q, the verification Job leaves out %q", prefix+name, want)
	}
}

// cliSource parses one file of the pinned CLI module, from Go's module cache (`go mod download` fetches it).
func cliSource(t *testing.T, rel string) *ast.File {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/pulumi/pulumi/pkg/v3").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go list -m github.com/pulumi/pulumi/pkg/v3: %v (run go mod download in test/pulumiengine)", err)
	}
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(strings.TrimSpace(string(out)), rel), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return file
}

func funcDecl(t *testing.T, file *ast.File, name string) *ast.FuncDecl {
	t.Helper()
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == name {
			return fn
		}
	}
	t.Fatalf("the CLI no longer declares %s", name)
	return nil
}

func constValue(t *testing.T, file *ast.File, name string) int {
	t.Helper()
	for _, d := range file.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if n.Name == name && i < len(v.Values) {
					if lit, ok := v.Values[i].(*ast.BasicLit); ok {
						if code, err := strconv.Atoi(lit.Value); err == nil {
							return code
						}
					}
				}
			}
		}
	}
	t.Fatalf("the CLI no longer declares %s as a number", name)
	return 0
}

// mentions is whether node refers to pkg.name.
func mentions(node ast.Node, pkg, name string) bool {
	found := false
	if node == nil {
		return false
	}
	ast.Inspect(node, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == name {
			if id, ok := s.X.(*ast.Ident); ok && id.Name == pkg {
				found = true
			}
		}
		return true
	})
	return found
}

func returns(body *ast.BlockStmt, name string) bool {
	for _, s := range body.List {
		if r, ok := s.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
			if id, ok := r.Results[0].(*ast.Ident); ok && id.Name == name {
				return true
			}
		}
	}
	return false
}

// calls is whether body calls fn (a function or any package's fn) with an argument that is argPkg.arg, or the
// literal arg when argPkg is "".
func calls(body *ast.BlockStmt, fn, argPkg, arg string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		var called string
		switch f := c.Fun.(type) {
		case *ast.Ident:
			called = f.Name
		case *ast.SelectorExpr:
			called = f.Sel.Name
		}
		if called != fn {
			return true
		}
		for _, a := range c.Args {
			if lit, ok := a.(*ast.BasicLit); ok && argPkg == "" && lit.Value == arg {
				found = true
			}
			if argPkg != "" && mentions(a, argPkg, arg) {
				found = true
			}
		}
		return true
	})
	return found
}

// driftVariable is the one variable the drift Stack templates add to their update stage's workspace.
func driftVariable(t *testing.T) string {
	t.Helper()
	root := filepath.Join("..", "..")
	drift, _ := filepath.Glob(filepath.Join(root, "stacks", "*-drift.yaml"))
	if len(drift) == 0 {
		t.Fatal("no drift Stack templates in stacks/ (npm run stacks)")
	}
	env := func(file string) map[string]bool {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Spec struct {
				WorkspaceTemplate struct {
					Spec struct {
						Env []struct {
							Name string `yaml:"name"`
						} `yaml:"env"`
					} `yaml:"spec"`
				} `yaml:"workspaceTemplate"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range s.Spec.WorkspaceTemplate.Spec.Env {
			out[e.Name] = true
		}
		return out
	}
	var added []string
	for _, f := range drift {
		own := env(strings.TrimSuffix(f, "-drift.yaml") + ".yaml")
		for name := range env(f) {
			if !own[name] && !slices.Contains(added, name) {
				added = append(added, name)
			}
		}
	}
	if len(added) != 1 {
		t.Fatalf("the drift Stack templates add %v to their stage's workspace, want one variable", added)
	}
	return added[0]
}

// driftKeyOfVerification is the key kargo/verification/cloud.mjs leaves out, as the Job's code spells it.
func driftKeyOfVerification(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "kargo", "verification", "cloud.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	const decl = `export const DRIFT_CHECK_KEY = "`
	text := string(raw)
	i := strings.Index(text, decl)
	if i < 0 {
		t.Fatal("kargo/verification/cloud.mjs declares no DRIFT_CHECK_KEY")
	}
	rest := text[i+len(decl):]
	return rest[:strings.Index(rest, `"`)]
}
