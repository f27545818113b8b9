// Package analysis runs every AnalysisTemplate the kargo plan emits through Argo Rollouts' own analysis
// controller (v1.9.0) and web metric provider, against a stand-in for Pulumi Cloud's REST API.
package analysis

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// updateInfo is one operation as Pulumi Cloud records it: pulumi/pulumi sdk/go/common/apitype/history.go,
// UpdateInfo. No omitempty on environment or config, so a null `environment` does arrive.
type updateInfo struct {
	Kind            string            `json:"kind"`
	StartTime       int64             `json:"startTime"`
	Message         string            `json:"message"`
	Environment     map[string]string `json:"environment"`
	Config          map[string]any    `json:"config"`
	Result          string            `json:"result"`
	EndTime         int64             `json:"endTime"`
	Version         int               `json:"version"`
	ResourceChanges map[string]int    `json:"resourceChanges,omitempty"`
	ResourceCount   int               `json:"resourceCount,omitempty"`
}

// preview is one entry of the previews list, in the service format: the UpdateInfo under `info`, beside the
// preview's own updateID (apitype/history.go, StackPreview; the REST API docs' List Previews example).
type preview struct {
	Info          *updateInfo       `json:"info"`
	UpdateID      string            `json:"updateID"`
	Version       int               `json:"version"`
	LatestVersion int               `json:"latestVersion"`
	RequestedBy   map[string]string `json:"requestedBy"`
}

// answer is what the stand-in serves on one request: a status and a body, after an optional delay.
type answer struct {
	status int
	body   []byte
	delay  time.Duration
}

func jsonAnswer(v any) answer {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return answer{status: http.StatusOK, body: raw}
}

// stack is one Pulumi stack's record in the stand-in: its update history and the previews made since its
// latest update ("List Previews" lists only those, Pulumi Cloud REST API, Stack Updates).
type stack struct {
	mu       sync.Mutex
	updates  []updateInfo // newest first, as the history endpoint answers
	previews []preview    // oldest first, the endpoint's default order
}

// finishUpdate records an update of the stack: it joins the history, and the previews list starts over.
func (s *stack) finishUpdate(u updateInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append([]updateInfo{u}, s.updates...)
	s.previews = nil
}

func (s *stack) setUpdates(u ...updateInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = u
}

func (s *stack) setPreviews(p ...preview) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.previews = p
}

// cloud is the stand-in server. Each request is answered by `override` when set (errors, HTML, timeouts);
// otherwise from the stack record, the way the REST API shapes it.
type cloud struct {
	*httptest.Server
	token    string
	stack    *stack
	override func(r *http.Request) *answer
	onServe  func(path string, n int) // called before each answer, with how many requests came before

	mu       sync.Mutex
	requests []string
}

func newCloud(t *testing.T, token string) *cloud {
	c := &cloud{token: token, stack: &stack{}}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *cloud) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	n := len(c.requests)
	c.requests = append(c.requests, r.URL.RequestURI())
	c.mu.Unlock()
	if c.onServe != nil {
		c.onServe(r.URL.Path, n)
	}
	a := c.answer(r)
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.status == http.StatusOK && json.Valid(a.body) {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

func (c *cloud) answer(r *http.Request) answer {
	if c.override != nil {
		if a := c.override(r); a != nil {
			return *a
		}
	}
	// "The Pulumi Cloud REST API will return a 401 status code if the token is missing or invalid."
	if r.Header.Get("Authorization") != "token "+c.token {
		return answer{status: http.StatusUnauthorized, body: []byte(`{"code":401,"message":"Unauthorized: No credentials provided or are invalid."}`)}
	}
	q := r.URL.Query()
	c.stack.mu.Lock()
	defer c.stack.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/updates/latest/previews"):
		list := append([]preview(nil), c.stack.previews...)
		if q.Get("asc") == "false" {
			for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
				list[i], list[j] = list[j], list[i]
			}
		}
		return jsonAnswer(map[string]any{"updates": page(list, q), "itemsPerPage": len(list), "total": len(list)})
	case strings.HasSuffix(r.URL.Path, "/updates"):
		return jsonAnswer(map[string]any{"updates": page(c.stack.updates, q)})
	}
	return answer{status: http.StatusNotFound, body: []byte(`{"code":404,"message":"Not Found"}`)}
}

// page cuts one page of the list as pageSize/page ask (no pageSize: the whole list).
func page[T any](list []T, q map[string][]string) []T {
	var size, number int
	if v := q["pageSize"]; len(v) > 0 {
		_ = json.Unmarshal([]byte(v[0]), &size)
	}
	if v := q["page"]; len(v) > 0 {
		_ = json.Unmarshal([]byte(v[0]), &number)
	}
	if size <= 0 {
		return list
	}
	if number < 1 {
		number = 1
	}
	from := min((number-1)*size, len(list))
	return list[from:min(from+size, len(list))]
}

// Requests is every request's path and query, in order.
func (c *cloud) Requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}
