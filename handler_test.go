package caddyrobots

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

const (
	benchBrowserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	benchBotUA     = "ExampleCrawler/1.0 (+https://example.com/bot)"
	demoRobots     = "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: GPTBot\nDisallow: /\n"
)

// newTestHandler provisions a handler with inline rules and a fake clock.
func newTestHandler(t testing.TB, h *Handler) (*Handler, func()) {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	if h.Source == "" {
		h.Source, h.Inline = "inline", demoRobots
	}
	if err := h.Provision(ctx); err != nil {
		t.Fatalf("provision: %v", err)
	}
	if err := h.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return h, func() { _ = h.Cleanup(); cancel() }
}

// prepared builds a request as Caddy's server would hand it to a handler.
func prepared(method, target, ua, remote string) (*http.Request, *httptest.ResponseRecorder) {
	raw, clientIP := rawRequest(target, ua, remote)
	raw.Method = method
	w := httptest.NewRecorder()
	return prepare(raw, clientIP, w, &caddyhttp.Server{}), w
}

// prepare does to raw what Caddy's server does before the first handler:
// a fresh replacer and vars map, with clientIP as client_ip.
func prepare(raw *http.Request, clientIP string, w http.ResponseWriter, srv *caddyhttp.Server) *http.Request {
	r := caddyhttp.PrepareRequest(raw, caddy.NewReplacer(), w, srv)
	caddyhttp.SetVar(r.Context(), caddyhttp.ClientIPVarKey, clientIP)
	return r
}

var okNext = caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
	w.WriteHeader(http.StatusOK)
	return nil
})

// nopNext is a next handler that writes nothing, for measuring the handler
// alone.
var nopNext = caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })

func TestServeHTTPDecisions(t *testing.T) {
	// Burst 1: every gap judged on its own; TestCrawlBurst covers the
	// default.
	h, done := newTestHandler(t, &Handler{CrawlBurst: 1})
	defer done()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }

	cases := []struct {
		ua, target string
		status     int
		body       string
	}{
		{benchBrowserUA, "/private/", 200, ""},
		{"GPTBot/1.2", "/", 403, "Rule: Disallow: / (line 6)"},
		{"GPTBot/1.2", "/robots.txt", 200, ""},
		{"GPTBot/1.2", "/robots.txt?x=1", 200, ""},
		{benchBotUA, "/private/a", 403, "Group: User-agent: * (line 1)"},
		{benchBotUA, "/", 200, ""},
		{benchBotUA, "/about", 503, "Crawl-delay: 2"},
	}
	for _, c := range cases {
		req, w := prepared("GET", c.target, c.ua, "203.0.113.9:4000")
		err := h.ServeHTTP(w, req, okNext)
		if err != nil {
			t.Fatalf("%s %s: %v", c.ua, c.target, err)
		}
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.body) {
			t.Errorf("%s %s: %d %q, want %d containing %q", c.ua, c.target, w.Code, w.Body.String(), c.status, c.body)
		}
		// GCRA tolerance is min(T/2, 1s): with Crawl-delay 2 the crawler
		// may come back after exactly 1 s.
		if c.status == 503 && w.Header().Get("Retry-After") != "1" {
			t.Errorf("Retry-After = %q, want 1", w.Header().Get("Retry-After"))
		}
	}
	// Two seconds later the crawler may come again.
	now = now.Add(2 * time.Second)
	req, w := prepared("GET", "/about", benchBotUA, "203.0.113.9:4000")
	if err := h.ServeHTTP(w, req, okNext); err != nil || w.Code != 200 {
		t.Errorf("after the crawl delay: %d %v", w.Code, err)
	}
}

func TestServeHTTPErrorRoutesAndLogMode(t *testing.T) {
	h, done := newTestHandler(t, &Handler{UseErrorRoutes: true})
	defer done()
	req, w := prepared("GET", "/", "GPTBot/1.2", "203.0.113.10:4000")
	err := h.ServeHTTP(w, req, okNext)
	var he caddyhttp.HandlerError
	if !errors.As(err, &he) || he.StatusCode != 403 {
		t.Fatalf("want a 403 HandlerError, got %v", err)
	}
	repl := req.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if got := repl.ReplaceAll("{http.robots.decision} {http.robots.token} {http.robots.rule}", ""); got != "block GPTBot Disallow: / (line 6)" {
		t.Errorf("placeholders: %q", got)
	}

	lh, ldone := newTestHandler(t, &Handler{Mode: "log"})
	defer ldone()
	for i := 0; i < 3; i++ {
		req, w := prepared("GET", "/private/", benchBotUA, "203.0.113.11:4000")
		if err := lh.ServeHTTP(w, req, okNext); err != nil || w.Code != 200 {
			t.Fatalf("mode log refused: %d %v", w.Code, err)
		}
	}
}

// TestPublishedValues: every judged bot request publishes its outcome as
// {http.robots.*} placeholders and as the robots_* vars, a catalogue
// crawler's token included (the vars come pre-boxed from the Identifier's
// cache), and in log mode the decision is published though the request
// passes.
func TestPublishedValues(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off"})
	defer done()
	lh, ldone := newTestHandler(t, &Handler{Mode: "log"})
	defer ldone()
	cases := []struct {
		h                     *Handler
		ua, target            string
		status                int
		agent, decision, tok  string
		placeholders, wantOut string
	}{
		{h, "GPTBot/1.2", "/", 403, "GPTBot", "block", "GPTBot",
			"{http.robots.agent}|{http.robots.category}|{http.robots.reason}|{http.robots.group}",
			"GPTBot|ai-training|rule|User-agent: GPTBot (line 5)"},
		{h, benchBotUA, "/about.html", 200, "ExampleCrawler", "allow", "*",
			"{http.robots.decision}|{http.robots.reason}|{http.robots.token}|{http.robots.rule}",
			"allow||*|"},
		{lh, "GPTBot/1.2", "/private/", 200, "GPTBot", "block", "GPTBot",
			"{http.robots.decision}|{http.robots.verdict}|{http.robots.rule}",
			"block|unverified|Disallow: / (line 6)"},
	}
	for _, c := range cases {
		req, w := prepared("GET", c.target, c.ua, "203.0.113.12:4000")
		if err := c.h.ServeHTTP(w, req, okNext); err != nil || w.Code != c.status {
			t.Fatalf("%s %s: %d %v, want %d", c.ua, c.target, w.Code, err, c.status)
		}
		vars := req.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
		for k, want := range map[string]string{"robots_agent": c.agent, "robots_decision": c.decision, "robots_token": c.tok} {
			if got, ok := vars[k].(string); !ok || got != want {
				t.Errorf("%s %s: var %s = %#v, want %q", c.ua, c.target, k, vars[k], want)
			}
		}
		repl := req.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
		if got := repl.ReplaceAll(c.placeholders, ""); got != c.wantOut {
			t.Errorf("%s %s: %s = %q, want %q", c.ua, c.target, c.placeholders, got, c.wantOut)
		}
	}
}

// TestBrowserAllocatesNothing: a person's request costs the handler no
// allocation: over plain HTTP, over HTTPS with the headers of its browser
// checked (Chrome, and Firefox, which sends no Sec-CH-UA), and with a trap
// configured. Browsers are most of a site's traffic; robots.txt is not
// for them, and they must not pay for it.
func TestBrowserAllocatesNothing(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off"})
	defer done()
	h.logger, h.debug = zap.NewNop(), false

	req, w := prepared("GET", "/private/index.html", benchBrowserUA, "203.0.113.1:5000")
	if n := testing.AllocsPerRun(200, func() { _ = h.ServeHTTP(w, req, nopNext) }); n != 0 {
		t.Errorf("browser request: %v allocations, want 0", n)
	}

	req, w = prepared("GET", "/private/index.html", benchBrowserUA, "203.0.113.1:5000")
	req.TLS = &tls.ConnectionState{}
	for _, hd := range chromeHeaders {
		k, v, _ := strings.Cut(hd, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	if n := testing.AllocsPerRun(200, func() { _ = h.ServeHTTP(w, req, nopNext) }); n != 0 {
		t.Errorf("browser over HTTPS: %v allocations, want 0", n)
	}
	req.Header.Del("Sec-Ch-Ua")
	req.Header.Set("User-Agent", firefoxUA)
	if n := testing.AllocsPerRun(200, func() { _ = h.ServeHTTP(w, req, nopNext) }); n != 0 {
		t.Errorf("Firefox over HTTPS: %v allocations, want 0", n)
	}

	ht, doneTrap := newTestHandler(t, &Handler{CrawlDelay: "off", Trap: "/no-robots/"})
	defer doneTrap()
	ht.logger, ht.debug = zap.NewNop(), false
	req, w = prepared("GET", "/private/index.html", benchBrowserUA, "203.0.113.1:5000")
	if n := testing.AllocsPerRun(200, func() { _ = ht.ServeHTTP(w, req, nopNext) }); n != 0 {
		t.Errorf("browser with a trap configured: %v allocations, want 0", n)
	}
}

// TestGraceVersions checks the grace rule on versions directly: refused only
// if every version the crawler may hold refuses.
func TestGraceVersions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /a/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, done := newTestHandler(t, &Handler{Source: "file", File: file, CrawlDelay: "off"})
	defer done()
	// The first version was current for an hour (a shorter-lived one
	// earns grace only for crawlers seen fetching it).
	now := time.Now().Add(time.Hour)
	h.now = func() time.Time { return now }
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /b/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := reloadAll(context.Background(), []*Handler{h}).Reloaded; len(r) != 1 || !r[0].Changed {
		t.Fatalf("reload: %+v", r)
	}

	status := func(target string) int {
		req, w := prepared("GET", target, benchBotUA, "198.51.100.7:1")
		if err := h.ServeHTTP(w, req, okNext); err != nil {
			t.Fatal(err)
		}
		return w.Code
	}
	if s := status("/a/x"); s != 200 {
		t.Errorf("/a/x within grace (old version allows): %d", s)
	}
	if s := status("/b/x"); s != 200 {
		t.Errorf("/b/x within grace (old version allows): %d", s)
	}
	if s := status("/c/x"); s != 200 {
		t.Errorf("/c/x: %d", s)
	}
	now = now.Add(25 * time.Hour)
	if s := status("/b/x"); s != 403 {
		t.Errorf("/b/x after grace: %d, want 403", s)
	}
	if s := status("/a/x"); s != 200 {
		t.Errorf("/a/x after grace: %d, want 200", s)
	}
}

// BenchmarkServeHTTPBrowser is the cost the handler adds to a person's
// request (cached User-Agent): it must stay well under a microsecond and
// allocate nothing.
func BenchmarkServeHTTPBrowser(b *testing.B) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServe(b, h, "/private/index.html", benchBrowserUA, "203.0.113.1:5000", false)
}

// BenchmarkServeHTTPPhoneBrowser is a person on a phone whose User-Agent
// carries a device model ("Pixel 7"): a word a site's robots.txt might name,
// so the site's groups are looked up (namedBySite) before it passes.
func BenchmarkServeHTTPPhoneBrowser(b *testing.B) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServe(b, h, "/private/index.html", benchPhoneUA, "203.0.113.1:5000", false)
}

// benchPhoneUA is Chrome on a Pixel 7, whose model is a candidate word.
const benchPhoneUA = "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"

// BenchmarkServeHTTPBotAllowed is a crawler's allowed request: identify,
// group selection and match, the ban check, placeholders, vars and counters.
// Each request is prepared anew, as in a server; the baseline below measures
// what that costs by itself.
func BenchmarkServeHTTPBotAllowed(b *testing.B) {
	h, done := newTestHandler(b, &Handler{CrawlDelay: "off"})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServe(b, h, "/about.html", benchBotUA, "203.0.113.2:5000", true)
}

// BenchmarkServeHTTPBotCaseInsensitive is BenchmarkServeHTTPBotAllowed
// with case_insensitive_paths and a target with capitals: the cost of
// folding the target's forms.
func BenchmarkServeHTTPBotCaseInsensitive(b *testing.B) {
	h, done := newTestHandler(b, &Handler{CrawlDelay: "off", CaseInsensitivePaths: true})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServe(b, h, "/About/Company.html", benchBotUA, "203.0.113.2:5000", true)
}

// BenchmarkServeHTTPBotBaseline is BenchmarkServeHTTPBotAllowed's loop
// through a handler that only calls next: preparing the request.
// BotAllowed minus this is the handler's own cost.
func BenchmarkServeHTTPBotBaseline(b *testing.B) {
	benchServe(b, passThrough{}, "/about.html", benchBotUA, "203.0.113.2:5000", true)
}

type passThrough struct{}

func (passThrough) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	return next.ServeHTTP(w, r)
}

// benchServe times ServeHTTP on one prepared request. With fresh, every
// iteration prepares the request anew as Caddy's server does (a replacer,
// a vars map with client_ip), so the placeholder provider and the vars the
// handler adds do not pile up on one request, and the map inserts cost what
// they cost in a server.
func benchServe(b *testing.B, h caddyhttp.MiddlewareHandler, target, ua, remote string, fresh bool) {
	req, w := prepared("GET", target, ua, remote)
	raw, clientIP := rawRequest(target, ua, remote)
	srv := &caddyhttp.Server{}
	_ = h.ServeHTTP(w, req, nopNext)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := req
		if fresh {
			r = prepare(raw, clientIP, w, srv)
		}
		_ = h.ServeHTTP(w, r, nopNext)
	}
}

// The Cold benchmarks time ServeHTTP with the CPU caches emptied of the
// handler's long-lived data before each call: a 2 MiB buffer is written
// between calls, before the request is prepared. Between two requests
// on one core a busy Caddy runs ~100 µs of other code (net/http,
// file_server, the GC), so every structure the handler reads is a cache
// miss there; the warm benchmarks above do not show that cost, and it is
// most of what the handler costs under wrk. Each call is timed on its own
// and reported as handler-ns/op (the clock reads included, so subtract
// BotBaselineCold's figure); ns/op includes the cache clearing and the
// request's preparation and means nothing here.
func BenchmarkServeHTTPBrowserCold(b *testing.B) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServeCold(b, h, "/private/index.html", benchBrowserUA, "203.0.113.1:5000")
}

// BenchmarkServeHTTPBotAllowedCold is BenchmarkServeHTTPBotAllowed with
// cold caches.
func BenchmarkServeHTTPBotAllowedCold(b *testing.B) {
	h, done := newTestHandler(b, &Handler{CrawlDelay: "off"})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServeCold(b, h, "/about.html", benchBotUA, "203.0.113.2:5000")
}

// BenchmarkServeHTTPBotBaselineCold is the cold loop through a handler that
// only calls next: the floor under the two above.
func BenchmarkServeHTTPBotBaselineCold(b *testing.B) {
	benchServeCold(b, passThrough{}, "/about.html", benchBotUA, "203.0.113.2:5000")
}

// rawRequest is a GET as the server reads it off the wire, before Caddy
// prepares it, and the client address the benchmarks record as client_ip.
func rawRequest(target, ua, remote string) (*http.Request, string) {
	raw := httptest.NewRequest("GET", target, nil)
	raw.Header.Set("User-Agent", ua)
	raw.RemoteAddr = remote
	return raw, strings.Split(remote, ":")[0]
}

// coldBuffer is written between the calls of the Cold benchmarks: four
// times a core's L2 cache and 512 pages, so that the caches and most of
// the TLB hold it rather than the handler's data.
var coldBuffer = make([]byte, 2<<20)

// freshRequest is raw prepared as Caddy's server prepares a request just
// read: as in a server, its own structures (its header map and URL as just
// parsed, context, vars, replacer) are new.
func freshRequest(raw *http.Request, clientIP string, w http.ResponseWriter, srv *caddyhttp.Server) *http.Request {
	raw.Header = raw.Header.Clone()
	u := *raw.URL
	raw.URL = &u
	return prepare(raw, clientIP, w, srv)
}

func benchServeCold(b *testing.B, h caddyhttp.MiddlewareHandler, target, ua, remote string) {
	raw, clientIP := rawRequest(target, ua, remote)
	srv := &caddyhttp.Server{}
	w := httptest.NewRecorder()
	_ = h.ServeHTTP(w, prepare(raw, clientIP, w, srv), nopNext)
	b.ReportAllocs()
	b.ResetTimer()
	var spent time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < len(coldBuffer); j += 64 {
			coldBuffer[j]++
		}
		// What the handler keeps between requests is cold.
		r := freshRequest(raw, clientIP, w, srv)
		start := time.Now()
		_ = h.ServeHTTP(w, r, nopNext)
		spent += time.Since(start)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "handler-ns/op")
}

// TestCrawlBurst: by default a crawler may send four requests back to back;
// the fifth waits for the Crawl-delay, and the refusal carries no strike.
func TestCrawlBurst(t *testing.T) {
	h, done := newTestHandler(t, &Handler{})
	defer done()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	for i := range 5 {
		req, w := prepared("GET", fmt.Sprintf("/page%d", i), benchBotUA, "203.0.113.9:4000")
		if err := h.ServeHTTP(w, req, okNext); err != nil {
			t.Fatal(err)
		}
		want := 200
		if i == 4 {
			want = 503
		}
		if w.Code != want {
			t.Errorf("request %d: %d, want %d", i+1, w.Code, want)
		}
	}
}
