package analysis

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// The stand-in answers as the REST API documents: 401 without the token, the history newest first in
// pages, previews oldest first unless asc=false, and previews of `latest` that start over after an update
// while those before it stay listed under their version.
func TestStandIn(t *testing.T) {
	c := newCloud(t, token)
	c.stack.unpreviewed = true
	c.stack.setUpdates(op(commit, "succeeded", t0+200, nil), op(other, "succeeded", t0+100, nil), op(other, "failed", t0, nil))
	c.stack.setPreviews(asPreview(op(other, "succeeded", t0, nil)), asPreview(op(commit, "succeeded", t0+100, nil)))
	get := func(path string, auth bool) (int, []updateInfo) {
		req, _ := http.NewRequest(http.MethodGet, c.URL+"/api/stacks/o/p/s/"+path, nil)
		if auth {
			req.Header.Set("Authorization", "token "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Updates []json.RawMessage `json:"updates"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		var out []updateInfo
		for _, raw := range body.Updates {
			var u updateInfo
			var p preview
			if json.Unmarshal(raw, &p) == nil && p.Info.StartTime != 0 {
				u = p.Info
			} else {
				_ = json.Unmarshal(raw, &u)
			}
			out = append(out, u)
		}
		return resp.StatusCode, out
	}
	if status, _ := get("updates", false); status != http.StatusUnauthorized {
		t.Errorf("without the token: %d", status)
	}
	if _, list := get("updates?pageSize=2&page=1", true); len(list) != 2 || list[0].StartTime != t0+200 {
		t.Errorf("history page: %+v", list)
	}
	if _, list := get("updates/latest/previews", true); len(list) != 2 || list[0].StartTime != t0 {
		t.Errorf("previews, default order: %+v", list)
	}
	if _, list := get("updates/latest/previews?asc=false&pageSize=1&page=1", true); len(list) != 1 || list[0].StartTime != t0+100 {
		t.Errorf("previews, newest first: %+v", list)
	}
	before := c.stack.version()
	c.stack.finishUpdate(op(commit, "succeeded", t0+300, nil))
	if _, list := get("updates/latest/previews", true); len(list) != 0 {
		t.Errorf("previews after an update: %+v", list)
	}
	// The previews made before it stay listed under the version they ran against, which the history names.
	if _, list := get("updates?pageSize=1&page=1", true); len(list) != 1 || list[0].Version != before+1 {
		t.Errorf("the newest update's version: %+v, want %d", list, before+1)
	}
	if _, list := get(fmt.Sprintf("updates/%d/previews?asc=false", before), true); len(list) != 2 || list[0].StartTime != t0+100 {
		t.Errorf("previews of version %d: %+v", before, list)
	}
	if _, list := get(fmt.Sprintf("updates/%d/previews", before+1), true); len(list) != 0 {
		t.Errorf("previews of the new version: %+v", list)
	}
}
