package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	caddyrobots "github.com/caddyrobots/caddy-robots"
)

// TestRangesDownloadedList: a GPTBot claim is judged against the IP list
// Caddy downloads (here from a loopback server standing in for
// openai.com/gptbot.json). While only the months-old embedded snapshot is
// known, a claim from outside it cannot be proven false; once the
// downloaded list is loaded, a claim from an address outside it is refused
// as spoofed, and once a list containing the address is served, the claim
// is verified and judged by GPTBot's group.
//
// The verifier never judges a loopback or private address (most likely a
// proxy's, not the client's), so the client address comes through a
// trusted X-Forwarded-For from TEST-NET-1 (192.0.2.0/24), which it treats
// as public; a direct claim from 127.0.0.1 stays unverified whatever the
// list says.
func TestRangesDownloadedList(t *testing.T) {
	// Only the configured loopback URL is downloaded, never the operators'.
	t.Setenv(caddyrobots.RangesOperatorsEnv, "off")

	var mu sync.Mutex
	list, etag := `{"creationTime": "2026-11-22T00:00:00Z", "prefixes": [{"ipv4Prefix": "198.51.100.0/24"}]}`, `"a"`
	var hits, full int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hits++
		if r.URL.Path != "/gptbot.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, list)
	}))
	defer srv.Close()

	cfg := strings.Replace(globals, "auto_https off", `auto_https off
	servers {
		trusted_proxies static 127.0.0.1/32
	}`, 1)
	c := newClient(t, cfg+siteURL("ranges.localhost")+` {
	robots {
		source inline "User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /\n"
		verify {
			ranges openai-gptbot `+srv.URL+`/gptbot.json
			ranges_refresh 1s
		}
	}
	respond "ok"
}
`)
	site := siteURL("ranges.localhost") + "/page"
	claim := func(headers ...string) response { return c.get(site, gptbotUA, headers...) }
	waitFor := func(what string, ok func(response) bool, headers ...string) response {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			res := claim(headers...)
			if ok(res) {
				return res
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last answer %d %q", what, res.status, res.body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	spoofed := func(r response) bool { return r.status == 403 && strings.Contains(r.body, "claims to be GPTBot") }

	// The downloaded list does not hold 192.0.2.77: refused as a spoof.
	waitFor("a claim from outside the downloaded list", spoofed, "X-Forwarded-For: 192.0.2.77")
	// From loopback the verifier does not judge: not refused as a spoof
	// (unverified claims get nothing more lenient than "*").
	if res := claim(); spoofed(res) {
		t.Errorf("claim from 127.0.0.1 refused as spoofed: %d %q", res.status, res.body)
	}

	// The publisher adds 192.0.2.0/24: the same claim is now GPTBot's.
	mu.Lock()
	list, etag = `{"creationTime": "2026-11-23T00:00:00Z", "prefixes": [{"ipv4Prefix": "198.51.100.0/24"}, {"ipv4Prefix": "192.0.2.0/24"}]}`, `"b"`
	mu.Unlock()
	waitFor("a claim from inside the new list", func(r response) bool { return r.status == 200 && r.body == "ok" }, "X-Forwarded-For: 192.0.2.77")

	// Unchanged lists cost 304s: a couple of rounds later, still two bodies.
	time.Sleep(2500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if full != 2 || hits < 4 {
		t.Errorf("%d downloads, %d with a body; want at least 4 and exactly 2", hits, full)
	}
}
