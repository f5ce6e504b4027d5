package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDemo runs Caddyfile.example (with test ports) and checks every
// behaviour the README promises for it.
func TestDemo(t *testing.T) {
	raw, err := os.ReadFile(repoPath("Caddyfile.example"))
	if err != nil {
		t.Fatalf("reading Caddyfile.example: %v", err)
	}
	cfg := string(raw)
	end := strings.Index(cfg, "\n}\n")
	start := strings.Index(cfg, "{")
	if start < 0 || end < 0 {
		t.Fatal("Caddyfile.example has no global options block")
	}
	cfg = globals + cfg[end+3:]
	for from, to := range map[string]string{
		":{$PORT:8080} {":      siteURL("localhost") + " {",
		"root * examples/site": "root * " + repoPath("examples/site"),
	} {
		if !strings.Contains(cfg, from) {
			t.Fatalf("Caddyfile.example no longer contains %q", from)
		}
		cfg = strings.Replace(cfg, from, to, 1)
	}
	c := newClient(t, cfg)

	base := siteURL("localhost")
	// A person's browser sends Fetch Metadata to localhost (a secure
	// context); a script that only says Chrome is an undeclared crawler.
	if res := c.get(base+"/private/", chromeUA, browserNav...); res.status != 200 || !strings.Contains(res.body, "Private") {
		t.Errorf("a person on /private/: %d %q", res.status, res.body)
	}
	c.expect(base+"/private/", chromeUA, 403, "Your User-Agent claims Chrome")
	c.expect(base+"/", gptbotUA, 403, "GPTBot", "Disallow: /", "/robots.txt")
	c.expect(base+"/robots.txt", gptbotUA, 200, "User-agent: GPTBot")

	// Crawl-delay 2 with the default burst of 4: four requests back to
	// back pass, the fifth is throttled.
	c.expect(base+"/", exampleUA, 200, "caddy-robots demo")
	for range 3 {
		c.expect(base+"/about.html", exampleUA, 200)
	}
	res := c.expect(base+"/about.html", exampleUA, 503, "Retry-After", "Crawl-delay")
	ra, err := strconv.Atoi(res.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 2 {
		t.Errorf("Retry-After = %q, want 1 or 2 whole seconds", res.header.Get("Retry-After"))
	}
	time.Sleep(2100 * time.Millisecond)
	c.expect(base+"/private/", exampleUA, 403, "Disallow: /private/", "line 2")
	// People are never judged, whatever the path.
	for i := 0; i < 5; i++ {
		if res := c.get(base+"/private/", chromeUA, browserNav...); res.status != 200 {
			t.Errorf("a person on /private/: %d", res.status)
		}
	}
}

// TestSourceSiteBehindReverseProxy loads robots.txt through the site's own
// reverse_proxy and applies RFC 9309 §2.3 to each kind of answer.
func TestSourceSiteBehindReverseProxy(t *testing.T) {
	backend.set("ok.localhost", 200, "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n")
	backend.set("gone.localhost", 404, "not here")
	backend.set("broken.localhost", 500, "oops")
	backend.setSlow("slow.localhost", 3*time.Second, "User-agent: *\nDisallow: /\n")
	hosts := []string{"ok", "gone", "broken", "redirect", "loop", "slow", "huge"}
	var sites []string
	for _, h := range hosts {
		sites = append(sites, siteURL(h+".localhost"))
	}
	c := newClient(t, globals+strings.Join(sites, ", ")+` {
	robots {
		fetch_timeout 500ms
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`)
	// 200: parsed and enforced.
	c.expect(siteURL("ok.localhost")+"/private/x", exampleUA, 403, "Disallow: /private/")
	c.expect(siteURL("ok.localhost")+"/public", exampleUA, 200, "app:/public")
	c.expect(siteURL("ok.localhost")+"/public", gptbotUA, 403)
	c.expect(siteURL("ok.localhost")+"/robots.txt", gptbotUA, 200, "User-agent: GPTBot")
	c.expect(siteURL("ok.localhost")+"/private/x", chromeUA, 200, "app:/private/x")
	// 404: no rules, everything allowed.
	c.expect(siteURL("gone.localhost")+"/anything", gptbotUA, 200, "app:/anything")
	// 500 with no copy ever obtained: complete disallow for crawlers, with
	// a Retry-After, never for people.
	res := c.expect(siteURL("broken.localhost")+"/page", exampleUA, 503, "cannot be read")
	if res.header.Get("Retry-After") == "" {
		t.Error("unavailable robots.txt: no Retry-After")
	}
	c.expect(siteURL("broken.localhost")+"/page", chromeUA, 200)
	// Redirect chain on the same site: followed.
	c.expect(siteURL("redirect.localhost")+"/via-redirect/a", exampleUA, 403, "/via-redirect/")
	c.expect(siteURL("redirect.localhost")+"/other", exampleUA, 200)
	// More than five redirects: unavailable, i.e. no rules.
	c.expect(siteURL("loop.localhost")+"/x", exampleUA, 200)
	// Slow answer past the fetch timeout: unreachable.
	start := time.Now()
	c.expect(siteURL("slow.localhost")+"/x", exampleUA, 503)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("slow robots.txt held the request %s; fetch_timeout is 500ms", took)
	}
	// 10 MiB body: the first 500 KiB are read, the rest ignored, quickly.
	start = time.Now()
	c.expect(siteURL("huge.localhost")+"/early/a", exampleUA, 403, "/early/")
	c.expect(siteURL("huge.localhost")+"/late/a", exampleUA, 200)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("huge robots.txt took %s", took)
	}
}

// TestStaleWhileError keeps the last good copy when the source starts
// failing, and picks up a new one when it recovers.
func TestStaleWhileError(t *testing.T) {
	backend.set("flaky.localhost", 200, "User-agent: *\nDisallow: /a/\n")
	c := newClient(t, globals+siteURL("flaky.localhost")+` {
	robots {
		refresh 1s
		grace 0s
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`)
	c.expect(siteURL("flaky.localhost")+"/a/1", exampleUA, 403)
	backend.set("flaky.localhost", 503, "down")
	time.Sleep(2500 * time.Millisecond)
	c.expect(siteURL("flaky.localhost")+"/a/1", exampleUA, 403, "Disallow: /a/")
	c.expect(siteURL("flaky.localhost")+"/b/1", exampleUA, 200)
	backend.set("flaky.localhost", 200, "User-agent: *\nDisallow: /b/\n")
	eventually(t, 5*time.Second, "the recovered robots.txt", func() bool {
		return c.get(siteURL("flaky.localhost")+"/b/1", exampleUA).status == 403
	})
	c.expect(siteURL("flaky.localhost")+"/a/1", exampleUA, 200)
}

// TestGraceAndObservedRefresh: a client's 200 for /robots.txt refreshes the
// copy at once; a crawler that has not re-read robots.txt since the change
// keeps the old permissions during the grace window, one that has re-read
// it does not.
func TestGraceAndObservedRefresh(t *testing.T) {
	backend.set("grace.localhost", 200, "User-agent: *\nDisallow: /old/\n")
	config := func(refresh string) string {
		return globals + siteURL("grace.localhost") + ` {
	robots {
		refresh ` + refresh + `
		crawl_delay off
	}
	reverse_proxy ` + backend.addr + `
}
`
	}
	c := newClient(t, config("1h"))
	const late = "LateBot/2.0 (+https://late.example/bot)"
	const fresh = "FreshBot/2.0 (+https://fresh.example/bot)"
	c.expect(siteURL("grace.localhost")+"/new/x", late, 200)
	c.expect(siteURL("grace.localhost")+"/old/x", late, 403)
	backend.set("grace.localhost", 200, "User-agent: *\nDisallow: /new/\n")
	// A browser reading robots.txt makes the loader look again soon
	// (refresh is 1h): a client's copy never becomes the rules itself.
	c.expect(siteURL("grace.localhost")+"/robots.txt", chromeUA, 200, "Disallow: /new/")
	// FreshBot reads the new file once it is loaded: only the new version
	// counts for it.
	eventually(t, 5*time.Second, "the prompted reload", func() bool {
		c.get(siteURL("grace.localhost")+"/robots.txt", fresh)
		return c.get(siteURL("grace.localhost")+"/new/x", fresh).status == 403
	})
	c.expect(siteURL("grace.localhost")+"/new/x", fresh, 403, "Disallow: /new/")
	c.expect(siteURL("grace.localhost")+"/old/x", fresh, 200)
	// LateBot may still hold the old file: refused only where both
	// versions refuse. (The old file is the first this process loaded:
	// for all it knows it was current for days, so it is never brief.)
	c.expect(siteURL("grace.localhost")+"/new/x", late, 200)
	c.expect(siteURL("grace.localhost")+"/old/x", late, 200)
	c.expect(siteURL("grace.localhost")+"/other", late, 200)
	// A config reload keeps the version history and who fetched what.
	c.tc.InitServer(config("59m"), "caddyfile")
	c.expect(siteURL("grace.localhost")+"/new/x", late, 200)
	c.expect(siteURL("grace.localhost")+"/new/x", fresh, 403)
}

// TestSourceFileAndInline: a file source notices edits without a restart.
func TestSourceFileAndInline(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /one/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, globals+siteURL("file.localhost")+` {
	robots {
		source file `+file+`
		grace 0s
		crawl_delay off
	}
	respond "ok"
}
`+siteURL("inline.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /secret\n"
		crawl_delay off
	}
	respond "ok"
}
`)
	c.expect(siteURL("file.localhost")+"/one/x", exampleUA, 403)
	c.expect(siteURL("file.localhost")+"/two/x", exampleUA, 200, "ok")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /two/\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 6*time.Second, "the edited robots.txt file", func() bool {
		return c.get(siteURL("file.localhost")+"/two/x", exampleUA).status == 403
	})
	c.expect(siteURL("file.localhost")+"/one/x", exampleUA, 200)
	c.expect(siteURL("inline.localhost")+"/secret", exampleUA, 403, "Disallow: /secret")
	c.expect(siteURL("inline.localhost")+"/public", exampleUA, 200)
}

// TestModeLogExemptLibraries: log mode never refuses; exempt networks and
// ignored libraries are never judged.
func TestModeLogExemptLibraries(t *testing.T) {
	c := newClient(t, globals+siteURL("log.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /\n"
		mode log
	}
	respond "served"
}
`+siteURL("exempt.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /\n"
		exempt 127.0.0.0/8 ::1
	}
	respond "served"
}
`+siteURL("libs.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /\n"
		libraries ignore
	}
	respond "served"
}
`)
	for i := 0; i < 3; i++ {
		c.expect(siteURL("log.localhost")+"/x", exampleUA, 200, "served")
	}
	c.expect(siteURL("exempt.localhost")+"/x", gptbotUA, 200, "served")
	c.expect(siteURL("libs.localhost")+"/x", "curl/8.5.0", 200, "served")
	c.expect(siteURL("libs.localhost")+"/x", "python-requests/2.31.0", 200, "served")
	c.expect(siteURL("libs.localhost")+"/x", exampleUA, 403)
}

// TestErrorRoutesAndPlaceholders: with use_error_routes, handle_errors
// answers refusals and sees the {http.robots.*} placeholders.
func TestErrorRoutesAndPlaceholders(t *testing.T) {
	c := newClient(t, globals+siteURL("errors.localhost")+` {
	robots {
		crawl_burst 1
		source inline "User-agent: *\nDisallow: /no/\nCrawl-delay: 5\n"
		use_error_routes
	}
	respond "ok"
	handle_errors {
		respond "{err.status_code} {http.robots.decision} agent={http.robots.agent} token={http.robots.token} rule={http.robots.rule}"
	}
}
`)
	c.expect(siteURL("errors.localhost")+"/no/x", exampleUA, 403,
		"403 block agent=ExampleCrawler token=* rule=Disallow: /no/ (line 2)")
	c.expect(siteURL("errors.localhost")+"/yes", exampleUA, 200)
	res := c.expect(siteURL("errors.localhost")+"/yes", exampleUA, 503, "503 throttle agent=ExampleCrawler")
	if res.header.Get("Retry-After") == "" {
		t.Error("throttled through handle_errors: no Retry-After")
	}
}

// TestStrikesBan: repeated refused requests ban the crawler; /robots.txt
// stays open to it.
func TestStrikesBan(t *testing.T) {
	c := newClient(t, globals+siteURL("strikes.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /trap/\n"
		strikes 3 1m 1h
		crawl_delay off
	}
	respond "ok"
}
`)
	const ua = "StrikeBot/1.0 (+https://strike.example/bot)"
	c.expect(siteURL("strikes.localhost")+"/fine", ua, 200)
	for i := 0; i < 3; i++ {
		c.expect(siteURL("strikes.localhost")+"/trap/"+strconv.Itoa(i), ua, 403, "Disallow: /trap/")
	}
	res := c.expect(siteURL("strikes.localhost")+"/fine", ua, 403, "banned until")
	if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); ra < 3000 || ra > 3600 {
		t.Errorf("ban Retry-After = %q, want about an hour", res.header.Get("Retry-After"))
	}
	// robots.txt is served to the banned bot: the enforced text, since
	// the rules come from source inline.
	c.expect(siteURL("strikes.localhost")+"/robots.txt", ua, 200, "Disallow: /trap/")
	c.expect(siteURL("strikes.localhost")+"/fine", chromeUA, 200)
	// An unverified bot's strikes are its own (its name and address):
	// another crawler on the same address is not banned for them. (A bot
	// that rotates names is caught as one: TestAdversarialRotatingTokens.)
	c.expect(siteURL("strikes.localhost")+"/fine", "OtherBot/1.0 (+https://other.example)", 200)
	if n := metricValue(t, adminURL()+"/metrics", `caddy_robots_bans_in_force{store="memory"}`); n < 1 {
		t.Errorf("caddy_robots_bans_in_force = %v, want at least the one ban", n)
	}
}

// TestTrustedProxiesKeyThrottle: the client address comes from Caddy's
// client IP (trusted_proxies honoured), and unverified crawlers get one
// budget per token and address.
func TestTrustedProxiesKeyThrottle(t *testing.T) {
	cfg := strings.Replace(globals, "auto_https off", `auto_https off
	servers {
		trusted_proxies static 127.0.0.1/32
	}`, 1)
	c := newClient(t, cfg+siteURL("proxied.localhost")+` {
	robots {
		crawl_burst 1
		source inline "User-agent: *\nCrawl-delay: 5\n"
	}
	respond "ok"
}
`)
	do := func(ip string) int {
		req := c.get(siteURL("proxied.localhost")+"/p", exampleUA, "X-Forwarded-For: "+ip)
		return req.status
	}
	if s := do("198.51.100.1"); s != 200 {
		t.Fatalf("first request from 198.51.100.1: %d", s)
	}
	if s := do("198.51.100.1"); s != 503 {
		t.Errorf("second request from 198.51.100.1: %d, want 503", s)
	}
	if s := do("198.51.100.2"); s != 200 {
		t.Errorf("first request from 198.51.100.2: %d, want its own budget", s)
	}
	// IPv6 clients share a budget per /64.
	if s := do("2001:db8:1:2::1"); s != 200 {
		t.Errorf("first request from 2001:db8:1:2::1: %d", s)
	}
	if s := do("2001:db8:1:2::ffff"); s != 503 {
		t.Errorf("same /64: %d, want 503", s)
	}
}

// TestReloadUnderTrafficKeepsThrottleState reloads the config while a
// crawler and browsers keep requesting, and checks that no request fails
// and the crawler's budget survives the reload.
func TestReloadUnderTrafficKeepsThrottleState(t *testing.T) {
	cfg := func(body string) string {
		return globals + siteURL("reload.localhost") + ` {
	robots {
		crawl_burst 1
		source inline "User-agent: *\nCrawl-delay: 30\n"
	}
	respond "` + body + `"
}
`
	}
	c := newClient(t, cfg("v1"))
	const ua = "ReloadBot/1.0 (+https://reload.example/bot)"
	c.expect(siteURL("reload.localhost")+"/a", ua, 200, "v1")

	// A non-200 answer would be ours; a connection error during the swap
	// of listeners is Caddy's and is only allowed to be rare.
	var failures, connErrors, total atomic.Int64
	var lastConnErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &http.Client{Timeout: 5 * time.Second, Transport: c.tc.Client.Transport}
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", siteURL("reload.localhost")+"/b", nil)
				req.Header.Set("User-Agent", chromeUA)
				res, err := cl.Do(req)
				total.Add(1)
				if err != nil {
					connErrors.Add(1)
					lastConnErr.Store(err.Error())
					continue
				}
				if res.StatusCode != 200 {
					failures.Add(1)
				}
				res.Body.Close()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	c.tc.InitServer(cfg("v2"), "caddyfile")
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d browser requests got a non-200 answer during the reload", n, total.Load())
	}
	if n, all := connErrors.Load(), total.Load(); n > 0 {
		t.Logf("%d of %d requests met a connection error during the listener swap (last: %v)", n, all, lastConnErr.Load())
		if n*100 > all {
			t.Errorf("too many connection errors during the reload: %d of %d", n, all)
		}
	}
	c.expect(siteURL("reload.localhost")+"/b", chromeUA, 200, "v2")
	res := c.expect(siteURL("reload.localhost")+"/a", ua, 503)
	if ra, _ := strconv.Atoi(res.header.Get("Retry-After")); ra < 20 {
		t.Errorf("after reload Retry-After = %q: the crawler's budget was reset", res.header.Get("Retry-After"))
	}
}

// TestFetchesBodyOnce makes sure the site source does not hit the backend
// for robots.txt on every request.
func TestFetchesBodyOnce(t *testing.T) {
	backend.set("once.localhost", 200, "User-agent: *\nDisallow: /x/\n")
	c := newClient(t, globals+siteURL("once.localhost")+` {
	robots {
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`)
	c.expect(siteURL("once.localhost")+"/x/1", exampleUA, 403)
	before := backend.requests.Load()
	for i := 0; i < 20; i++ {
		c.expect(siteURL("once.localhost")+fmt.Sprintf("/x/%d", i), exampleUA, 403)
	}
	if got := backend.requests.Load() - before; got != 0 {
		t.Errorf("%d backend requests for 20 refused requests; want 0 (rules are cached)", got)
	}
}

// TestJSONExample loads examples/json/caddy.json (test ports) and checks
// the JSON form behaves like the Caddyfile.
func TestJSONExample(t *testing.T) {
	raw, err := os.ReadFile(repoPath("examples/json/caddy.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The listen addresses are {env.CADDY_ADMIN} and :{env.PORT},
	// replaced when the config loads.
	t.Setenv("CADDY_ADMIN", hostPort("localhost", adminPort))
	t.Setenv("PORT", strconv.Itoa(httpPort))
	cfg := strings.Replace(string(raw), `"examples/site"`, `"`+repoPath("examples/site")+`"`, 1)
	tc := newJSONClient(t, cfg)
	tc.expect(siteURL("localhost")+"/", gptbotUA, 403, "Disallow: /")
	if res := tc.get(siteURL("localhost")+"/private/", chromeUA, browserNav...); res.status != 200 || !strings.Contains(res.body, "Private") {
		t.Errorf("a person on /private/: %d %q", res.status, res.body)
	}
	tc.expect(siteURL("localhost")+"/robots.txt", gptbotUA, 200, "User-agent: GPTBot")
}
