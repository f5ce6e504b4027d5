package caddyrobots

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/internal/admin"
)

// adminServe sends one request through h as Caddy's server would, from
// remote, and returns the status.
func adminServe(t *testing.T, h *Handler, target, ua, remote string) int {
	t.Helper()
	raw, ip := rawRequest(target, ua, remote)
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, prepare(raw, ip, w, &caddyhttp.Server{}), okNext); err != nil {
		var he caddyhttp.HandlerError
		if errors.As(err, &he) {
			return he.StatusCode
		}
		t.Fatalf("serve %s: %v", target, err)
	}
	return w.Code
}

// apiStatus is the status Caddy's admin server answers err with.
func apiStatus(err error) int {
	var ae caddy.APIError
	if errors.As(apiError(err), &ae) {
		return ae.HTTPStatus
	}
	return 0
}

func TestAdminCheckDoesNotCount(t *testing.T) {
	h, done := newTestHandler(t, &Handler{Strikes: &StrikesConfig{Count: 2, Window: caddy.Duration(time.Minute), Ban: caddy.Duration(time.Hour)}})
	defer done()
	hs := []*Handler{h}
	check := func(ua, ip, u string) admin.CheckResponse {
		t.Helper()
		res, err := admin.Check(context.Background(), checker{hs: hs}, admin.CheckRequest{UserAgent: ua, IP: ip, URL: u})
		if err != nil {
			t.Fatalf("check %s %s: %v", ua, u, err)
		}
		return res
	}
	// GPTBot is disallowed everywhere (line 6); many checks, no strike.
	for range 5 {
		res := check("GPTBot/1.2", "192.0.2.10", "http://check.example/page")
		if res.Decision != "block" || res.Reason != "rule" || res.Line != 6 || res.Rule != "Disallow: / (line 6)" ||
			res.Group != "User-agent: GPTBot (line 5)" || res.Crawler != "GPTBot" || res.Version == "" || res.Message == "" {
			t.Fatalf("check GPTBot /page = %+v", res)
		}
	}
	// The real request after five checks is refused by its rule, not
	// banned: the checks struck nothing.
	if got := adminServe(t, h, "http://check.example/page", "GPTBot/1.2", "192.0.2.10:4000"); got != http.StatusForbidden {
		t.Fatalf("real request status %d, want 403", got)
	}
	if res := check("GPTBot/1.2", "192.0.2.10", "http://check.example/page"); res.Decision != "block" {
		t.Errorf("after one strike, check says %s (%s), want block by rule", res.Decision, res.Reason)
	}

	if res := check(benchBrowserUA, "192.0.2.11", "http://check.example/private/"); res.Decision != "allow" || res.Reason != "not a crawler" {
		t.Errorf("browser: %+v", res)
	}
	res := check(benchBotUA, "192.0.2.12", "http://check.example/public")
	if res.Decision != "allow" || res.CrawlDelaySeconds != 2 || res.Group != "User-agent: * (line 1)" {
		t.Errorf("ExampleCrawler /public: %+v", res)
	}
	// The delay is reported without being spent: checks never throttle.
	for range 3 {
		if res := check(benchBotUA, "192.0.2.12", "http://check.example/public"); res.Decision != "allow" {
			t.Fatalf("repeated check throttled: %+v", res)
		}
	}
	if res := check(benchBotUA, "192.0.2.12", "http://check.example/private/x"); res.Decision != "block" || res.Line != 2 {
		t.Errorf("ExampleCrawler /private/x: %+v", res)
	}
	// Every form of the path is judged, as for a real request.
	if res := check(benchBotUA, "192.0.2.12", "http://check.example/a/../private/x"); res.Decision != "block" {
		t.Errorf("dot segments: %+v", res)
	}
	if res := check("GPTBot/1.2", "192.0.2.10", "http://check.example/robots.txt"); res.Decision != "allow" {
		t.Errorf("/robots.txt: %+v", res)
	}

	three := 3
	for _, bad := range []admin.CheckRequest{
		{UserAgent: "GPTBot/1.2", IP: "192.0.2.1", URL: "/relative"},
		{UserAgent: "GPTBot/1.2", IP: "192.0.2.1", URL: "ftp://x/"},
		{UserAgent: "GPTBot/1.2", IP: "not-an-ip", URL: "http://check.example/"},
		{UserAgent: "GPTBot/1.2", IP: "192.0.2.1", URL: "http://check.example/", Handler: &three},
	} {
		_, err := admin.Check(context.Background(), checker{hs: hs}, bad)
		if s := apiStatus(err); s != http.StatusBadRequest && s != http.StatusNotFound {
			t.Errorf("check %+v: %v (status %d), want 400 or 404", bad, err, s)
		}
	}
}

// TestAdminCheckHandler: a check picks its handler by index, or, outside a
// running Caddy (no HTTP app to route through), the only handler; with
// several handlers and nothing to route by, it says so and lists them.
func TestAdminCheckHandler(t *testing.T) {
	a, doneA := newTestHandler(t, &Handler{})
	defer doneA()
	b, doneB := newTestHandler(t, &Handler{Source: "inline", Inline: "User-agent: *\nDisallow: /b/\n"})
	defer doneB()
	u, _ := url.Parse("http://nowhere.example/")
	r := httptest.NewRequest("GET", "http://nowhere.example/", nil)
	if _, _, err := checkHandler([]*Handler{a, b}, nil, nil, u, r); apiStatus(err) != http.StatusNotFound ||
		!strings.Contains(err.Error(), "nowhere.example") || !strings.Contains(err.Error(), "1: not in the running config") {
		t.Errorf("no route to a handler: %v", err)
	}
	if h, ans, err := checkHandler([]*Handler{a}, nil, nil, u, r); err != nil || h != a || ans.Handler != 0 {
		t.Errorf("one handler: %v %+v %v", h, ans, err)
	}
	one := 1
	if h, ans, err := checkHandler([]*Handler{a, b}, nil, &one, u, r); err != nil || h != b || ans.Source != "inline" {
		t.Errorf("by index: %v %+v", err, ans)
	}
	if _, _, err := checkHandler(nil, nil, nil, u, r); apiStatus(err) != http.StatusNotFound {
		t.Errorf("no handler: %v", err)
	}
}

func TestAdminStatusAndBans(t *testing.T) {
	h, done := newTestHandler(t, &Handler{Strikes: &StrikesConfig{Count: 2, Window: caddy.Duration(time.Minute), Ban: caddy.Duration(time.Hour)}})
	defer done()
	hs := []*Handler{h}
	for range 3 {
		adminServe(t, h, "http://bans.example/ok", benchBotUA, "198.51.100.20:1000")
	}
	for i := range 2 {
		if got := adminServe(t, h, "http://bans.example/private/"+string(rune('a'+i)), "BanMeBot/1.0", "198.51.100.21:1000"); got != http.StatusForbidden {
			t.Fatalf("strike %d: status %d", i, got)
		}
	}
	if got := adminServe(t, h, "http://bans.example/ok", "BanMeBot/1.0", "198.51.100.21:1000"); got != http.StatusForbidden {
		t.Fatalf("banned bot got %d", got)
	}

	rep := admin.Status(context.Background(), adminSites(hs), time.Now())
	if len(rep.Handlers) != 1 {
		t.Fatalf("status has %d handlers", len(rep.Handlers))
	}
	st := rep.Handlers[0]
	if st.Source != "inline" || len(st.Sites) != 1 || st.Sites[0].State != "ok" || st.Sites[0].Version == "" ||
		st.Sites[0].Version != st.Sites[0].Versions[0].ID || st.Sites[0].AgeSeconds == nil {
		t.Errorf("status: %+v", st)
	}
	if st.Store.Type != "memory" || !st.Store.Healthy || st.Bans.Count < 1 || st.Strikes != "2 in 1m0s, ban 1h0m0s" {
		t.Errorf("store and bans: %+v %+v %q", st.Store, st.Bans, st.Strikes)
	}
	names := map[string]admin.CrawlerCount{}
	for _, c := range st.TopCrawlers {
		names[c.Name] = c
	}
	if names["ExampleCrawler"].Allowed < 1 || names["BanMeBot"].Refused < 3 {
		t.Errorf("top crawlers: %+v", st.TopCrawlers)
	}
	if len(st.TopOffenders) == 0 || st.TopOffenders[0].Refused == 0 {
		t.Errorf("top offenders: %+v", st.TopOffenders)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}

	bans := admin.Bans(context.Background(), adminSites(hs), time.Now())
	var id string
	for _, b := range bans.Bans {
		// The ban is the crawler's own (its name and address), in the
		// handler's scope: not the Host's, not its address's for any token.
		if b.Crawler == "BanMeBot" && b.Network == "198.51.100.21/32" {
			id = b.Identity
			if b.Reason == "" || time.Until(b.Until) < 59*time.Minute {
				t.Errorf("ban entry: %+v", b)
			}
		}
	}
	if id == "" {
		t.Fatalf("ban not listed: %+v", bans)
	}

	// DELETE through the route, path-escaped as a client would.
	api := &adminAPI{}
	registered := false
	for _, x := range handlers() {
		registered = registered || x == h
	}
	if !registered {
		t.Fatal("the handler is not in the registry")
	}
	req := httptest.NewRequest(http.MethodDelete, "/robots/bans/"+url.PathEscape(id), nil)
	w := httptest.NewRecorder()
	if err := api.serve(w, req); err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	if !strings.Contains(w.Body.String(), `"lifted": true`) {
		t.Errorf("DELETE answered %s", w.Body.String())
	}
	if got := adminServe(t, h, "http://bans.example/ok", "BanMeBot/1.0", "198.51.100.21:1000"); got != http.StatusOK {
		t.Errorf("after unban: status %d, want 200", got)
	}
	w = httptest.NewRecorder()
	if err := api.serve(w, httptest.NewRequest(http.MethodDelete, "/robots/bans/"+url.PathEscape(id), nil)); apiStatus(err) != http.StatusNotFound {
		t.Errorf("second DELETE: %v, want 404", err)
	}
	if err := api.serve(w, httptest.NewRequest(http.MethodDelete, "/robots/bans/garbage", nil)); apiStatus(err) != http.StatusBadRequest {
		t.Errorf("DELETE garbage: %v, want 400", err)
	}
}

func TestAdminRoutes(t *testing.T) {
	_, done := newTestHandler(t, &Handler{})
	defer done()
	api := &adminAPI{}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/robots/status", 200},
		{http.MethodPost, "/robots/status", 405},
		{http.MethodGet, "/robots/check", 405},
		{http.MethodGet, "/robots/bans", 200},
		{http.MethodGet, "/robots/bans/u:x", 405},
		{http.MethodGet, "/robots/", 200},
		{http.MethodGet, "/robots/nothing", 404},
		{http.MethodPost, "/robots/reload", 200},
		{http.MethodGet, "/robots/versions/0123456789ab", 405},
		{http.MethodDelete, "/robots/versions/0123456789ab", 404},
		{http.MethodDelete, "/robots/versions/not-a-version", 400},
	} {
		w := httptest.NewRecorder()
		err := api.serve(w, httptest.NewRequest(c.method, c.path, nil))
		got := w.Code
		if err != nil {
			got = apiStatus(err)
		}
		if got != c.status {
			t.Errorf("%s %s: %d (%v), want %d", c.method, c.path, got, err, c.status)
		}
		if got == 405 && w.Header().Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
	w := httptest.NewRecorder()
	body := `{"user_agent":"GPTBot/1.2","ip":"192.0.2.1","url":"http://route.example/x","handler":0}`
	if err := api.serve(w, httptest.NewRequest(http.MethodPost, "/robots/check", strings.NewReader(body))); err != nil {
		t.Fatalf("POST /robots/check: %v", err)
	}
	var res admin.CheckResponse
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || res.Decision == "" {
		t.Errorf("check answer %s: %v", w.Body.String(), err)
	}
	err := api.serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/robots/check", strings.NewReader(`{"agent":1}`)))
	if apiStatus(err) != http.StatusBadRequest {
		t.Errorf("unknown field: %v, want 400", err)
	}
}

func TestAdminReloadFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /one/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, done := newTestHandler(t, &Handler{Source: "file", File: file})
	defer done()
	before := currentVersion(h)
	if before == "" {
		t.Fatal("no version loaded from the file")
	}
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /two/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := reloadAll(context.Background(), []*Handler{h})
	if len(rep.Reloaded) != 1 {
		t.Fatalf("reloaded %+v", rep)
	}
	r := rep.Reloaded[0]
	if r.Result != "ok" || !r.Changed || r.Previous != before || r.Version == before || r.File != file {
		t.Errorf("reload: %+v", r)
	}
	// Reloading again changes nothing.
	if r := reloadAll(context.Background(), []*Handler{h}).Reloaded[0]; r.Changed || r.Result != "ok" {
		t.Errorf("second reload: %+v", r)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if r := reloadAll(context.Background(), []*Handler{h}).Reloaded[0]; r.Result != "error" || r.Error == "" || r.Version != r.Previous {
		t.Errorf("reload of a missing file: %+v (the last good copy must stay)", r)
	}
}

// reloadAll loads the robots.txt of every site of hs now, as POST
// /robots/reload does.
func reloadAll(ctx context.Context, hs []*Handler) admin.ReloadReport {
	return admin.Reload(ctx, adminSites(hs))
}

// currentVersion is the id of the current version of h's first site, ""
// when there is none.
func currentVersion(h *Handler) string {
	for _, st := range h.rules.Status() {
		for _, v := range st.Versions {
			if v.Current {
				return v.ID
			}
		}
	}
	return ""
}

// TestAdminWithdraw: DELETE /robots/versions/<id> takes a replaced version
// out of the grace window (a crawler that never re-read the file no longer
// gets it), refuses the current one with 409, and answers which sites it
// was withdrawn from.
func TestAdminWithdraw(t *testing.T) {
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, done := newTestHandler(t, &Handler{Source: "file", File: file, CrawlDelay: "off", Strikes: &StrikesConfig{Off: true}})
	defer done()
	broken := currentVersion(h)
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /private/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reloadAll(context.Background(), []*Handler{h})
	fixed := currentVersion(h)
	if got := adminServe(t, h, "http://w.example/private/x", benchBotUA, "198.51.100.40:1000"); got != http.StatusOK {
		t.Fatalf("within grace of the broken file: %d, want 200", got)
	}
	api := &adminAPI{}
	w := httptest.NewRecorder()
	if err := api.serve(w, httptest.NewRequest(http.MethodDelete, "/robots/versions/"+fixed, nil)); apiStatus(err) != http.StatusConflict {
		t.Errorf("withdrawing the current version: %v, want 409", err)
	}
	w = httptest.NewRecorder()
	if err := api.serve(w, httptest.NewRequest(http.MethodDelete, "/robots/versions/"+broken, nil)); err != nil {
		t.Fatalf("withdrawing %s: %v", broken, err)
	}
	var rep admin.WithdrawReport
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil || rep.Version != broken || len(rep.Withdrawn) != 1 ||
		rep.Withdrawn[0].Handler == nil || *rep.Withdrawn[0].Handler != slices.Index(handlers(), h) {
		t.Errorf("answer %s (%v)", w.Body.String(), err)
	}
	if got := adminServe(t, h, "http://w.example/private/x", benchBotUA, "198.51.100.40:1000"); got != http.StatusForbidden {
		t.Errorf("after the withdrawal: %d, want 403", got)
	}
}
