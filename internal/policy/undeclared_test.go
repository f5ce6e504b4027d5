package policy_test

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestNewUndeclaredModes: the defaults, one mode for every signal, a
// signal's own mode over it, and the trap off without a trap path.
func TestNewUndeclaredModes(t *testing.T) {
	const (
		off     = policy.SignalOff
		log     = policy.SignalLog
		enforce = policy.SignalEnforce
	)
	for _, c := range []struct {
		all     string
		signals map[string]string
		trap    bool
		want    policy.UndeclaredModes
	}{
		{"", nil, true, policy.UndeclaredModes{enforce, log, log, enforce, log}},
		{"", nil, false, policy.UndeclaredModes{enforce, log, log, off, log}},
		{"log", nil, true, policy.UndeclaredModes{log, log, log, log, log}},
		{"off", nil, true, policy.UndeclaredModes{off, off, off, off, off}},
		{"enforce", map[string]string{"client_hints": "off"}, true, policy.UndeclaredModes{enforce, enforce, off, enforce, enforce}},
		{"", map[string]string{"fetch_metadata": "log", "trap": "log"}, true, policy.UndeclaredModes{log, log, log, log, log}},
		{"", map[string]string{"trap": "enforce"}, false, policy.UndeclaredModes{enforce, log, log, off, log}},
		{"enforce", map[string]string{"tls": "log"}, true, policy.UndeclaredModes{enforce, enforce, enforce, enforce, log}},
		{"off", map[string]string{"tls": "enforce"}, false, policy.UndeclaredModes{off, off, off, off, enforce}},
	} {
		m := policy.NewUndeclaredModes(c.all, c.signals, c.trap)
		if m != c.want {
			t.Errorf("NewUndeclaredModes(%q, %v, %v) = %s, want %s", c.all, c.signals, c.trap, m.String(), c.want.String())
		}
	}
	m := policy.NewUndeclaredModes("off", map[string]string{"trap": "log"}, true)
	if !m.On() || m.Headers() || m.Hints() {
		t.Errorf("only the trap on: On %v Headers %v Hints %v", m.On(), m.Headers(), m.Hints())
	}
	if m := policy.NewUndeclaredModes("off", map[string]string{"tls": "log"}, false); !m.On() || m.Headers() {
		t.Errorf("only tls on: On %v Headers %v", m.On(), m.Headers())
	}
	if m := policy.NewUndeclaredModes("off", nil, true); m.On() {
		t.Error("all off is on")
	}
	if got := policy.NewUndeclaredModes("", nil, true); got.String() != "fetch_metadata enforce, fetch_metadata_safari log, client_hints log, trap enforce, tls log" {
		t.Errorf("String() = %q", got.String())
	}
	for i, name := range policy.SignalNames() {
		if s, ok := policy.ParseSignal(name); !ok || int(s) != i || s.String() != name {
			t.Errorf("ParseSignal(%q) = %v, %v", name, s, ok)
		}
	}
	if _, ok := policy.ParseSignal("headers"); ok {
		t.Error("ParseSignal(headers)")
	}
	if !policy.SignalEnforce.Enforced(true) || policy.SignalEnforce.Enforced(false) || policy.SignalLog.Enforced(true) {
		t.Error("Enforced: the handler's mode log wins over a signal's enforce")
	}
}

// TestJudgeHeadersAgreesWithMissing: for every set of the browser's own
// headers and every kind of claim, the signals read from the header map
// give what BrowserClaim.Missing says, PassesHeaders never lets through a
// request the claim check would catch, and JudgeHeaders picks the signal
// with the strictest mode.
func TestJudgeHeadersAgreesWithMissing(t *testing.T) {
	uas := []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/85.0.4183.83 Safari/537.36",
		"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36",
		"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9",
	}
	names := []string{"Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-CH-UA"}
	modes := []policy.UndeclaredModes{
		policy.NewUndeclaredModes("", nil, false),
		policy.NewUndeclaredModes("enforce", nil, false),
		policy.NewUndeclaredModes("", map[string]string{"fetch_metadata": "log", "client_hints": "enforce"}, false),
		policy.NewUndeclaredModes("", map[string]string{"client_hints": "off"}, false),
		policy.NewUndeclaredModes("off", nil, false),
	}
	caught := 0
	for _, ua := range uas {
		c := agents.ParseBrowserClaim(ua)
		for set := range 1 << len(names) {
			h := http.Header{"User-Agent": {ua}}
			for i, n := range names {
				if set&(1<<i) != 0 {
					h.Set(n, "")
				}
			}
			present := policy.HeaderSignals(h)
			missing := c.Missing(h, true)
			if got := c.Signals &^ present; got != missing {
				t.Fatalf("%s with %v: Signals &^ HeaderSignals = %b, Missing = %b", ua, h, got, missing)
			}
			for _, m := range modes {
				s, mode := m.JudgeHeaders(&c, present, 0)
				ws, wmode := policy.SignalFetchMetadata, policy.SignalOff
				// Fetch Metadata alone passes: a person whose browser
				// omits Sec-CH-UA wins over a script that forges it.
				if missing != 0 && present&agents.FetchMetadata == 0 {
					ws, wmode = m.Strongest(&c, missing)
				}
				if s != ws || mode != wmode {
					t.Errorf("%s with %v, modes %s: JudgeHeaders = %s %s, want %s %s", ua, h, m.String(), s, mode, ws, wmode)
				}
				if m.PassesHeaders(present) && mode != policy.SignalOff {
					t.Errorf("%s with %v, modes %s: PassesHeaders lets %s through", ua, h, m.String(), s)
				}
				if mode != policy.SignalOff {
					caught++
				}
			}
		}
	}
	if caught == 0 {
		t.Fatal("nothing caught: the cases test nothing")
	}
	// What catches what, with the defaults.
	m := policy.NewUndeclaredModes("", nil, false)
	for _, c := range []struct {
		ua      string
		present agents.Signals
		want    policy.Signal
		mode    policy.SignalMode
	}{
		{uas[0], 0, policy.SignalFetchMetadata, policy.SignalEnforce},
		{uas[0], agents.FetchMetadata, policy.SignalFetchMetadata, policy.SignalOff}, // client hints never judge Fetch Metadata
		{uas[0], agents.FetchMetadata | agents.ClientHints, policy.SignalFetchMetadata, policy.SignalOff},
		{uas[2], agents.FetchMetadata, policy.SignalFetchMetadata, policy.SignalOff}, // Samsung Internet sends no client hints
		{uas[3], 0, policy.SignalFetchMetadata, policy.SignalEnforce},
		{uas[4], 0, policy.SignalFetchMetadataSafari, policy.SignalLog},
		{uas[5], 0, policy.SignalFetchMetadataSafari, policy.SignalLog}, // every iOS browser is WebKit
		{uas[6], 0, policy.SignalFetchMetadata, policy.SignalOff},
		{uas[7], 0, policy.SignalFetchMetadata, policy.SignalOff},
	} {
		claim := agents.ParseBrowserClaim(c.ua)
		if s, mode := m.JudgeHeaders(&claim, c.present, 0); s != c.want || mode != c.mode {
			t.Errorf("%s with %b: %s %s, want %s %s", c.ua, c.present, s, mode, c.want, c.mode)
		}
	}
}

// TestTrapRule: the trap marks only when the "*" group disallows it, by a
// rule, whatever the named groups say.
func TestTrapRule(t *testing.T) {
	for _, c := range []struct {
		robots, path string
		rule         string
	}{
		{"User-agent: *\nDisallow: /private/\nDisallow: /no-robots/\n", "/no-robots/", "Disallow: /no-robots/ (line 3)"},
		{"User-agent: *\nDisallow: /no-robots/\n", "/no-robots/deeper/x.html", "Disallow: /no-robots/ (line 2)"},
		{"User-agent: *\nDisallow: /no-robots/\nAllow: /no-robots/open\n", "/no-robots/open", ""},
		{"User-agent: GPTBot\nDisallow: /no-robots/\n", "/no-robots/", ""},
		{"User-agent: *\nDisallow: /private/\n", "/no-robots/", ""},
		{"User-agent: *\nDisallow: /%6Eo-robots/\n", "/no-robots/", "Disallow: /%6Eo-robots/ (line 2)"},
		{"", "/no-robots/", ""},
	} {
		rule, ok := policy.TrapRule(enforce.Parse([]byte(c.robots)), c.path)
		got := ""
		if ok {
			got = rule.String()
		}
		if got != c.rule || ok != (c.rule != "") {
			t.Errorf("TrapRule(%q, %q) = %q, %v; want %q", c.robots, c.path, got, ok, c.rule)
		}
	}
	if _, ok := policy.TrapRule(nil, "/no-robots/"); ok {
		t.Error("no robots.txt disallows the trap")
	}
	if !policy.IsTrap("/no-robots/x", "/no-robots/") || policy.IsTrap("/no-robot", "/no-robots/") || policy.IsTrap("/x", "") {
		t.Error("IsTrap")
	}
}

// TestTrapMark: a graphical browser's trap request confirms it at once; a
// text browser's first only puts it on probation, which a request at a
// crawler's pace or a second trap request ends; nothing holds past the
// hold.
func TestTrapMark(t *testing.T) {
	const (
		chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		lynx   = "Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"
		w3m    = "w3m/0.5.3+git20230121"
	)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	hold := policy.DefaultTrapHold

	var m policy.TrapMark
	m.Take(now, hold, chrome)
	if !m.Confirmed || !m.Judged(now.Add(time.Hour), true) || !m.Judged(now.Add(hold), false) || m.Judged(now.Add(hold+time.Second), true) {
		t.Errorf("a graphical browser's mark: %+v", m)
	}

	var p policy.TrapMark
	p.Take(now, hold, lynx)
	if p.Confirmed {
		t.Fatal("a text browser confirmed by one trap request")
	}
	// A person's pace: never judged.
	for i := 1; i <= 5; i++ {
		at := now.Add(time.Duration(i) * 1500 * time.Millisecond)
		if p.Judged(at, true) {
			t.Fatalf("a person's pace, request %d, judged", i)
		}
		// Each page's images, right after it (links -g): subresources
		// are not a pace.
		for j := 1; j <= 3; j++ {
			if p.Judged(at.Add(time.Duration(j)*50*time.Millisecond), false) {
				t.Fatalf("a person's page %d, image %d, judged", i, j)
			}
		}
	}
	// A crawler's pace: confirmed, and judged from then on.
	at := now.Add(7500*time.Millisecond + policy.TrapHumanGap - time.Millisecond)
	if !p.Judged(at, true) || !p.Judged(at.Add(time.Minute), false) {
		t.Errorf("a crawler's pace: %+v", p)
	}

	var twice policy.TrapMark
	twice.Take(now, hold, w3m)
	twice.Take(now.Add(time.Minute), hold, w3m)
	if !twice.Confirmed || twice.Hits != 2 || !twice.Until.Equal(now.Add(time.Minute+hold)) {
		t.Errorf("twice the trap: %+v", twice)
	}
}

func TestTrapPrefix(t *testing.T) {
	for ip, want := range map[string]string{
		"192.0.2.7":           "192.0.2.7/32",
		"::ffff:192.0.2.7":    "192.0.2.7/32",
		"2001:db8:1:2:3::7":   "2001:db8:1:2::/64",
		"fe80::1%eth0":        "fe80::/64",
		"2001:db8:1:2:ffff::": "2001:db8:1:2::/64",
	} {
		if got := policy.TrapPrefix(netip.MustParseAddr(ip)); got.String() != want {
			t.Errorf("TrapPrefix(%s) = %s, want %s", ip, got, want)
		}
	}
	if p := policy.TrapPrefix(netip.Addr{}); p.IsValid() {
		t.Errorf("TrapPrefix(zero) = %s", p)
	}
}

// TestKind: what the headers tell of why a request was sent, and whom the
// trap marks: the client's own choice only.
func TestKind(t *testing.T) {
	for _, c := range []struct {
		name  string
		h     map[string][]string
		want  policy.Kind
		marks bool
	}{
		{"no headers (a program, a text browser)", map[string][]string{}, 0, true},
		{"typed navigation", map[string][]string{"Sec-Fetch-Site": {"none"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"document"}}, 0, true},
		{"same-origin link", map[string][]string{"Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"document"}}, 0, true},
		{"cross-site redirect", map[string][]string{"Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"document"}}, policy.KindInduced, false},
		{"same-site navigation", map[string][]string{"Sec-Fetch-Site": {"same-site"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"document"}}, policy.KindInduced, false},
		{"image", map[string][]string{"Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"no-cors"}, "Sec-Fetch-Dest": {"image"}}, policy.KindInduced, false},
		{"iframe", map[string][]string{"Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"iframe"}}, policy.KindInduced, false},
		{"prefetch", map[string][]string{"Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"navigate"}, "Sec-Fetch-Dest": {"document"}, "Sec-Purpose": {"prefetch"}}, policy.KindInduced, false},
		{"prefetch without Fetch Metadata", map[string][]string{"Purpose": {"prefetch"}}, policy.KindInduced, false},
		{"Firefox's old prefetch", map[string][]string{"X-Moz": {"prefetch"}}, policy.KindInduced, false},
		{"forged site alone", map[string][]string{"Sec-Fetch-Site": {"none"}}, policy.KindInduced, false},
		{"Chromium's WebSocket", map[string][]string{"Upgrade": {"websocket"}}, policy.KindWebSocket, false},
		{"Firefox's WebSocket", map[string][]string{"Upgrade": {"websocket"}, "Sec-Fetch-Site": {"same-origin"}, "Sec-Fetch-Mode": {"websocket"}, "Sec-Fetch-Dest": {"empty"}}, policy.KindWebSocket | policy.KindInduced, false},
	} {
		k := policy.KindOf(c.h)
		if k != c.want || policy.TrapMarks(k) != c.marks {
			t.Errorf("%s: kind %b, marks %v; want %b, %v", c.name, k, policy.TrapMarks(k), c.want, c.marks)
		}
	}
	chromium, gecko, webkit := agents.EngineChromium, agents.EngineGecko, agents.EngineWebKit
	if policy.KindWebSocket.Carries(chromium) || policy.KindWebSocket.Carries(webkit) || !policy.KindWebSocket.Carries(gecko) || !policy.Kind(0).Carries(chromium) {
		t.Error("Carries: Chromium's WebSocket handshakes carry no Fetch Metadata, Firefox's do")
	}
	// A Chrome claim's WebSocket handshake is never judged by headers; a
	// Firefox claim's still is.
	m := policy.NewUndeclaredModes("enforce", nil, false)
	chrome := agents.ParseBrowserClaim("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
	firefox := agents.ParseBrowserClaim("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
	if _, mode := m.JudgeHeaders(&chrome, 0, policy.KindWebSocket); mode != policy.SignalOff {
		t.Error("a Chrome WebSocket handshake judged")
	}
	if _, mode := m.JudgeHeaders(&firefox, 0, policy.KindWebSocket); mode != policy.SignalEnforce {
		t.Error("a Firefox WebSocket handshake without Fetch Metadata not judged")
	}
	if _, mode := m.JudgeHeaders(&chrome, 0, 0); mode != policy.SignalEnforce {
		t.Error("a Chrome claim without Fetch Metadata not judged")
	}
}

func TestIsDocument(t *testing.T) {
	for _, c := range []struct {
		path, accept string
		want         bool
	}{
		{"/", "*/*", true},
		{"/page.html", "text/html, text/plain", true},
		{"/private/report", "", true},
		{"/img/logo.PNG", "*/*", false},
		{"/style.css", "", false},
		{"/a.b/page", "", true},
		{"/pic", "image/avif,image/webp,*/*", false},
		{"/app.js", "*/*", false},
	} {
		if got := policy.IsDocument(c.path, c.accept); got != c.want {
			t.Errorf("IsDocument(%q, %q) = %v, want %v", c.path, c.accept, got, c.want)
		}
	}
}
