package analysis

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi-cloud-sdk/go/apitype"
)

// updateInfo is one operation as Pulumi Cloud records it, and preview one entry of a previews list (the
// operation under `info`, beside the preview's own updateID): Pulumi Cloud's official types, generated from
// its API specification (github.com/pulumi/pulumi-cloud-sdk/go apitype: AppUpdateInfo, UpdateInfo and the
// previews' GetStackUpdatesResponse). Neither environment nor config is omitempty: a null one does arrive.
type (
	updateInfo = apitype.AppUpdateInfo
	preview    = apitype.UpdateInfo
)

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

// stack is one Pulumi stack's record in the stand-in: its update history, and its previews, each listed
// under the stack version it ran against ("List Previews" of `latest` lists only those since the latest
// update; `updates/{version}/previews` those of that version: Pulumi Cloud REST API, Stack Updates,
// GetLatestStackPreviews and GetStackPreviews).
type stack struct {
	mu       sync.Mutex
	updates  []updateInfo      // newest first, as the history endpoint answers
	previews map[int][]preview // by stack version, each oldest first, the endpoint's default order
}

// version is the stack's latest version: the newest update's.
func (s *stack) version() int {
	if len(s.updates) == 0 {
		return 0
	}
	return s.updates[0].Version
}

// finishUpdate records an update of the stack: it joins the history as the next version, and the
// previews of `latest` start over; the earlier ones stay listed under the version they ran against.
func (s *stack) finishUpdate(u updateInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u.Version = s.version() + 1
	s.updates = append([]updateInfo{u}, s.updates...)
}

// setUpdates sets the history, newest first; operations without a version get them in that order.
func (s *stack) setUpdates(u ...updateInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append([]updateInfo(nil), u...)
	for i := range s.updates {
		if s.updates[i].Version == 0 {
			s.updates[i].Version = len(s.updates) - i
		}
	}
}

// setPreviews sets the previews of the stack's latest version.
func (s *stack) setPreviews(p ...preview) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.previews == nil {
		s.previews = map[int][]preview{}
	}
	s.previews[s.version()] = p
}

// cloud is the stand-in server, OUR model of Pulumi Cloud's REST API for stack updates and previews: the
// routes as pulumi-cloud-sdk apiclient/stacks_.go declares them (GetStackUpdates, GetLatestStackPreviews,
// GetStackPreviews and their page, pageSize and asc). Each request is answered by `override` when set (errors, HTML, timeouts);
// otherwise from the stack record, the way the REST API shapes it: `stack` for any stack path, unless
// stacks were added with addStack, which then serves each under its own path, and no other.
type cloud struct {
	*httptest.Server
	token    string
	stack    *stack
	stacks   map[string]*stack // by "<org>/<project>/<stack>"
	override func(r *http.Request) *answer
	onServe  func(path string, n int) // called before each answer, with how many requests came before

	mu       sync.Mutex
	requests []string
}

var (
	previewsPath = regexp.MustCompile(`/updates/(latest|[1-9][0-9]*)/previews$`)
	// stackPath is a stack's operations: /api/stacks/{organization}/{project}/{stack}/updates... (Pulumi
	// Cloud REST API, Stack Updates).
	stackPath = regexp.MustCompile(`^/api/stacks/([^/]+/[^/]+/[^/]+)/updates(/|$)`)
)

func newCloud(t *testing.T, token string) *cloud {
	c := &cloud{token: token, stack: &stack{}}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

// addStack is one more stack the stand-in holds, served under its own path only: a Pulumi Cloud
// organization holding several programs' stacks (their projects), each with its own history.
func (c *cloud) addStack(organization, project, name string) *stack {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stacks == nil {
		c.stacks = map[string]*stack{}
	}
	s := &stack{}
	c.stacks[organization+"/"+project+"/"+name] = s
	return s
}

// stackOf is the record a request's path names: nil (404) for a stack the stand-in does not hold.
func (c *cloud) stackOf(r *http.Request) *stack {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stacks == nil {
		return c.stack
	}
	m := stackPath.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil {
		return nil
	}
	return c.stacks[m[1]]
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
	st := c.stackOf(r)
	if st == nil {
		return answer{status: http.StatusNotFound, body: []byte(`{"code":404,"message":"Not Found"}`)}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if m := previewsPath.FindStringSubmatch(r.URL.Path); m != nil {
		version := st.version()
		if m[1] != "latest" {
			version, _ = strconv.Atoi(m[1])
		}
		list := append([]preview(nil), st.previews[version]...)
		if q.Get("asc") == "false" {
			for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
				list[i], list[j] = list[j], list[i]
			}
		}
		return jsonAnswer(apitype.GetStackUpdatesResponse{Updates: page(list, q), ItemsPerPage: len(list), Total: len(list)})
	}
	if strings.HasSuffix(r.URL.Path, "/updates") {
		return jsonAnswer(map[string]any{"updates": page(st.updates, q)})
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
