package analysis

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

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

// answer is what the stand-in serves on one request: a status and a body; or, held, no answer at all.
type answer struct {
	status int
	body   []byte
	// held: the request never answers. The stand-in says so at once (holdHeader), and the pod's clock
	// (testdata/podclock.mjs) keeps the request waiting until its own timeout: on that clock, not this
	// machine's, which a real wait would race.
	held bool
}

// holdHeader marks an answer the pod's clock turns into a request that never answers.
const holdHeader = "X-Stand-In-Hold"

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
	// events is each operation's engine events by its updateID, under the route of its kind ("update" or
	// "preview": GetEngineEvents_update, GetEngineEvents_preview).
	events map[string]operationEvents
	// previewed is the previews the stand-in adds for the updates it is given, by ID: the version of the
	// update each came before (a pipeline previews the commit on the stack before it updates it). Unless
	// unpreviewed, each update of a commit gets one, succeeded, 30 s before it, listed under the version
	// before its own, with its update's events.
	previewed   map[string]int
	unpreviewed bool
}

type operationEvents struct {
	kind   string
	events []apitype.EngineEvent
}

// asPreview is an operation as a previews list holds it: under `info`, beside its own updateID (one per
// commit, start time and result, as each preview has its own).
func asPreview(u updateInfo) preview {
	u.Version = 0
	return preview{Info: u, UpdateID: previewID(u), LatestVersion: 7, RequestedBy: apitype.UserInfo{Name: "pko", GitHubLogin: "pko"}}
}

// previewID is the updateID the stand-in gives a preview.
func previewID(u updateInfo) string {
	return fmt.Sprintf("b9f5c7e2-%.8s-%d-%s", u.Environment["git.head"]+"none", u.StartTime, u.Result)
}

// updateID is the ID the stand-in gives the update of a version (GetStackUpdate answers it).
func updateID(version int) string { return fmt.Sprintf("0b6e0f3c-update-%d", version) }

// eventsOf is an operation's engine events: those set for it; for an update's preview the stand-in made
// (previewed), its update's; for another operation it holds, the events of one that changed nothing; and
// none (a 404) for an ID it does not hold or one asked under the other kind's route. Called with s.mu held.
func (s *stack) eventsOf(kind, id string) ([]apitype.EngineEvent, bool) {
	if e, ok := s.events[id]; ok {
		return e.events, e.kind == kind
	}
	if kind == "preview" {
		if version, ok := s.previewed[id]; ok {
			if e, ok := s.events[updateID(version)]; ok {
				return e.events, true
			}
			return unchanged(true), true
		}
		for _, list := range s.previews {
			for _, p := range list {
				if p.UpdateID == id {
					return unchanged(true), true
				}
			}
		}
		return nil, false
	}
	for _, u := range s.updates {
		if updateID(u.Version) == id {
			return unchanged(false), true
		}
	}
	return nil, false
}

// setEvents records an operation's engine events under its updateID.
func (s *stack) setEvents(kind, id string, events []apitype.EngineEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.events == nil {
		s.events = map[string]operationEvents{}
	}
	s.events[id] = operationEvents{kind: kind, events: events}
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
	s.preview(u)
}

// preview adds the succeeded preview that came before update u (see previewed). Called with s.mu held.
func (s *stack) preview(u updateInfo) {
	head := u.Environment["git.head"]
	if s.unpreviewed || u.Kind != apitype.AppUpdateKindUpdate || head == "" {
		return
	}
	p := u
	p.Kind, p.Result, p.StartTime, p.EndTime, p.Version = apitype.AppUpdateKindPreview, "succeeded", u.StartTime-30, u.StartTime-1, 0
	entry := asPreview(p)
	if s.previews == nil {
		s.previews = map[int][]preview{}
	}
	if s.previewed == nil {
		s.previewed = map[string]int{}
	}
	s.previewed[entry.UpdateID] = u.Version
	s.previews[u.Version-1] = append(s.previews[u.Version-1], entry)
}

// setUpdates sets the history, newest first; operations without a version get them in that order.
func (s *stack) setUpdates(u ...updateInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append([]updateInfo(nil), u...)
	// The previews made for the history it replaces go with it.
	for version, list := range s.previews {
		kept := list[:0:0]
		for _, p := range list {
			if _, auto := s.previewed[p.UpdateID]; !auto {
				kept = append(kept, p)
			}
		}
		s.previews[version] = kept
	}
	s.previewed = nil
	for i := range s.updates {
		if s.updates[i].Version == 0 {
			s.updates[i].Version = len(s.updates) - i
		}
	}
	for i := len(s.updates) - 1; i >= 0; i-- {
		s.preview(s.updates[i])
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
	// eventsPerPage is how many engine events one page holds (2 when unset).
	eventsPerPage int

	mu       sync.Mutex
	requests []string
}

var (
	previewsPath = regexp.MustCompile(`/updates/(latest|0|[1-9][0-9]*)/previews$`)
	versionPath  = regexp.MustCompile(`/updates/([1-9][0-9]*)$`)
	eventsPath   = regexp.MustCompile(`/(update|preview)/([^/]+)/events$`)
	// stackPath is a stack's operations: /api/stacks/{organization}/{project}/{stack}/updates... and an
	// operation's /update/{updateID} or /preview/{updateID} (Pulumi Cloud REST API, Stack Updates).
	stackPath = regexp.MustCompile(`^/api/stacks/([^/]+/[^/]+/[^/]+)/(updates|update|preview)(/|$)`)
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
	if a.held {
		w.Header().Set(holdHeader, "never")
		w.WriteHeader(http.StatusOK)
		return
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
	// GetStackUpdate: one version's update, as an UpdateInfo with its updateID (apitype/update_info_.go).
	if m := versionPath.FindStringSubmatch(r.URL.Path); m != nil {
		version, _ := strconv.Atoi(m[1])
		for _, u := range st.updates {
			if u.Version == version {
				return jsonAnswer(apitype.UpdateInfo{Info: u, UpdateID: updateID(version), Version: version, LatestVersion: st.version()})
			}
		}
	}
	// GetEngineEvents_update and _preview: a page of the operation's events, and the token for the next
	// (GetUpdateEventsResponse; null once all are returned).
	if m := eventsPath.FindStringSubmatch(r.URL.Path); m != nil {
		if events, ok := st.eventsOf(m[1], m[2]); ok {
			return jsonAnswer(c.eventsPage(events, q.Get("continuationToken")))
		}
	}
	return answer{status: http.StatusNotFound, body: []byte(`{"code":404,"message":"Not Found"}`)}
}

// eventsPage is one page of events from the opaque token's position, eventsPerPage (default 2) at a time,
// so that every scenario's events take several pages.
func (c *cloud) eventsPage(events []apitype.EngineEvent, token string) apitype.GetUpdateEventsResponse {
	size := c.eventsPerPage
	if size <= 0 {
		size = 2
	}
	from := 0
	if token != "" {
		from, _ = strconv.Atoi(strings.TrimPrefix(token, "after-"))
	}
	from = min(from, len(events))
	to := min(from+size, len(events))
	out := apitype.GetUpdateEventsResponse{Events: append([]apitype.EngineEvent{}, events[from:to]...)}
	if to < len(events) {
		next := fmt.Sprintf("after-%d", to)
		out.ContinuationToken = &next
	}
	return out
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
