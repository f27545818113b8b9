package differential

import (
	"math/rand/v2"
	"strings"
)

// The seed is fixed so a failure reproduces; DIFFERENTIAL_SEED widens the search (see differential_test.go).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func compose(r *rand.Rand, tokens []string, min, max int) string {
	var b strings.Builder
	for n := min + r.IntN(max-min+1); n > 0; n-- {
		b.WriteString(tokens[r.IntN(len(tokens))])
	}
	return b.String()
}

// Paths a repository holds: the program's files, stack configs and templates, dot folders, and names with
// the characters globs and regexps treat specially.
var fixedFiles = []string{
	"Pulumi.yaml", "Pulumi.dev.yaml", "Pulumi.qa.yaml", "README.md", "stacks/dev.yaml", "stacks/sub/x.yaml",
	"stacks", "stacksx/a.yaml", ".github/workflows/ci.yml", "a/b/c.txt", "a/b", "a", "ab", "a.b", "docs/a..b.md",
	"[x].txt", "a,b", "{a}", "a-b/c_d.yaml", "x/y/z/w.ts", "src/index.ts", "src/.hidden", "a/.b/c", "*", "?",
}

var fileTokens = []string{"a", "b", "x", ".", "-", "_", "/", "yaml", "Pulumi", "stacks", "..", "[", "]", "{", "}", ",", "*"}

func generateFiles(r *rand.Rand, n int) []string {
	files := append([]string{}, fixedFiles...)
	for range n {
		f := strings.Trim(compose(r, fileTokens, 1, 6), "/")
		if f != "" && !strings.Contains(f, "//") {
			files = append(files, f)
		}
	}
	return files
}

var globTokens = []string{
	"a", "b", "x", ".", "-", "/", "yaml", "stacks", "*", "**", "?", "[ab]", "[!a]", "[^x]", "[a-c]", "[]",
	"[-a]", "[a-]", "[", "]", "{a,b}", "{x,{a,b}}", "{", "}", ",", `\*`, `\`, `\[`, "/**", "**/",
}

var regexpTokens = []string{
	"a", "b", "x", "/", ".", "*", "+", "?", "{2}", "{1,3}", "{2,}", "{1001}", "(", ")", "(?:", "(?P<n>", "(?<n>",
	"(?i)", "(?s)", "(?U)", "(?i:", "(?=", "(?!", "(?<=", "(?>", `\d`, `\w`, `\s`, `\b`, `\A`, `\z`, `\Z`, `\1`,
	`\k`, `\pL`, `\p{L}`, `\PL`, `\Q`, `\E`, `\x41`, `\x{41}`, `\C`, `\e`, `\g`, `\.`, `\/`, `\-`, `\`, "[[:alpha:]]",
	"[[:foo:]]", "[a-z]", "[^/]", "[z-a]", "[", "]", "^", "$", "|", "**", "+?", "*?", "{", "}", "[[:^digit:]]",
}

var branchTokens = []string{
	"a", "b", "1", "main", "feature", "stage", "/", ".", "-", "_", "..", ".lock", "@", "{", "}", "~", "^", ":",
	"?", "*", "[", `\`, " ", "HEAD", "//", "@{",
}

func generate(seed uint64, n int) input {
	r := newRand(seed)
	in := input{Files: generateFiles(r, n/5)}
	for range n {
		body := compose(r, globTokens, 1, 6)
		switch r.IntN(4) {
		case 0:
			in.Selectors = append(in.Selectors, body)
		case 1:
			in.Selectors = append(in.Selectors, "regexp:"+compose(r, regexpTokens, 1, 5))
		default:
			in.Selectors = append(in.Selectors, "glob:"+body)
		}
		in.Regexps = append(in.Regexps, compose(r, regexpTokens, 1, 6))
		branch := compose(r, branchTokens, 1, 5)
		if r.IntN(5) == 0 {
			branch = "stage/" + branch
		}
		in.Branches = append(in.Branches, branch)
	}
	return in
}
