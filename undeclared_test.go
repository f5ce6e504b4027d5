package caddyrobots

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
)

const (
	firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	safariUA  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"
	lynxUA    = "Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"
	oldUA     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36"
)

// chromeHeaders and firefoxHeaders are what the browsers send on a
// navigation over HTTPS.
var (
	chromeHeaders  = []string{"Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document", "Sec-Fetch-User: ?1", `Sec-CH-UA: "Chromium";v="131", "Not_A Brand";v="24"`}
	firefoxHeaders = []string{"Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document", "Sec-Fetch-User: ?1"}
)

// serveAs sends one request through h: over TLS when https is set, with the
// Host header host (example.com when empty), and returns the status and
// body.
func serveAs(t testing.TB, h *Handler, https bool, host, target, ua, remote string, headers ...string) (int, string) {
	t.Helper()
	req, w := prepared("GET", target, ua, remote)
	if https {
		req.TLS = &tls.ConnectionState{}
	}
	if host != "" {
		req.Host = host
	}
	for _, hd := range headers {
		k, v, _ := strings.Cut(hd, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	if err := h.ServeHTTP(w, req, okNext); err != nil {
		t.Fatalf("%s %s: %v", ua, target, err)
	}
	return w.Code, w.Body.String()
}

// undeclaredCount sums caddy_robots_undeclared_total over its sites for
// one signal, action and mode.
func undeclaredCount(signal, action, mode string) float64 {
	mfs, err := gatherOnly(metrics.undeclared)
	if err != nil {
		panic(err)
	}
	var sum float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["signal"] == signal && l["action"] == action && l["mode"] == mode {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// gatherOnly gathers the collector c alone.
func gatherOnly(c prometheus.Collector) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return reg.Gather()
}

func TestUndeclaredHeaders(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off"})
	defer done()
	h.logger = zap.NewNop()
	cases := []struct {
		name    string
		https   bool
		host    string
		ua      string
		target  string
		headers []string
		status  int
		body    string
	}{
		{"chrome over https with its headers", true, "", benchBrowserUA, "/private/", chromeHeaders, 200, ""},
		{"chrome claim over https without any", true, "", benchBrowserUA, "/private/", nil, 403, "Your User-Agent claims Chrome, which always sends Sec-Fetch-Site"},
		{"the refusal names the rule of \"*\"", true, "", benchBrowserUA, "/private/x", nil, 403, "Disallow: /private/"},
		{"an allowed path is served to an undeclared crawler", true, "", benchBrowserUA, "/", nil, 200, ""},
		{"one Fetch Metadata header is enough", true, "", benchBrowserUA, "/private/", []string{"Sec-Fetch-Dest: image", "Sec-CH-UA: x"}, 200, ""},
		{"no Sec-CH-UA: log by default", true, "", benchBrowserUA, "/private/", chromeHeaders[:3], 200, ""},
		{"plain HTTP is never judged by headers", false, "", benchBrowserUA, "/private/", nil, 200, ""},
		{"plain HTTP to localhost is a secure context", false, "localhost:8080", benchBrowserUA, "/private/", nil, 403, "Sec-Fetch-Site"},
		{"plain HTTP to 127.0.0.1", false, "127.0.0.1:8080", benchBrowserUA, "/private/", nil, 403, "undeclared crawler"},
		{"plain HTTP to a .localhost name is not", false, "a.localhost:8080", benchBrowserUA, "/private/", nil, 200, ""},
		{"firefox with its headers", true, "", firefoxUA, "/private/", firefoxHeaders, 200, ""},
		{"firefox claim without", true, "", firefoxUA, "/private/", nil, 403, "Your User-Agent claims Firefox"},
		{"safari claim without: log by default", true, "", safariUA, "/private/", nil, 200, ""},
		{"chrome 70 is older than the cut-off", true, "", oldUA, "/private/", nil, 200, ""},
		{"lynx sends none and is not judged by headers", true, "", lynxUA, "/private/", nil, 200, ""},
	}
	for _, c := range cases {
		status, body := serveAs(t, h, c.https, c.host, c.target, c.ua, "203.0.113.50:4000", c.headers...)
		if status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s: %d %q, want %d containing %q", c.name, status, body, c.status, c.body)
		}
	}
}

func TestUndeclaredCountsAndCategory(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off"})
	defer done()
	h.logger = zap.NewNop()
	blocked := undeclaredCount("fetch_metadata", "block", "enforce")
	logged := undeclaredCount("client_hints", "block", "log")
	cat := decisionCount(t, "block", "rule", "undeclared", "enforce")

	serveAs(t, h, true, "", "/private/", benchBrowserUA, "203.0.113.51:1")
	if d := undeclaredCount("fetch_metadata", "block", "enforce") - blocked; d != 1 {
		t.Errorf("fetch_metadata block enforce counted %v, want 1", d)
	}
	if d := decisionCount(t, "block", "rule", "undeclared", "enforce") - cat; d != 1 {
		t.Errorf("decisions of category undeclared: %v, want 1", d)
	}
	// Sec-CH-UA missing, Fetch Metadata present: a person whose browser
	// omits the hint (a worker, a download, a User-Agent switcher) cannot
	// be told from a script by headers, so it is not judged at all.
	if s, _ := serveAs(t, h, true, "", "/private/", benchBrowserUA, "203.0.113.51:1", chromeHeaders[:3]...); s != 200 {
		t.Errorf("Fetch Metadata without Sec-CH-UA refused: %d", s)
	}
	if d := undeclaredCount("client_hints", "block", "log") - logged; d != 0 {
		t.Errorf("client_hints judged a request with Fetch Metadata: counted %v, want 0", d)
	}
}

func TestUndeclaredModes(t *testing.T) {
	for _, c := range []struct {
		cfg    Handler
		ua     string
		hdrs   []string
		status int
	}{
		{Handler{Undeclared: "off"}, benchBrowserUA, nil, 200},
		{Handler{Undeclared: "log"}, benchBrowserUA, nil, 200},
		{Handler{Undeclared: "enforce"}, benchBrowserUA, chromeHeaders[:3], 200}, // Fetch Metadata without Sec-CH-UA: the person wins
		{Handler{Undeclared: "enforce"}, benchBrowserUA, nil, 403},
		{Handler{Undeclared: "enforce"}, firefoxUA, firefoxHeaders, 200},
		{Handler{UndeclaredSignals: map[string]string{"fetch_metadata": "log"}}, benchBrowserUA, nil, 200},
		{Handler{UndeclaredSignals: map[string]string{"fetch_metadata_safari": "enforce"}}, safariUA, nil, 403},
		{Handler{Mode: "log"}, benchBrowserUA, nil, 200},
	} {
		cfg := c.cfg
		cfg.CrawlDelay = "off"
		h, done := newTestHandler(t, &cfg)
		h.logger = zap.NewNop()
		if s, _ := serveAs(t, h, true, "", "/private/", c.ua, "203.0.113.52:1", c.hdrs...); s != c.status {
			t.Errorf("undeclared %q %v, %s: %d, want %d", c.cfg.Undeclared, c.cfg.UndeclaredSignals, c.ua, s, c.status)
		}
		done()
	}
}

// TestUndeclaredDeclaredUnchanged: crawlers that name themselves are judged
// as before, whatever headers they send.
func TestUndeclaredDeclaredUnchanged(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off", Trap: "/trap/"})
	defer done()
	h.logger = zap.NewNop()
	if s, body := serveAs(t, h, true, "", "/private/", benchBotUA, "203.0.113.53:1", chromeHeaders...); s != 403 || strings.Contains(body, "undeclared") {
		t.Errorf("declared crawler: %d %q", s, body)
	}
	if s, _ := serveAs(t, h, true, "", "/about", "GPTBot/1.2", "203.0.113.53:1"); s != 403 {
		t.Errorf("GPTBot: %d", s)
	}
	// Its trap request is refused by the rule the trap added, as a strike,
	// not as a trap.
	before := undeclaredCount("trap", "trap", "enforce")
	if s, body := serveAs(t, h, false, "", "/trap/", benchBotUA, "203.0.113.53:1"); s != 403 || !strings.Contains(body, "Disallow: /trap/") {
		t.Errorf("declared crawler on the trap: %d %q", s, body)
	}
	if d := undeclaredCount("trap", "trap", "enforce") - before; d != 0 {
		t.Errorf("a declared crawler's trap request counted as a trap: %v", d)
	}
}

// trapTestClock starts a test's fake clock on a fixed date well before
// the real time: the handler's clock alone decides whether a trap mark
// holds (a check against the real clock would take every mark dated by it
// for expired).
func trapTestClock() time.Time { return time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC) }

// TestTrapMarksFollowHandlers: the trap marks are kept while some handler
// with a trap holds them, as over a config reload (the new handler is
// provisioned before the old one is cleaned up), and go with the last
// such handler, so a later configuration (or test) starts with none.
func TestTrapMarksFollowHandlers(t *testing.T) {
	cfg := func() *Handler { return &Handler{CrawlDelay: "off", Trap: "/trap/"} }
	now := trapTestClock()
	clock := func() time.Time { return now }
	const addr = "192.0.2.40:1"

	old, doneOld := newTestHandler(t, cfg())
	old.logger, old.now = zap.NewNop(), clock
	if s, _ := serveAs(t, old, true, "", "/trap/", benchBrowserUA, addr, chromeHeaders...); s != 403 {
		t.Fatalf("trap: %d, want 403", s)
	}
	if s, _ := serveAs(t, old, true, "", "/private/a", benchBrowserUA, addr, chromeHeaders...); s != 403 {
		t.Fatalf("marked client before the reload: %d, want 403", s)
	}

	reloaded, doneReloaded := newTestHandler(t, cfg())
	reloaded.logger, reloaded.now = zap.NewNop(), clock
	doneOld()
	if s, _ := serveAs(t, reloaded, true, "", "/private/a", benchBrowserUA, addr, chromeHeaders...); s != 403 {
		t.Errorf("marked client after a reload: %d, want 403 (the mark is kept)", s)
	}
	doneReloaded()

	fresh, doneFresh := newTestHandler(t, cfg())
	defer doneFresh()
	fresh.logger, fresh.now = zap.NewNop(), clock
	if s, body := serveAs(t, fresh, true, "", "/private/a", benchBrowserUA, addr, chromeHeaders...); s != 200 {
		t.Errorf("a configuration provisioned after the last handler with a trap went: %d %q, want 200 (no marks left)", s, body)
	}
}

func TestTrap(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off", Trap: "/trap/", Source: "inline",
		Inline: "User-agent: GPTBot\nUser-agent: CCBot\nDisallow: /\n\nUser-agent: Googlebot\nAllow: /\n\nUser-agent: *\nDisallow: /private/\n"})
	defer done()
	h.logger = zap.NewNop()
	now := trapTestClock()
	h.now = func() time.Time { return now }

	// The served robots.txt disallows the trap in every group.
	_, txt := serveAs(t, h, false, "", "/robots.txt", benchBrowserUA, "198.51.100.1:1")
	if n := strings.Count(txt, "Disallow: /trap/"); n != 3 {
		t.Errorf("robots.txt has %d trap lines, want 3 (one per group):\n%s", n, txt)
	}

	const addr = "198.51.100.2:1"
	// A browser's full header set, over HTTPS, that takes the trap.
	if s, body := serveAs(t, h, true, "", "/trap/", benchBrowserUA, addr, chromeHeaders...); s != 403 || !strings.Contains(body, "judged by the \"*\" group") {
		t.Fatalf("trap: %d %q", s, body)
	}
	// From its next request it is a crawler judged by "*".
	if s, body := serveAs(t, h, true, "", "/private/a", benchBrowserUA, addr, chromeHeaders...); s != 403 || !strings.Contains(body, "trap") {
		t.Errorf("after the trap, /private/a: %d %q", s, body)
	}
	if s, _ := serveAs(t, h, true, "", "/public", benchBrowserUA, addr, chromeHeaders...); s != 200 {
		t.Errorf("after the trap, an allowed page: %d", s)
	}
	if s, _ := serveAs(t, h, true, "", "/robots.txt", benchBrowserUA, addr, chromeHeaders...); s != 200 {
		t.Errorf("after the trap, /robots.txt: %d", s)
	}
	// Another browser on the same address, and the same browser elsewhere,
	// are not affected.
	if s, _ := serveAs(t, h, true, "", "/private/a", firefoxUA, addr, firefoxHeaders...); s != 200 {
		t.Errorf("another browser on the address: %d", s)
	}
	if s, _ := serveAs(t, h, true, "", "/private/a", benchBrowserUA, "198.51.100.3:1", chromeHeaders...); s != 200 {
		t.Errorf("the same User-Agent from another address: %d", s)
	}
	// The mark ends after the hold.
	now = now.Add(DefaultTrapHold + time.Minute)
	if s, _ := serveAs(t, h, true, "", "/private/a", benchBrowserUA, addr, chromeHeaders...); s != 200 {
		t.Errorf("after the hold: %d", s)
	}
}

// TestTrapTextBrowser: a person in Lynx who follows the trap once by hand
// gets its 403 and nothing more at a person's pace; a crawler's pace or a
// second trap request confirms a crawler.
func TestTrapTextBrowser(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off", Trap: "/trap/"})
	defer done()
	h.logger = zap.NewNop()
	now := trapTestClock()
	h.now = func() time.Time { return now }

	const person = "192.0.2.10:1"
	if s, body := serveAs(t, h, false, "", "/trap/", lynxUA, person); s != 403 || !strings.Contains(body, "by hand in a text browser") {
		t.Fatalf("trap: %d %q", s, body)
	}
	for i := range 5 {
		now = now.Add(1500 * time.Millisecond)
		if s, body := serveAs(t, h, false, "", "/private/p"+string(rune('a'+i)), lynxUA, person); s != 200 {
			t.Errorf("person at a person's pace, request %d: %d %q", i, s, body)
		}
	}

	const crawler = "192.0.2.11:1"
	serveAs(t, h, false, "", "/trap/", lynxUA, crawler)
	now = now.Add(30 * time.Millisecond)
	if s, _ := serveAs(t, h, false, "", "/private/a", lynxUA, crawler); s != 403 {
		t.Errorf("lynx at a crawler's pace after the trap: %d, want 403", s)
	}
	now = now.Add(10 * time.Second)
	if s, _ := serveAs(t, h, false, "", "/private/b", lynxUA, crawler); s != 403 {
		t.Errorf("a confirmed crawler that slowed down: %d, want 403", s)
	}

	const twice = "192.0.2.12:1"
	serveAs(t, h, false, "", "/trap/", lynxUA, twice)
	now = now.Add(5 * time.Second)
	serveAs(t, h, false, "", "/trap/other", lynxUA, twice)
	now = now.Add(5 * time.Second)
	if s, _ := serveAs(t, h, false, "", "/private/a", lynxUA, twice); s != 403 {
		t.Errorf("a text browser that took the trap twice: %d, want 403", s)
	}
}

func TestTrapLogMode(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off", Trap: "/trap/", Undeclared: "log"})
	defer done()
	h.logger = zap.NewNop()
	before := undeclaredCount("trap", "block", "log")
	if s, _ := serveAs(t, h, false, "", "/trap/", benchBrowserUA, "192.0.2.20:1"); s != 200 {
		t.Errorf("trap in log mode: %d, want it served", s)
	}
	if s, _ := serveAs(t, h, false, "", "/private/", benchBrowserUA, "192.0.2.20:1"); s != 200 {
		t.Errorf("after the trap in log mode: %d", s)
	}
	if d := undeclaredCount("trap", "block", "log") - before; d != 1 {
		t.Errorf("log mode counted %v would-be blocks, want 1", d)
	}
}

// TestTrapSiteWithoutDisallow: a trap the site's robots.txt does not
// disallow marks nobody.
func TestTrapSiteWithoutDisallow(t *testing.T) {
	// Inline and file rules get the trap's line added; a site's own
	// robots.txt may lack it. Simulate one: rules provisioned without the
	// trap, the trap configured afterwards.
	h, done := newTestHandler(t, &Handler{CrawlDelay: "off", Source: "inline", Inline: "User-agent: *\nDisallow: /private/\n"})
	defer done()
	h.logger = zap.NewNop()
	h.Trap = "/trap/"
	if err := h.provisionUndeclared(); err != nil {
		t.Fatal(err)
	}
	if h.undeclared == nil || h.undeclared.trap == nil {
		t.Fatal("no trap configured")
	}
	if s, _ := serveAs(t, h, false, "", "/trap/", benchBrowserUA, "192.0.2.30:1"); s != 200 {
		t.Errorf("a trap robots.txt allows: %d, want it served", s)
	}
	if s, _ := serveAs(t, h, false, "", "/private/", benchBrowserUA, "192.0.2.30:1"); s != 200 {
		t.Errorf("after a trap robots.txt allows: %d", s)
	}
}

func TestWithTrapRules(t *testing.T) {
	for in, want := range map[string]string{
		"User-agent: *\nDisallow: /a/\n":           "User-agent: *\nDisallow: /t/\nDisallow: /a/\n",
		"User-agent: A\nUser-agent: B\nAllow: /\n": "User-agent: A\nUser-agent: B\nDisallow: /t/\nAllow: /\n\nUser-agent: *\nDisallow: /t/\n",
		"":                                       "\nUser-agent: *\nDisallow: /t/\n",
		"Sitemap: /s.xml\nuser-agent: * # all\n": "Sitemap: /s.xml\nuser-agent: * # all\nDisallow: /t/\n",
		"User-agent: *\n\nUser-agent: X\nDisallow: /x\n#end": "User-agent: *\nDisallow: /t/\n\nUser-agent: X\nDisallow: /t/\nDisallow: /x\n#end\n",
	} {
		if got := withTrapRules(in, "/t/"); got != want {
			t.Errorf("withTrapRules(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUndeclaredCaddyfile(t *testing.T) {
	ok := map[string]func(h *Handler) bool{
		"robots {\n undeclared off\n}":                          func(h *Handler) bool { return h.Undeclared == "off" },
		"robots {\n undeclared {\n client_hints enforce\n }\n}": func(h *Handler) bool { return h.UndeclaredSignals["client_hints"] == "enforce" },
		"robots {\n undeclared log {\n trap enforce\n }\n}": func(h *Handler) bool {
			return h.Undeclared == "log" && h.UndeclaredSignals["trap"] == "enforce"
		},
		"robots {\n trap /no-robots/\n}":    func(h *Handler) bool { return h.Trap == "/no-robots/" && h.TrapHold == 0 },
		"robots {\n trap /no-robots/ 2h\n}": func(h *Handler) bool { return time.Duration(h.TrapHold) == 2*time.Hour },
		"robots {\n trap /hidden-link\n}":   func(h *Handler) bool { return h.Trap == "/hidden-link" },
	}
	for src, check := range ok {
		h := &Handler{}
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(src)); err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if !check(h) {
			t.Errorf("%q: parsed as %+v", src, h)
		}
	}
	for src, want := range map[string]string{
		"robots {\n undeclared\n}":                         "needs a mode",
		"robots {\n undeclared sometimes\n}":               "unknown value",
		"robots {\n undeclared {\n headers enforce\n }\n}": "unknown signal",
		"robots {\n undeclared {\n trap maybe\n }\n}":      "unknown value",
		"robots {\n trap\n}":                               "needs a path",
		"robots {\n trap no-slash\n}":                      "not a path",
		"robots {\n trap /robots.txt\n}":                   "always served",
		"robots {\n trap /a*b\n}":                          "plain path",
		"robots {\n trap /t/ 10s\n}":                       "outside",
		"robots {\n trap /t/ 1h extra\n}":                  "needs a path",
	} {
		err := (&Handler{}).UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", src, err, want)
		}
	}
}

func TestUndeclaredValidate(t *testing.T) {
	for _, c := range []struct {
		h    Handler
		want string
	}{
		{Handler{Undeclared: "maybe"}, "undeclared: unknown value"},
		{Handler{UndeclaredSignals: map[string]string{"headers": "log"}}, "unknown signal"},
		{Handler{UndeclaredSignals: map[string]string{"trap": "on"}}, "unknown value"},
		{Handler{Trap: "x"}, "not a path"},
		{Handler{Trap: "/t/", TrapHold: 1}, "outside"},
	} {
		h := c.h
		h.applyDefaults()
		err := h.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.h, err, c.want)
		}
	}
}

// BenchmarkServeHTTPBrowserHTTPS is BenchmarkServeHTTPBrowser over TLS
// with Chrome's headers: the headers are checked.
func BenchmarkServeHTTPBrowserHTTPS(b *testing.B) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	req, w := prepared("GET", "/private/index.html", benchBrowserUA, "203.0.113.1:5000")
	req.TLS = &tls.ConnectionState{}
	for _, hd := range chromeHeaders {
		k, v, _ := strings.Cut(hd, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	_ = h.ServeHTTP(w, req, nopNext)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = h.ServeHTTP(w, req, nopNext)
	}
}

// BenchmarkServeHTTPBrowserTrap is a person's request with a trap
// configured and nobody marked, each request prepared anew (the trap's
// placeholders are added to each request's replacer): subtract
// BenchmarkServeHTTPBrowserFresh.
func BenchmarkServeHTTPBrowserTrap(b *testing.B) {
	h, done := newTestHandler(b, &Handler{Trap: "/no-robots/"})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServe(b, h, "/private/index.html", benchBrowserUA, "203.0.113.1:5000", true)
}

// BenchmarkServeHTTPBrowserFresh is BenchmarkServeHTTPBrowser with each
// request prepared anew, the baseline of BenchmarkServeHTTPBrowserTrap.
func BenchmarkServeHTTPBrowserFresh(b *testing.B) {
	h, done := newTestHandler(b, &Handler{})
	defer done()
	h.logger, h.debug = zap.NewNop(), false
	benchServe(b, h, "/private/index.html", benchBrowserUA, "203.0.113.1:5000", true)
}
