package caddyrobots

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestBehindUntrustedProxy: a peer on a private or loopback address that
// forwards for others while Caddy does not trust it is recognised, and
// reported once (a config warning and the status page's peer), only for a
// real request; a trusted proxy, a public peer and a request without the
// headers are not.
func TestBehindUntrustedProxy(t *testing.T) {
	h, done := newTestHandler(t, &Handler{})
	defer done()
	req := func(remote string, headers ...string) *http.Request {
		r, _ := prepared("GET", "/", benchBotUA, remote)
		for _, kv := range headers {
			k, v, _ := strings.Cut(kv, ": ")
			r.Header.Set(k, v)
		}
		return r
	}
	// What the pipeline is told of a request, and what it concludes.
	behind := func(r *http.Request) bool {
		forwarded, trusted := forwarding(r, nil)
		return policy.UntrustedProxy(clientIP(nil, r), forwarded, trusted)
	}
	for _, c := range []struct {
		name    string
		remote  string
		headers []string
		trusted bool
		want    bool
	}{
		{"loopback with X-Forwarded-For", "127.0.0.1:4000", []string{"X-Forwarded-For: 203.0.113.7"}, false, true},
		{"private with Forwarded", "10.1.2.3:4000", []string{"Forwarded: for=203.0.113.7"}, false, true},
		{"private IPv6 with X-Forwarded-For", "[fd00::1]:4000", []string{"X-Forwarded-For: 203.0.113.7"}, false, true},
		{"a trusted proxy", "127.0.0.1:4000", []string{"X-Forwarded-For: 203.0.113.7"}, true, false},
		{"a public peer", "198.51.100.4:4000", []string{"X-Forwarded-For: 203.0.113.7"}, false, false},
		{"no forwarding header", "127.0.0.1:4000", nil, false, false},
	} {
		r := req(c.remote, c.headers...)
		if c.trusted {
			caddyhttp.SetVar(r.Context(), caddyhttp.TrustedProxyVarKey, true)
		}
		if got := behind(r); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if w := h.configWarnings.all(); len(w) != 0 || h.untrustedProxyPeer().IsValid() {
		t.Fatalf("a check without report warned: %q", w)
	}
	for range 3 {
		r := req("127.0.0.1:4000", "X-Forwarded-For: 203.0.113.7")
		if behind(r) {
			h.noteUntrustedProxy(clientIP(nil, r))
		}
	}
	w := h.configWarnings.all()
	if len(w) != 1 || !strings.Contains(w[0], "127.0.0.1") || !strings.Contains(w[0], "trusted_proxies") {
		t.Fatalf("config warnings %q, want one naming the peer and trusted_proxies", w)
	}
	if p := h.untrustedProxyPeer(); p.String() != "127.0.0.1" {
		t.Fatalf("untrusted proxy peer %s", p)
	}
}

// TestNoRotationBehindUntrustedProxy: behind a proxy the server does not
// trust, many names from the proxy's address keep their own budgets (they
// are many clients); from an address that forwards for nobody, the same
// names beyond the residents share one pooled budget.
func TestNoRotationBehindUntrustedProxy(t *testing.T) {
	h, done := newTestHandler(t, &Handler{CrawlBurst: 1})
	defer done()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	crawl := func(remote string, headers ...string) (throttled int) {
		for i := range 16 {
			r, w := prepared("GET", "/", fmt.Sprintf("ProxyTestBot%d/1.0", i), remote)
			for _, kv := range headers {
				k, v, _ := strings.Cut(kv, ": ")
				r.Header.Set(k, v)
			}
			if err := h.ServeHTTP(w, r, okNext); err != nil {
				t.Fatal(err)
			}
			if w.Code == http.StatusServiceUnavailable {
				throttled++
			}
		}
		return throttled
	}
	if n := crawl("10.77.0.1:4000", "X-Forwarded-For: 203.0.113.7"); n != 0 {
		t.Errorf("behind an untrusted proxy, %d of 16 names throttled, want 0", n)
	}
	if n := crawl("10.77.0.2:4000"); n == 0 {
		t.Error("16 names from one address that forwards for nobody: none throttled (no pooling)")
	}
}

// TestPooledNameKeepsItsOwnCrawlDelay: a name that arrives on an address
// already rotating names is pooled with the others, but the pool bounds
// the address in all, not what one name may take: the newcomer owes its
// own Crawl-delay as anywhere else (its fifth request back to back with
// crawl_burst 4 is throttled), though the pool alone would allow more.
func TestPooledNameKeepsItsOwnCrawlDelay(t *testing.T) {
	h, done := newTestHandler(t, &Handler{})
	defer done()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h.now = func() time.Time { return now }
	get := func(ua string) int {
		r, w := prepared("GET", "/", ua, "198.51.100.44:4000")
		if err := h.ServeHTTP(w, r, okNext); err != nil {
			t.Fatal(err)
		}
		return w.Code
	}
	// Six names, one request each: the address rotates.
	for i := range 6 {
		get(fmt.Sprintf("RotorBot%d/1.0", i))
	}
	var codes []int
	for range 5 {
		codes = append(codes, get("LateBot/1.0"))
	}
	if fmt.Sprint(codes) != "[200 200 200 200 503]" {
		t.Errorf("a pooled name's five requests back to back: %v, want its own burst of 4 then 503", codes)
	}
}
