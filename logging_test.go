package caddyrobots

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// observed provisions a handler (inline demoRobots, burst 1) whose logger
// records INFO and above, with a fake clock, and a fresh refusal limiter.
func observed(t *testing.T) (*Handler, *observer.ObservedLogs, *time.Time) {
	t.Helper()
	h, done := newTestHandler(t, &Handler{CrawlBurst: 1})
	t.Cleanup(done)
	core, logs := observer.New(zapcore.InfoLevel)
	h.logger = zap.New(core)
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	old := refusals
	refusals = newRefusalLimiter()
	t.Cleanup(func() { refusals = old })
	return h, logs, &now
}

// serve runs one request through h and returns its status and request.
func serve(t *testing.T, h *Handler, target, ua, remote string) (int, *http.Request) {
	t.Helper()
	r, w := prepared("GET", target, ua, remote)
	if err := h.ServeHTTP(w, r, okNext); err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	return w.Code, r
}

// refusalLines returns the refusal lines logged so far, and forgets them.
func refusalLines(logs *observer.ObservedLogs) []observer.LoggedEntry {
	var out []observer.LoggedEntry
	for _, e := range logs.TakeAll() {
		if strings.HasPrefix(e.Message, "robots: request refused") || strings.HasPrefix(e.Message, "robots: throttling") || strings.HasPrefix(e.Message, "robots: crawler banned") {
			out = append(out, e)
		}
	}
	return out
}

// TestLogRefusalFields: a refusal is one INFO line that explains it.
func TestLogRefusalFields(t *testing.T) {
	h, logs, _ := observed(t)
	ua := benchBotUA + " " + strings.Repeat("é", 300)
	if code, _ := serve(t, h, "/private/x", ua, "192.0.2.10:4000"); code != 403 {
		t.Fatalf("status %d, want 403", code)
	}
	lines := refusalLines(logs)
	if len(lines) != 1 {
		t.Fatalf("%d refusal lines, want 1: %v", len(lines), lines)
	}
	e := lines[0]
	if e.Level != zapcore.InfoLevel || e.Message != "robots: request refused" {
		t.Errorf("line %v %q, want INFO \"robots: request refused\"", e.Level, e.Message)
	}
	f := e.ContextMap()
	want := map[string]any{
		"host": "example.com", "remote_ip": "192.0.2.10", "crawler": "ExampleCrawler", "decision": "block",
		"reason": "rule", "group": "User-agent: * (line 1)", "rule": "Disallow: /private/ (line 2)", "line": int64(2),
		"target": "/private/x", "mode": "enforce",
	}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %#v, want %#v", k, f[k], v)
		}
	}
	for _, k := range []string{"verdict", "version", "category"} {
		if _, ok := f[k]; !ok {
			t.Errorf("no %s field: %v", k, f)
		}
	}
	got, _ := f["user_agent"].(string)
	if len(got) > maxLoggedUA || !utf8.ValidString(got) || !strings.HasPrefix(got, benchBotUA) {
		t.Errorf("user_agent is %d bytes (valid UTF-8: %v), want at most %d, cut on a character", len(got), utf8.ValidString(got), maxLoggedUA)
	}
}

// TestLogRefusalRateLimited: one line per identity per 10 s, and the next
// line says how many were held back.
func TestLogRefusalRateLimited(t *testing.T) {
	h, logs, now := observed(t)
	for range 5 {
		serve(t, h, "/private/", benchBotUA, "192.0.2.20:4000")
	}
	if n := len(refusalLines(logs)); n != 1 {
		t.Fatalf("%d lines for 5 refusals in one instant, want 1", n)
	}
	// Another address is another identity.
	serve(t, h, "/private/", benchBotUA, "192.0.2.21:4000")
	if n := len(refusalLines(logs)); n != 1 {
		t.Fatalf("%d lines for another identity, want 1", n)
	}
	*now = now.Add(refusalLogEvery)
	serve(t, h, "/private/", benchBotUA, "192.0.2.20:4000")
	lines := refusalLines(logs)
	if len(lines) != 1 {
		t.Fatalf("%d lines after 10 s, want 1", len(lines))
	}
	if got := lines[0].ContextMap()["suppressed"]; got != int64(4) {
		t.Errorf("suppressed = %v, want 4", got)
	}
}

// TestLogThrottleStart: a throttle is logged when it starts, not on every
// 503, and its 503 is not an ERROR in Caddy's access log.
func TestLogThrottleStart(t *testing.T) {
	h, logs, now := observed(t)
	if code, r := serve(t, h, "/a", benchBotUA, "192.0.2.30:4000"); code != 200 {
		t.Fatalf("first request: %d", code)
	} else if v := caddyhttp.GetVar(r.Context(), caddyhttp.LogLevelVar); v != nil {
		t.Errorf("log_level set to %v on an allowed request", v)
	}
	var throttled int
	for i := range 10 {
		*now = now.Add(100 * time.Millisecond)
		code, r := serve(t, h, "/a", benchBotUA, "192.0.2.30:4000")
		if code != 503 {
			continue
		}
		throttled++
		if v := caddyhttp.GetVar(r.Context(), caddyhttp.LogLevelVar); v != "INFO" {
			t.Errorf("request %d: log_level = %v, want INFO for the handler's own 503", i, v)
		}
	}
	if throttled < 5 {
		t.Fatalf("only %d throttled requests", throttled)
	}
	lines := refusalLines(logs)
	if len(lines) != 1 || lines[0].Message != "robots: throttling crawler" {
		t.Fatalf("%d lines for %d throttles, want 1 \"robots: throttling crawler\": %v", len(lines), throttled, lines)
	}
	f := lines[0].ContextMap()
	if f["decision"] != "throttle" || f["reason"] != "rate" || f["retry_after"] == nil {
		t.Errorf("fields %v", f)
	}
	// A refusal is logged at INFO, and leaves the access log level alone.
	_, r := serve(t, h, "/private/", benchBotUA, "192.0.2.31:4000")
	if v := caddyhttp.GetVar(r.Context(), caddyhttp.LogLevelVar); v != nil {
		t.Errorf("log_level = %v on a 403", v)
	}
}

// TestLogLevelVarRespected: a log_level the site set is not overridden.
func TestLogLevelVarRespected(t *testing.T) {
	h, _, now := observed(t)
	serve(t, h, "/a", benchBotUA, "192.0.2.40:4000")
	*now = now.Add(100 * time.Millisecond)
	r, w := prepared("GET", "/a", benchBotUA, "192.0.2.40:4000")
	caddyhttp.SetVar(r.Context(), caddyhttp.LogLevelVar, "WARN")
	if err := h.ServeHTTP(w, r, okNext); err != nil || w.Code != 503 {
		t.Fatalf("status %d, %v; want 503", w.Code, err)
	}
	if v := caddyhttp.GetVar(r.Context(), caddyhttp.LogLevelVar); v != "WARN" {
		t.Errorf("log_level = %v, want the site's WARN", v)
	}
}

// TestLogRefusalGlobalCap: at most 50 lines a second for the process; the
// next line says how many were dropped.
func TestLogRefusalGlobalCap(t *testing.T) {
	l := newRefusalLimiter()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	written := 0
	for i := range 60 {
		if ok, _, _ := l.allow("id"+string(rune('A'+i)), now, refusalLogEvery); ok {
			written++
		}
	}
	if written != refusalLogPerSec {
		t.Errorf("%d lines in one second, want %d", written, refusalLogPerSec)
	}
	ok, _, dropped := l.allow("another", now.Add(time.Second), refusalLogEvery)
	if !ok || dropped != 10 {
		t.Errorf("next second: ok %v, dropped %d; want true, 10", ok, dropped)
	}
}

// TestLogBanStart: a ban is logged when it starts and not again until it
// has ended.
func TestLogBanStart(t *testing.T) {
	l := newRefusalLimiter()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ban := time.Hour
	if ok, _, _ := l.allow("ban", now, ban); !ok {
		t.Fatal("ban start not logged")
	}
	if ok, _, _ := l.allow("ban", now.Add(59*time.Minute), ban); ok {
		t.Error("ban logged again while in force")
	}
	ok, suppressed, _ := l.allow("ban", now.Add(61*time.Minute), ban)
	if !ok || suppressed != 1 {
		t.Errorf("next ban: ok %v, suppressed %d; want true, 1", ok, suppressed)
	}
}

// TestLogRefusalBounded: the identities kept are bounded.
func TestLogRefusalBounded(t *testing.T) {
	l := newRefusalLimiter()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for i := range refusalLogMax + 500 {
		if i%refusalLogPerSec == 0 {
			now = now.Add(time.Second)
		}
		l.allow("id"+strings.Repeat("x", i%7)+string(rune(i)), now, refusalLogEvery)
	}
	if n := len(l.ids); n > refusalLogMax {
		t.Errorf("%d identities kept, want at most %d", n, refusalLogMax)
	}
}
