package links

import (
	"bytes"
	"encoding/json"
	"fmt"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/expr-lang/expr"
)

// Link is one entry of stageLinks or freightLinks.
type Link struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
	If          string `json:"if,omitempty"`
}

// Context is what a link is evaluated over: the object, as JSON, under its key.
func Context(key string, object any) (map[string]any, error) {
	raw, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return map[string]any{key: m}, nil
}

// Resolve is the URL of every link shown in ctx, and the evaluation errors Kargo would report beside them
// (OUR model of akuity/kargo v1.11.2 pkg/deeplinks/deeplinks.go, EvaluateLinks and toContextMap).
func Resolve(links []Link, ctx map[string]any) (urls []string, errs []error) {
	funcs := sprig.GenericFuncMap()
	// Kargo removes these three (they read the host's environment or resolve names).
	delete(funcs, "env")
	delete(funcs, "expandenv")
	delete(funcs, "getHostByName")
	for _, link := range links {
		if link.If != "" {
			out, err := expr.Eval(link.If, ctx)
			if err != nil {
				errs = append(errs, fmt.Errorf("link %q: if: %w", link.Title, err))
				continue
			}
			shown, ok := out.(bool)
			if !ok {
				errs = append(errs, fmt.Errorf("link %q: if is a %T, not a bool", link.Title, out))
				continue
			}
			if !shown {
				continue
			}
		}
		t, err := template.New("").Funcs(funcs).Parse(link.URL)
		if err != nil {
			errs = append(errs, fmt.Errorf("link %q: url: %w", link.Title, err))
			continue
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, ctx); err != nil {
			errs = append(errs, fmt.Errorf("link %q: url: %w", link.Title, err))
			continue
		}
		urls = append(urls, buf.String())
	}
	return urls, errs
}
