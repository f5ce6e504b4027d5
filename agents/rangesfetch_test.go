package agents

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// listServer is a loopback HTTP server publishing IP lists. Each path
// answers with the body set for it, honouring If-None-Match against its
// ETag and If-Modified-Since against its Last-Modified.
type listServer struct {
	*httptest.Server
	mu    sync.Mutex
	lists map[string]*listAnswer
	hits  atomic.Int64
}

type listAnswer struct {
	status       int // 0: 200
	body         string
	etag         string
	lastModified time.Time
	contentType  string
	delay        time.Duration
	seen         []http.Header // request headers, in order
}

func newListServer(t *testing.T) *listServer {
	t.Helper()
	s := &listServer{lists: map[string]*listAnswer{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *listServer) set(path string, a listAnswer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.lists[path]; old != nil {
		a.seen = old.seen
	}
	s.lists[path] = &a
}

// requests returns the request headers path received.
func (s *listServer) requests(path string) []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.lists[path]; a != nil {
		return a.seen
	}
	return nil
}

func (s *listServer) serve(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.mu.Lock()
	a := s.lists[r.URL.Path]
	if a == nil {
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	a.seen = append(a.seen, r.Header.Clone())
	ans := *a
	s.mu.Unlock()
	if ans.delay > 0 {
		select {
		case <-time.After(ans.delay):
		case <-r.Context().Done():
			return
		}
	}
	if ans.status != 0 && ans.status != http.StatusOK {
		http.Error(w, "broken", ans.status)
		return
	}
	if ans.etag != "" {
		w.Header().Set("ETag", ans.etag)
		if r.Header.Get("If-None-Match") == ans.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if !ans.lastModified.IsZero() {
		w.Header().Set("Last-Modified", ans.lastModified.UTC().Format(http.TimeFormat))
		if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !ans.lastModified.Truncate(time.Second).After(ims) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	ct := ans.contentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	fmt.Fprint(w, ans.body)
}

// googleList is a list in the common JSON shape.
func googleList(created string, prefixes ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"creationTime": %q, "prefixes": [`, created)
	for i, p := range prefixes {
		if i > 0 {
			b.WriteString(", ")
		}
		key := "ipv4Prefix"
		if strings.Contains(p, ":") {
			key = "ipv6Prefix"
		}
		fmt.Fprintf(&b, `{%q: %q}`, key, p)
	}
	b.WriteString("]}")
	return b.String()
}

func newTestFetcher(t *testing.T, clock *testClock, sources map[string][]string) *RangesFetcher {
	t.Helper()
	cfg := RangesFetcherConfig{Sources: sources, Timeout: 2 * time.Second}
	if clock != nil {
		cfg.Now = clock.Now
	}
	f, err := NewRangesFetcher(cfg)
	if err != nil {
		t.Fatalf("NewRangesFetcher: %v", err)
	}
	return f
}

func fetchOnce(t *testing.T, f *RangesFetcher, method string, want RangesFetchResult) RangesFetchReport {
	t.Helper()
	reps := f.Fetch(context.Background(), method)
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1: %+v", len(reps), reps)
	}
	if reps[0].Result != want {
		t.Fatalf("result %s (%v), want %s", reps[0].Result, reps[0].Err, want)
	}
	return reps[0]
}

func mustRanges(t *testing.T, f *RangesFetcher, method string) ([]netip.Prefix, time.Time) {
	t.Helper()
	p, asOf, ok := f.Ranges(method)
	if !ok {
		t.Fatalf("%s: no list", method)
	}
	return p, asOf
}

// TestRangesFetchETag: the first download is a 200; the next ones send the
// ETag back and cost a 304, which keeps the list and renews its date.
func TestRangesFetchETag(t *testing.T) {
	srv := newListServer(t)
	srv.set("/gptbot.json", listAnswer{body: googleList("2026-11-20T10:00:00Z", "203.0.113.0/24", "2001:db8:1::/48"), etag: `"v1"`})
	clock := newVerifyClock("2026-11-23T00:00:00Z")
	f := newTestFetcher(t, clock, map[string][]string{"openai-gptbot": {srv.URL + "/gptbot.json"}})

	if _, _, ok := f.Ranges("openai-gptbot"); ok {
		t.Fatal("list ready before any download")
	}
	rep := fetchOnce(t, f, "openai-gptbot", RangesOK)
	if rep.Prefixes != 2 || rep.Method != "openai-gptbot" {
		t.Errorf("report %+v", rep)
	}
	p, asOf := mustRanges(t, f, "openai-gptbot")
	if len(p) != 2 || !asOf.Equal(clock.Now()) {
		t.Errorf("ranges %v as of %v", p, asOf)
	}
	clock.Advance(time.Hour)
	fetchOnce(t, f, "openai-gptbot", RangesNotModified)
	if _, asOf := mustRanges(t, f, "openai-gptbot"); !asOf.Equal(clock.Now()) {
		t.Errorf("304 did not renew the date: %v", asOf)
	}
	seen := srv.requests("/gptbot.json")
	if len(seen) != 2 || seen[0].Get("If-None-Match") != "" || seen[1].Get("If-None-Match") != `"v1"` {
		t.Errorf("conditional headers: %v", seen)
	}
	if ua := seen[0].Get("User-Agent"); ua != DefaultRangesUserAgent {
		t.Errorf("User-Agent %q", ua)
	}

	// A changed list (new ETag) is a 200 again.
	srv.set("/gptbot.json", listAnswer{body: googleList("2026-11-23T10:00:00Z", "203.0.113.0/24", "198.51.100.0/24"), etag: `"v2"`})
	fetchOnce(t, f, "openai-gptbot", RangesOK)
	fetchOnce(t, f, "openai-gptbot", RangesNotModified)
	if seen := srv.requests("/gptbot.json"); seen[3].Get("If-None-Match") != `"v2"` {
		t.Errorf("If-None-Match after change: %q", seen[3].Get("If-None-Match"))
	}
}

// TestRangesFetchLastModified: without an ETag, Last-Modified is sent back
// as If-Modified-Since.
func TestRangesFetchLastModified(t *testing.T) {
	srv := newListServer(t)
	mod := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	srv.set("/bots.json", listAnswer{body: googleList("", "192.0.2.0/24"), lastModified: mod})
	f := newTestFetcher(t, nil, map[string][]string{"anthropic": {srv.URL + "/bots.json"}})
	fetchOnce(t, f, "anthropic", RangesOK)
	fetchOnce(t, f, "anthropic", RangesNotModified)
	seen := srv.requests("/bots.json")
	if got := seen[1].Get("If-Modified-Since"); got != mod.Format(http.TimeFormat) {
		t.Errorf("If-Modified-Since %q", got)
	}
	if seen[1].Get("If-None-Match") != "" {
		t.Error("If-None-Match sent without an ETag")
	}
}

// TestRangesFetchRejects: a list that shrank to less than half, broken
// JSON, an empty list, a too broad prefix, a 500 and a body over the size
// cap all leave the last good list in place.
func TestRangesFetchRejects(t *testing.T) {
	srv := newListServer(t)
	four := googleList("2026-11-20T00:00:00Z", "192.0.2.0/26", "192.0.2.64/26", "192.0.2.128/26", "198.51.100.0/24")
	srv.set("/l.json", listAnswer{body: four})
	f, err := NewRangesFetcher(RangesFetcherConfig{
		Sources: map[string][]string{"perplexitybot": {srv.URL + "/l.json"}},
		MaxSize: 1024,
	})
	if err != nil {
		t.Fatal(err)
	}
	fetchOnce(t, f, "perplexitybot", RangesOK)

	tests := []struct {
		name   string
		answer listAnswer
		result RangesFetchResult
		errHas string
	}{
		{"shrunk", listAnswer{body: googleList("2026-11-20T00:00:00Z", "192.0.2.0/26")}, RangesRejected, "shrank from 4 to 1"},
		{"shrunk, older", listAnswer{body: googleList("2026-11-01T00:00:00Z", "192.0.2.0/26")}, RangesRejected, "shrank"},
		{"shrunk, no date", listAnswer{body: `{"prefixes": [{"ipv4Prefix": "192.0.2.0/26"}]}`}, RangesRejected, "shrank"},
		{"broken JSON", listAnswer{body: `{"creationTime": "2026-11-22T00:00:00Z", "prefixes": [{"ipv4Prefix": "192.0`}, RangesRejected, "JSON"},
		{"empty", listAnswer{body: `{"creationTime": "2026-11-22T00:00:00Z", "prefixes": []}`}, RangesRejected, "no prefixes found"},
		{"HTML error page", listAnswer{body: "<html>maintenance</html>", contentType: "text/html"}, RangesRejected, "line 1: bad prefix"},
		{"too broad", listAnswer{body: googleList("2026-11-22T00:00:00Z", "0.0.0.0/0", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")}, RangesRejected, "too broad"},
		{"500", listAnswer{status: 500}, RangesError, "HTTP status 500"},
		{"404", listAnswer{status: 404}, RangesError, "HTTP status 404"},
		{"too large", listAnswer{body: googleList("2026-11-22T00:00:00Z", "192.0.2.0/24") + strings.Repeat(" ", 2000)}, RangesError, "larger than 1024"},
		{"draft major version 2", listAnswer{body: `{"formatVersion": "2.0", "creationTime": "2026-11-22T00:00:00Z", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`}, RangesRejected, "major version"},
		{"draft media type version 2", listAnswer{body: four, contentType: "application/jafar+json; version=2.1"}, RangesRejected, "major version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.set("/l.json", tt.answer)
			rep := fetchOnce(t, f, "perplexitybot", tt.result)
			if rep.Err == nil || !strings.Contains(rep.Err.Error(), tt.errHas) || !strings.Contains(rep.Err.Error(), "/l.json") {
				t.Errorf("error %v, want it to name the URL and contain %q", rep.Err, tt.errHas)
			}
			p, _ := mustRanges(t, f, "perplexitybot")
			if len(p) != 4 {
				t.Errorf("last good list replaced: %v", p)
			}
		})
	}

	// A list that shrank but says it is newer is accepted.
	srv.set("/l.json", listAnswer{body: googleList("2026-11-22T00:00:00Z", "192.0.2.0/26")})
	fetchOnce(t, f, "perplexitybot", RangesOK)
	if p, _ := mustRanges(t, f, "perplexitybot"); len(p) != 1 {
		t.Errorf("newer shrunk list not taken: %v", p)
	}
	// Half the size is not "more than half" smaller.
	srv.set("/l.json", listAnswer{body: googleList("2026-11-22T00:00:00Z", "192.0.2.0/26", "192.0.2.64/26")})
	fetchOnce(t, f, "perplexitybot", RangesOK)
	srv.set("/l.json", listAnswer{body: googleList("2026-11-22T00:00:00Z", "192.0.2.0/26")})
	fetchOnce(t, f, "perplexitybot", RangesOK)
}

// TestRangesFetchErrorWithoutList: a 304 or a failure before any good list
// leaves the method not ready.
func TestRangesFetchErrorWithoutList(t *testing.T) {
	srv := newListServer(t)
	srv.set("/l.json", listAnswer{status: 503})
	f := newTestFetcher(t, nil, map[string][]string{"duckduckgo": {srv.URL + "/l.json"}})
	fetchOnce(t, f, "duckduckgo", RangesError)
	if _, _, ok := f.Ranges("duckduckgo"); ok {
		t.Error("ready after a failure")
	}
	srv.set("/l.json", listAnswer{status: 304})
	rep := fetchOnce(t, f, "duckduckgo", RangesError)
	if !strings.Contains(rep.Err.Error(), "no list is known") {
		t.Errorf("304 without a list: %v", rep.Err)
	}
}

// TestRangesFetchTimeout: a server slower than the timeout is an error,
// returned in about the timeout.
func TestRangesFetchTimeout(t *testing.T) {
	srv := newListServer(t)
	srv.set("/slow.json", listAnswer{body: googleList("", "192.0.2.0/24"), delay: 5 * time.Second})
	f, err := NewRangesFetcher(RangesFetcherConfig{
		Sources: map[string][]string{"openai-searchbot": {srv.URL + "/slow.json"}},
		Timeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rep := fetchOnce(t, f, "openai-searchbot", RangesError)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 200ms timeout", d)
	}
	if !strings.Contains(rep.Err.Error(), "deadline exceeded") {
		t.Errorf("error %v", rep.Err)
	}
}

// TestRangesFetchDraftFormat: the IETF draft's shape (formatVersion,
// synctoken, services, invalid prefix objects skipped) is read, served as
// application/jafar+json.
func TestRangesFetchDraftFormat(t *testing.T) {
	srv := newListServer(t)
	srv.set("/jafar.json", listAnswer{contentType: "application/jafar+json; version=1.0", body: `{
  "formatVersion": "1.0",
  "synctoken": "20261122223000",
  "creationTime": "2026-11-22T22:30:00Z",
  "notes": "test list",
  "prefixes": [
    {"ipv4Prefix": "192.0.2.0/24", "services": ["ExampleBot"]},
    {"ipv6Prefix": "2001:db8:abc::/48"},
    {"ipv4Prefix": "198.51.100.0/24", "ipv6Prefix": "2001:db8::/32"},
    {"services": ["nothing"]}
  ]
}`})
	f := newTestFetcher(t, nil, map[string][]string{"perplexity-user": {srv.URL + "/jafar.json"}})
	rep := fetchOnce(t, f, "perplexity-user", RangesOK)
	if rep.Prefixes != 2 {
		t.Errorf("%d prefixes, want 2 (invalid objects skipped)", rep.Prefixes)
	}
	l, err := ParseRangeList([]byte(`{"formatVersion": "1.3", "synctoken": "abc", "creationTime": "2026-11-22T22:30:00Z", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if l.FormatVersion != "1.3" || l.SyncToken != "abc" || !l.CreationTime.Equal(time.Date(2026, 11, 22, 22, 30, 0, 0, time.UTC)) {
		t.Errorf("metadata %+v", l)
	}
	// Google's creationTime has no zone and microseconds.
	l, err = ParseRangeList([]byte(`{"creationTime": "2026-08-20T14:46:45.000000", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`))
	if err != nil || !l.CreationTime.Equal(time.Date(2026, 8, 20, 14, 46, 45, 0, time.UTC)) {
		t.Errorf("Google creationTime: %v %v", l.CreationTime, err)
	}
	for _, bad := range []string{
		`{"formatVersion": "one", "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`,
		`{"formatVersion": 2, "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`,
		`{"formatVersion": true, "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`,
		`{"synctoken": "1", "prefixes": [{"services": ["only invalid objects"]}]}`,
	} {
		if _, err := ParseRangeList([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if l, err := ParseRangeList([]byte(`{"formatVersion": 1.1, "prefixes": [{"ipv4Prefix": "192.0.2.0/24"}]}`)); err != nil || l.FormatVersion != "1.1" {
		t.Errorf("numeric formatVersion: %+v %v", l, err)
	}
}

// TestRangesFetchMakesSpoofProvable: with the embedded snapshot (months
// old) a GPTBot claim from outside the list is only Unverified; once a
// fresh list is downloaded and applied it is Spoofed, and an address in
// the new list is Verified. When the publisher stops confirming the list
// for longer than MaxListAge, it stops proving spoofs again.
func TestRangesFetchMakesSpoofProvable(t *testing.T) {
	srv := newListServer(t)
	srv.set("/gptbot.json", listAnswer{body: googleList("2026-11-22T00:00:00Z", "203.0.113.0/24"), etag: `"a"`})
	clock := newVerifyClock("2026-11-23T00:00:00Z")
	v := newTestVerifier(t, nil, VerifierConfig{Now: clock.Now})
	outside := netip.MustParseAddr("198.51.100.7")
	inside := netip.MustParseAddr("203.0.113.9")
	ctx := context.Background()

	if got := v.VerifyMethod(ctx, "openai-gptbot", outside); got != Unverified {
		t.Fatalf("stale embedded list: %v, want Unverified", got)
	}
	if stale := v.StaleLists(); !contains(stale, "openai-gptbot") {
		t.Errorf("StaleLists %v lacks openai-gptbot", stale)
	}
	f := newTestFetcher(t, clock, map[string][]string{"openai-gptbot": {srv.URL + "/gptbot.json"}})
	if applied, err := f.Apply(v); err != nil || len(applied) != 0 {
		t.Fatalf("applied %v before any download (%v)", applied, err)
	}
	fetchOnce(t, f, "openai-gptbot", RangesOK)
	if applied, err := f.Apply(v); err != nil || len(applied) != 1 {
		t.Fatalf("Apply: %v %v", applied, err)
	}
	if got := v.VerifyMethod(ctx, "openai-gptbot", outside); got != Spoofed {
		t.Errorf("fresh list, outside: %v, want Spoofed", got)
	}
	if got := v.VerifyMethod(ctx, "openai-gptbot", inside); got != Verified {
		t.Errorf("fresh list, inside: %v, want Verified", got)
	}
	if asOf, ok := v.ListAsOf("openai-gptbot"); !ok || !asOf.Equal(clock.Now()) {
		t.Errorf("ListAsOf %v %v", asOf, ok)
	}
	if contains(v.StaleLists(), "openai-gptbot") {
		t.Error("fresh list reported stale")
	}

	// The publisher goes away for longer than MaxListAge.
	srv.set("/gptbot.json", listAnswer{status: 502})
	clock.Advance(DefaultMaxListAge + time.Hour)
	fetchOnce(t, f, "openai-gptbot", RangesError)
	if _, err := f.Apply(v); err != nil {
		t.Fatal(err)
	}
	if got := v.VerifyMethod(ctx, "openai-gptbot", outside); got != Unverified {
		t.Errorf("list unconfirmed for %v: %v, want Unverified", DefaultMaxListAge, got)
	}
	if got := v.VerifyMethod(ctx, "openai-gptbot", inside); got != Verified {
		t.Errorf("old list, inside: %v, want Verified", got)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestRangesFetchSeveralURLs: a method with two lists is ready only when
// both are, and its list is their union dated by the older confirmation.
func TestRangesFetchSeveralURLs(t *testing.T) {
	srv := newListServer(t)
	srv.set("/duckduckbot.json", listAnswer{body: googleList("", "192.0.2.1/32")})
	srv.set("/duckassistbot.json", listAnswer{status: 500})
	clock := newVerifyClock("2026-11-23T00:00:00Z")
	f := newTestFetcher(t, clock, map[string][]string{"duckduckgo": {srv.URL + "/duckduckbot.json", srv.URL + "/duckassistbot.json"}})
	reps := f.FetchAll(context.Background())
	if len(reps) != 2 || reps[0].Result != RangesOK || reps[1].Result != RangesError {
		t.Fatalf("reports %+v", reps)
	}
	if _, _, ok := f.Ranges("duckduckgo"); ok {
		t.Fatal("ready with one of two lists: DuckAssistBot would look spoofed")
	}
	first := clock.Now()
	clock.Advance(time.Minute)
	srv.set("/duckassistbot.json", listAnswer{body: googleList("", "198.51.100.1/32")})
	f.Fetch(context.Background(), "duckduckgo")
	p, asOf := mustRanges(t, f, "duckduckgo")
	if len(p) != 2 || !asOf.Equal(clock.Now()) {
		t.Errorf("union %v as of %v", p, asOf)
	}
	srv.set("/duckduckbot.json", listAnswer{status: 500})
	clock.Advance(time.Minute)
	f.Fetch(context.Background(), "duckduckgo")
	if _, asOf := mustRanges(t, f, "duckduckgo"); !asOf.Equal(first.Add(time.Minute)) {
		t.Errorf("date %v, want the older confirmation %v", asOf, first.Add(time.Minute))
	}
}

// TestRangesFetchRestore: snapshots taken from one fetcher restore another
// (a restart) with the ETag, so the first download is a 304; bad or
// foreign snapshots are refused or ignored.
func TestRangesFetchRestore(t *testing.T) {
	srv := newListServer(t)
	srv.set("/g.json", listAnswer{body: googleList("2026-11-22T00:00:00Z", "203.0.113.0/24"), etag: `"x"`})
	clock := newVerifyClock("2026-11-23T00:00:00Z")
	src := map[string][]string{"openai-gptbot": {srv.URL + "/g.json"}}
	f1 := newTestFetcher(t, clock, src)
	fetchOnce(t, f1, "openai-gptbot", RangesOK)
	snaps := f1.Snapshots("openai-gptbot")
	if len(snaps) != 1 || snaps[0].ETag != `"x"` || !snaps[0].Fetched.Equal(clock.Now()) {
		t.Fatalf("snapshots %+v", snaps)
	}

	clock.Advance(time.Hour)
	f2 := newTestFetcher(t, clock, src)
	n, err := f2.Restore("openai-gptbot", append(snaps,
		RangesSnapshot{URL: "https://elsewhere.example/x.json", Body: []byte("192.0.2.0/24")},
	))
	if err != nil || n != 1 {
		t.Fatalf("Restore: %d %v", n, err)
	}
	_, asOf := mustRanges(t, f2, "openai-gptbot")
	if !asOf.Equal(clock.Now().Add(-time.Hour)) {
		t.Errorf("restored list dated %v, want its fetch time", asOf)
	}
	fetchOnce(t, f2, "openai-gptbot", RangesNotModified)

	// An older snapshot does not replace a newer list; a corrupt one is an error.
	old := snaps[0]
	old.Body = []byte("192.0.2.0/24")
	if n, err := f2.Restore("openai-gptbot", []RangesSnapshot{old}); n != 0 || err != nil {
		t.Errorf("older snapshot: %d %v", n, err)
	}
	bad := RangesSnapshot{URL: srv.URL + "/g.json", Body: []byte("{"), Fetched: clock.Now().Add(time.Hour)}
	if n, err := f2.Restore("openai-gptbot", []RangesSnapshot{bad}); n != 0 || err == nil {
		t.Errorf("corrupt snapshot: %d %v", n, err)
	}
}

// TestRangesFetchRedirects: up to 3 redirects are followed, not more, and
// never from https to http.
func TestRangesFetchRedirects(t *testing.T) {
	srv := newListServer(t)
	srv.set("/final.json", listAnswer{body: googleList("", "192.0.2.0/24")})
	mux := http.NewServeMux()
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			http.Redirect(w, r, srv.URL+"/final.json", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	red := httptest.NewServer(mux)
	defer red.Close()
	f := newTestFetcher(t, nil, map[string][]string{"openai-gptbot": {red.URL + "/r/2"}, "openai-searchbot": {red.URL + "/r/3"}})
	fetchOnce(t, f, "openai-gptbot", RangesOK)
	rep := fetchOnce(t, f, "openai-searchbot", RangesError)
	if !strings.Contains(rep.Err.Error(), "redirects") {
		t.Errorf("4 redirects: %v", rep.Err)
	}

	u, _ := url.Parse(srv.URL + "/final.json")
	via := []*http.Request{{URL: &url.URL{Scheme: "https", Host: "example.com"}}}
	if err := checkRangesRedirect(&http.Request{URL: u}, via); err == nil {
		t.Error("https to http redirect allowed")
	}
}

// TestNewRangesFetcherErrors: bad sources are refused.
func TestNewRangesFetcherErrors(t *testing.T) {
	for name, src := range map[string]map[string][]string{
		"unknown method": {"nope": {"https://example.com/x.json"}},
		"no URL":         {"openai-gptbot": {}},
		"ftp":            {"openai-gptbot": {"ftp://example.com/x.json"}},
		"relative":       {"openai-gptbot": {"/x.json"}},
	} {
		if _, err := NewRangesFetcher(RangesFetcherConfig{Sources: src}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestPublishedLists: every list-only method (whose list proves spoofs)
// has an operator URL to fetch; every URL is https and names the page it
// was checked against; the default fetcher covers them all.
func TestPublishedLists(t *testing.T) {
	byMethod := map[string][]PublishedList{}
	for _, p := range PublishedLists() {
		byMethod[p.Method] = append(byMethod[p.Method], p)
		u, err := url.Parse(p.URL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: URL %q", p.Method, p.URL)
		}
		if !strings.HasPrefix(p.Doc, "https://") || p.Note == "" {
			t.Errorf("%s %s: doc %q, note %q", p.Method, p.URL, p.Doc, p.Note)
		}
		t.Logf("%-22s confirmed=%-5v %s", p.Method, p.Confirmed, p.URL)
	}
	for _, m := range VerificationMethods() {
		if m.SpoofIfUnlisted && len(byMethod[m.Key]) == 0 {
			t.Errorf("%s proves spoofs from its list but has no URL to keep it fresh", m.Key)
		}
	}
	if n := len(byMethod["google-user-triggered"]); n != 3 {
		t.Errorf("google-user-triggered has %d URLs, want 3", n)
	}
	f, err := NewRangesFetcher(RangesFetcherConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Methods()) != len(byMethod) {
		t.Errorf("default fetcher keeps %v", f.Methods())
	}
}

// BenchmarkRangesApply: handing a downloaded list the size of Google's
// common crawlers list to one Verifier (done once per refresh per handler).
func BenchmarkRangesApply(b *testing.B) {
	body, err := ipsFS.ReadFile("data/ips/google/googlebot.json")
	if err != nil {
		b.Fatal(err)
	}
	src := "https://example.com/common-crawlers.json"
	f, err := NewRangesFetcher(RangesFetcherConfig{Sources: map[string][]string{"google-common": {src}}})
	if err != nil {
		b.Fatal(err)
	}
	if n, err := f.Restore("google-common", []RangesSnapshot{{URL: src, Body: body, Fetched: time.Now()}}); n != 1 || err != nil {
		b.Fatal(n, err)
	}
	v, err := NewVerifier(VerifierConfig{})
	if err != nil {
		b.Fatal(err)
	}
	p, _, _ := f.Ranges("google-common")
	b.ReportMetric(float64(len(p)), "prefixes")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Apply(v); err != nil {
			b.Fatal(err)
		}
	}
}
