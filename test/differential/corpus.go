package differential

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/akuity/kargo/pkg/pattern"
	"github.com/distribution/reference"
)

// The corpus (testdata/corpus.json) is generated selectors, regexps and branch names with what upstream code
// decides of each: Kargo v1.11.2's pkg/pattern, Go's regexp, Kargo's branch schema and git. It is committed so
// that the TypeScript suite (test/pipeline-upstream-corpus.test.ts), which mutation testing runs in-process,
// holds our rules to upstream's without a Go process. TestCorpusIsWhatUpstreamDecides keeps it from
// drifting; UPDATE_CORPUS=1 rewrites it.
const (
	corpusFile  = "testdata/corpus.json"
	corpusSeed  = 23
	corpusCount = 500
	// Paths each selector and regexp is tried on: the fixed ones, the first generated ones and paths written
	// to fit the first globs, so that most globs select some of them.
	corpusFiles, corpusFitting = 40, 160
	corpusRegexps              = 150
)

// Selectors people write, beside the generated ones.
var corpusFixedSelectors = []string{
	".", "Pulumi.yaml", "stacks", "stacks/", "./stacks", "a/../stacks", "/stacks", `C:\stacks`,
	"glob:stacks/**", "glob:**/*.{yaml,yml}", "glob:{Pulumi.yaml,Pulumi.*.yaml}", "glob:docs/**",
	"glob:**", "glob:*", "glob:**/", "glob:stacks/*.yaml", "glob:stacks/[a-c]*", "glob:stacks/[!d]*",
	"glob:a/**/c.txt", "glob:**/.github/**", "glob:\\[x\\].txt", "glob:{a,b}/**", "glob:a/{b,**}",
	// Escapes, in classes and alternatives too.
	`glob:a\\/**`, `glob:a\\*`, `glob:a\*`, `glob:\{a,b}`, `glob:{a,b\}`, `glob:{a\,b,c}`, `glob:{a,b\}c}`,
	"glob:a?b", "glob:stacks?dev.yaml", `glob:a\/**`, "glob:stacks/***", "glob:***/dev.yaml",
	`glob:[\]]`, `glob:[a\-c]`, `glob:[\!a]`, `glob:[!]]`, `glob:[^]]`, `glob:x/\**`, `glob:{,a}x\}`, `glob:{a,\{}`, `glob:a\/b`,
	"regex:^stacks/", "regexp:\\.ya?ml$", "regex:(?i)^STACKS/", "regex:(", "regexp:^(?!docs/)",
}

type corpusSelector struct {
	Selector string   `json:"selector"`
	Refused  bool     `json:"refused"`
	Matches  []string `json:"matches,omitempty"`
}

type corpusRegexp struct {
	Source  string   `json:"source"`
	Refused bool     `json:"refused"`
	Matches []string `json:"matches,omitempty"`
}

type corpusBranch struct {
	Branch string `json:"branch"`
	Kargo  bool   `json:"kargo"`
	Git    bool   `json:"git"`
}

// An image reference as the container runtime reads it (distribution/reference v0.6.0 ParseNormalizedNamed,
// which containerd's ParseDockerRef wraps): whether it parses, and its tag and digest.
type corpusImage struct {
	Image  string `json:"image"`
	Parses bool   `json:"parses"`
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest,omitempty"`
}

type corpus struct {
	Files     []string
	Selectors []corpusSelector
	Regexps   []corpusRegexp
	Branches  []corpusBranch
	Images    []corpusImage
}

func unique(values []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range values {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Branch names mostly of the characters Kargo's schema allows, so that git's own rules decide many of them.
var corpusBranchTokens = []string{"a", "b1", "main", "stage", "/", ".", "-", "_", "..", ".lock", "HEAD", "x.lock", "@", "@{"}

// Image references, part by part, each part valid or nearly: [registry/][path/]name[:tag][@digest].
var corpusImageParts = [][]string{
	{"", "registry.example.com/", "localhost:5000/", "ghcr.io:443/", "Registry.Example.com/", "reg_istry.com/",
		"[::1]:5000/", "-bad.com/", "a.b-c.d/", "host:99999/", "a:5000/", "a.b:5000/"},
	{"", "pulumi/", "team/sub/", "Pulumi/", "a__b/", "a___b/", "a--b/", "a-/", "_a/", "a.b/"},
	{"pulumi", "pulumi-nonroot", "p.u_l-i", "UPPER", strings.Repeat("d", 64), "x", "a..b", "a_.b", "a--b"},
	{":3.270.0", "", ":latest", ":3.270.0-nonroot", ":LATEST", ":Latest", ":.bad", ":_ok", ":-bad",
		":" + strings.Repeat("t", 128), ":" + strings.Repeat("t", 129), ":v1", ":"},
	{"", "", "@sha256:" + strings.Repeat("a", 64), "", "@sha256:" + strings.Repeat("a", 63), "@sha512:" + strings.Repeat("c", 128),
		"@sha256:" + strings.Repeat("A", 64), "@md5:" + strings.Repeat("e", 32)},
}

// fitting writes a path a glob may select: each wildcard, class or alternative group replaced by something it
// may stand for (or, at random, something near it). A generator of inputs only; upstream decides.
func fitting(r *rand.Rand, glob string) string {
	var b strings.Builder
	pick := func(options ...string) string { return options[r.IntN(len(options))] }
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case c == '\\' && i+1 < len(glob):
			i++
			b.WriteByte(glob[i])
		case strings.HasPrefix(glob[i:], "**"):
			i++
			b.WriteString(pick("", "a", "a/b", "x/y/z", ".b", "stacks/dev"))
		case c == '*':
			b.WriteString(pick("", "a", "ab", "x.y", "-"))
		case c == '?':
			b.WriteString(pick("a", ".", "b", "/"))
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			body := glob[i+1 : i+1+end+1]
			b.WriteByte(body[r.IntN(len(body))])
			i += end + 1
		case c == '{':
			depth, from, parts := 0, i+1, []string{}
			j := i + 1
			for ; j < len(glob) && (glob[j] != '}' || depth > 0); j++ {
				switch glob[j] {
				case '{':
					depth++
				case '}':
					depth--
				case ',':
					if depth == 0 {
						parts = append(parts, glob[from:j])
						from = j + 1
					}
				}
			}
			if j >= len(glob) {
				b.WriteByte(c)
				continue
			}
			parts = append(parts, glob[from:j])
			b.WriteString(fitting(r, parts[r.IntN(len(parts))]))
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return strings.Trim(b.String(), "/")
}

// buildCorpus asks upstream about every generated input; branch judges a branch name by Kargo's schema and git.
func buildCorpus(branch func(string) (kargo, git bool)) corpus {
	in := generate(corpusSeed, corpusCount)
	selectors := unique(append(slices.Clone(corpusFixedSelectors), in.Selectors...))
	files := unique(in.Files)[:len(fixedFiles)+corpusFiles]
	r := newRand(corpusSeed)
	for _, selector := range selectors {
		if glob, ok := strings.CutPrefix(selector, "glob:"); ok && len(files) < len(fixedFiles)+corpusFiles+corpusFitting {
			if f := fitting(r, glob); f != "" && !strings.Contains(f, "//") && !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
	}
	c := corpus{Files: files}
	for _, selector := range selectors {
		entry := corpusSelector{Selector: selector}
		if matcher, err := pattern.ParsePathPattern(selector); err != nil {
			entry.Refused = true
		} else {
			entry.Matches = filesMatching(c.Files, matcher.Matches)
		}
		c.Selectors = append(c.Selectors, entry)
	}
	for _, source := range unique(in.Regexps)[:corpusRegexps] {
		entry := corpusRegexp{Source: source}
		if compiled, err := regexp.Compile(source); err != nil {
			entry.Refused = true
		} else {
			entry.Matches = filesMatching(c.Files, compiled.MatchString)
		}
		c.Regexps = append(c.Regexps, entry)
	}
	// Kargo's schema bounds a branch at 255 characters; git does not.
	branches := append([]string{"main", strings.Repeat("a", 255), strings.Repeat("a", 256), "stage", "stagex/y"}, in.Branches...)
	for range corpusCount / 2 {
		branches = append(branches, compose(r, corpusBranchTokens, 1, 5))
	}
	for _, name := range unique(branches) {
		kargo, git := branch(name)
		c.Branches = append(c.Branches, corpusBranch{name, kargo, git})
	}
	for _, image := range unique(images(r)) {
		entry := corpusImage{Image: image}
		if named, err := reference.ParseNormalizedNamed(image); err == nil {
			entry.Parses = true
			if tagged, ok := named.(reference.Tagged); ok {
				entry.Tag = tagged.Tag()
			}
			if digested, ok := named.(reference.Digested); ok {
				entry.Digest = digested.Digest().String()
			}
		}
		c.Images = append(c.Images, entry)
	}
	return c
}

// Image references the random parts rarely combine: one-character registry labels before a port (where only
// a registry may stand) and "--" in a later path component, each pinned so that a wrong verdict shows.
var corpusImageSeeds = []string{"a:5000/pulumi/pulumi:3.270.0", "a.b:5000/pulumi:3.270.0", "x.a:5000/pulumi:3.270.0",
	"team/a--b:3.270.0", "team/a---b/pulumi:3.270.0"}

func images(r *rand.Rand) []string {
	out := append([]string(nil), corpusImageSeeds...)
	for range corpusCount / 2 {
		var b strings.Builder
		// Mostly the first, valid, options of a part; the rest each a fifth of the time.
		for _, part := range corpusImageParts {
			if r.IntN(5) == 0 {
				b.WriteString(part[r.IntN(len(part))])
			} else {
				b.WriteString(part[r.IntN(3)])
			}
		}
		out = append(out, b.String())
	}
	return out
}

// encode writes one entry a line, so that a change upstream reads as a small diff.
func (c corpus) encode() []byte {
	var b bytes.Buffer
	list := func(key string, n int, entry func(int) any, last bool) {
		b.WriteString("  \"" + key + "\": [\n")
		for i := range n {
			raw, _ := json.Marshal(entry(i))
			b.WriteString("    ")
			b.Write(raw)
			if i < n-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("  ]")
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("{\n")
	comment, _ := json.Marshal("Generated by test/differential (UPDATE_CORPUS=1 go test ./differential/ -run TestCorpus): " +
		"what Kargo v1.11.2 pkg/pattern, Go's regexp, Kargo's branch schema, git and distribution/reference v0.6.0 decide; do not edit.")
	b.WriteString("  \"comment\": " + string(comment) + ",\n")
	list("files", len(c.Files), func(i int) any { return c.Files[i] }, false)
	list("selectors", len(c.Selectors), func(i int) any { return c.Selectors[i] }, false)
	list("regexps", len(c.Regexps), func(i int) any { return c.Regexps[i] }, false)
	list("branches", len(c.Branches), func(i int) any { return c.Branches[i] }, false)
	list("images", len(c.Images), func(i int) any { return c.Images[i] }, true)
	b.WriteString("}\n")
	return b.Bytes()
}

// filesMatching keeps the files an upstream matcher selects, in corpus order (nil when none, as omitempty wants).
func filesMatching(files []string, matches func(string) bool) []string {
	var selected []string
	for _, file := range files {
		if matches(file) {
			selected = append(selected, file)
		}
	}
	return selected
}
