package integration

// The adversarial suite, part two: claims nobody can borrow, state nobody
// can dodge, and history that survives a restart.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAdversarialUnverifiedClaim: a Googlebot or AdsBot-Google claim from
// an address that cannot be verified (loopback) gets nothing more lenient
// than "*": where only "*" refuses, 503 with Retry-After and no strike; it
// is throttled by "*"'s Crawl-delay.
func TestAdversarialUnverifiedClaim(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\nCrawl-delay: 30\n\nUser-agent: Googlebot\nUser-agent: AdsBot-Google\nAllow: /\nDisallow: /nogoogle/\n")
	c := newClient(t, globals+`
`+siteURL("claims.localhost")+` {
	root * `+dir+`
	robots {
		strikes 3 10m 1h
		crawl_burst 1
	}
	file_server
}
`)
	for _, ua := range []string{googleUA, "AdsBot-Google (+http://www.google.com/adsbot.html)"} {
		for i := range 6 {
			res := c.get(siteURL("claims.localhost")+"/private/secret.html", ua)
			if res.status != 503 || strings.Contains(res.body, secret) {
				t.Fatalf("%q request %d for /private/: %d %q, want 503", ua, i, res.status, res.body)
			}
			if res.header.Get("Retry-After") == "" {
				t.Errorf("%q: 503 without Retry-After", ua)
			}
		}
		// Its own group still refuses with 403 ...
		c.expect(siteURL("claims.localhost")+"/nogoogle/x", ua, 403)
	}
	// ... and six 503s were no strikes: a fresh address-level check shows
	// no ban for the public page (the Crawl-delay of "*" applies though:
	// 200 once, then 503 for the rate).
	res := c.get(siteURL("claims.localhost")+"/public/", googleUA)
	if res.status == 403 {
		t.Fatalf("unverified claim banned after 503s: %q", res.body)
	}
	res = c.get(siteURL("claims.localhost")+"/index.html", googleUA)
	if res.status != 503 || !strings.Contains(res.body, "wait") {
		t.Errorf("unverified Googlebot not throttled by \"*\"'s Crawl-delay: %d %q", res.status, res.body)
	}
}

// TestAdversarialRotatingTokens: a bot judged by "*" that sends a new
// product token with every request buys no fresh budget with it: beyond an
// address's first four names (its residents, each with its own budget),
// the new names share one pooled budget worth four names. What robots.txt
// forbids is refused by its rule whatever the name; strikes and bans stay
// per name, so a new name never inherits a ban it did not earn, and a
// newcomer that fetches /robots.txt gets a budget of its own.
func TestAdversarialRotatingTokens(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\nCrawl-delay: 30\n")
	c := newClient(t, globals+`
`+siteURL("rotate.localhost")+` {
	root * `+dir+`
	robots {
		strikes 3 10m 1h
		crawl_burst 1
	}
	file_server
}
`)
	site := siteURL("rotate.localhost")
	ua := func(i int) string { return fmt.Sprintf("RandBot%d/1.0 (+https://example.net/bot)", i) }
	// An address's first four names are residents: each its own
	// Crawl-delay budget (two crawlers behind one NAT never share one).
	for i := range 4 {
		c.expect(site+"/public/", ua(i), 200)
	}
	// Further names share one pool worth four names (crawl_burst 1: one
	// request each back to back) ...
	for i := 4; i < 8; i++ {
		c.expect(site+"/public/", ua(i), 200)
	}
	// ... and a new token buys nothing more.
	if res := c.get(site+"/public/", ua(8)); res.status != 503 {
		t.Errorf("a new token bought a new Crawl-delay budget: %d", res.status)
	}
	// Forbidden paths are refused by the rule whatever the name.
	for i := 9; i < 12; i++ {
		res := c.expect(site+"/private/secret.html", ua(i), 403, "Disallow: /private/")
		if strings.Contains(res.body, "banned") {
			t.Errorf("a new name refused by a ban it did not earn: %q", res.body)
		}
	}
	// A name that earns three strikes is banned; its ban names it alone.
	for range 3 {
		c.expect(site+"/private/secret.html", ua(20), 403)
	}
	res := c.get(site+"/public/", ua(20))
	if res.status != 403 || !strings.Contains(res.body, "RandBot20 is banned") {
		t.Errorf("three strikes did not ban their name: %d %q", res.status, res.body)
	}
	if m := regexp.MustCompile(`RandBot\d+`).FindAllString(res.body, -1); len(m) != 1 {
		t.Errorf("the ban names other clients: %q", res.body)
	}
	// Nobody else inherits it: a new name is throttled by the pool, not
	// banned, and a resident keeps its own state.
	if res := c.get(site+"/public/", ua(99)); res.status != 503 {
		t.Errorf("a new name beside a banned one: %d %q, want the pool's 503", res.status, res.body)
	}
	res = c.get(site+"/private/secret.html", ua(2))
	if res.status != 403 || strings.Contains(res.body, "banned") {
		t.Errorf("a resident paid for another name's ban: %d %q", res.status, res.body)
	}
	// A newcomer that fetches /robots.txt has a budget of its own, even
	// while the pool is spent.
	c.expect(site+"/robots.txt", ua(30), 200, "Disallow: /private/")
	c.expect(site+"/public/", ua(30), 200)
	// robots.txt is still served to the banned name.
	c.expect(site+"/robots.txt", ua(20), 200, "Disallow: /private/")
}

// TestAdversarialMultipleUserAgents: a browser User-Agent followed by a
// crawler's is the crawler's request.
func TestAdversarialMultipleUserAgents(t *testing.T) {
	dir := advSite(t, "User-agent: GPTBot\nDisallow: /\n")
	newClient(t, globals+`
`+siteURL("multi.localhost")+` {
	root * `+dir+`
	robots
	file_server
}
`)
	status, body := rawGet(t, httpAddr(), "GET", "/private/secret.html", at("multi.localhost"),
		"User-Agent: "+chromeUA, "User-Agent: GPTBot/1.2")
	if status != 403 || strings.Contains(body, secret) {
		t.Errorf("browser + GPTBot User-Agents: %d, want 403", status)
	}
	status, _ = rawGet(t, httpAddr(), "GET", "/private/secret.html", at("multi.localhost"),
		"User-Agent: "+chromeUA, "User-Agent: "+chromeUA)
	if status != 200 {
		t.Errorf("two browser User-Agents: %d, want 200", status)
	}
}

// TestAdversarialLogModeNoCarryOver: strikes seen in mode log do not ban
// the crawler when the site switches to enforce.
func TestAdversarialLogModeNoCarryOver(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\n")
	site := func(mode string) string {
		return globals + `
` + siteURL("logmode.localhost") + ` {
	root * ` + dir + `
	robots {
		mode ` + mode + `
		strikes 3 10m 1h
		crawl_delay off
	}
	file_server
}
`
	}
	c := newClient(t, site("log"))
	for range 6 {
		c.expect(siteURL("logmode.localhost")+"/private/secret.html", exampleUA, 200)
	}
	c.tc.InitServer(site("enforce"), "caddyfile")
	c.expect(siteURL("logmode.localhost")+"/public/", exampleUA, 200)
	c.expect(siteURL("logmode.localhost")+"/private/secret.html", exampleUA, 403)
}

// TestAdversarialForgedForwardedFor: behind trusted_proxies without
// strict, a client-chosen X-Forwarded-For address of Google's earns a
// verified Googlebot a ban, but only for the network it came from.
func TestAdversarialForgedForwardedFor(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globalsWith(`	servers {
		trusted_proxies static 127.0.0.1/32
	}
`)+siteURL("xff.localhost")+` {
	root * `+dir+`
	robots {
		strikes 3 10m 1h
		crawl_delay off
	}
	file_server
}
`)
	get := func(path, xff string) int {
		req, _ := http.NewRequest("GET", siteURL("xff.localhost")+path, nil)
		req.Header.Set("User-Agent", googleUA)
		req.Header.Set("X-Forwarded-For", xff)
		res, err := c.tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for range 4 {
		if s := get("/private/secret.html", "66.249.66.1"); s != 403 {
			t.Fatalf("forged Googlebot on a private page: %d", s)
		}
	}
	if s := get("/public/", "66.249.66.1"); s != 403 {
		t.Errorf("the network that earned the ban is not banned: %d", s)
	}
	if s := get("/public/", "66.249.70.1"); s != 200 {
		t.Errorf("the real Googlebot from another network was banned: %d", s)
	}
}

// TestAdversarialTextBrowsers: Lynx, w3m, Links and ELinks are people.
func TestAdversarialTextBrowsers(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /\n")
	c := newClient(t, globals+`
`+siteURL("text.localhost")+` {
	root * `+dir+`
	robots
	file_server
}
`)
	for _, ua := range []string{
		"Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9",
		"w3m/0.5.3+git20230121",
		"Links (2.29; Linux 6.1.0-13-amd64 x86_64; GNU C 12.2; text)",
		"ELinks/0.16.1.1 (textmode; Linux 6.1.0 x86_64; 200x50-2)",
	} {
		c.expect(siteURL("text.localhost")+"/private/secret.html", ua, 200, secret)
	}
}

// TestAdversarialHistorySurvivesRestart: the versions a crawler may still
// hold are kept in Caddy's storage, so after a restart (the handler gone
// from the config and back) a crawler holding yesterday's file is not
// refused.
func TestAdversarialHistorySurvivesRestart(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /a/\n")
	for _, d := range []string{"a", "b"} {
		_ = os.MkdirAll(filepath.Join(dir, d), 0o755)
		_ = os.WriteFile(filepath.Join(dir, d, "x"), []byte(d), 0o644)
	}
	site := globals + `
` + siteURL("history.localhost") + ` {
	root * ` + dir + `
	robots {
		refresh 1s
		crawl_delay off
		strikes off
	}
	file_server
}
`
	c := newClient(t, site)
	const reader = "FreshReader/1.0 (+https://example.org/bot)" // re-reads robots.txt
	c.expect(siteURL("history.localhost")+"/a/x", exampleUA, 403)
	if err := os.WriteFile(filepath.Join(dir, "robots.txt"), []byte("User-agent: *\nDisallow: /b/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the new version", func() bool {
		c.get(siteURL("history.localhost")+"/robots.txt", reader)
		return c.get(siteURL("history.localhost")+"/b/x", reader).status == 403
	})
	// Within grace, a crawler that never re-read the file may do /b/.
	c.expect(siteURL("history.localhost")+"/b/x", exampleUA, 200)
	time.Sleep(500 * time.Millisecond) // the history is written in the background
	// "Restart": a config without the handler drops every table, then the
	// site comes back.
	c.tc.InitServer(globals+siteURL("history.localhost")+" {\n\trespond ok\n}\n", "caddyfile")
	c.tc.InitServer(site, "caddyfile")
	c.expect(siteURL("history.localhost")+"/b/x", exampleUA, 200)
	c.expect(siteURL("history.localhost")+"/a/x", exampleUA, 200)
	// A crawler seen reading the current file gets no grace.
	c.get(siteURL("history.localhost")+"/robots.txt", reader)
	c.expect(siteURL("history.localhost")+"/b/x", reader, 403)
}

// TestAdversarialHistoryAfterPersonFirst: after a restart, a person's
// request may reach a site before any crawler does (with preferences in
// the table, it starts the site's load in the background). The crawler
// that comes next, still holding yesterday's file, is judged with the
// history read back from storage, not with today's file alone.
func TestAdversarialHistoryAfterPersonFirst(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /a/\n")
	prefs := advSite(t, "User-agent: *\nContent-Usage: train-ai=n\n")
	for _, d := range []string{"a", "b"} {
		_ = os.MkdirAll(filepath.Join(dir, d), 0o755)
		_ = os.WriteFile(filepath.Join(dir, d, "x"), []byte(d), 0o644)
	}
	robots := `robots {
		refresh 1s
		crawl_delay off
		strikes off
	}`
	site := globals + `
` + siteURL("personfirst.localhost") + ` {
	root * ` + dir + `
	` + robots + `
	file_server
}
` + siteURL("prefs-personfirst.localhost") + ` {
	root * ` + prefs + `
	` + robots + `
	file_server
}
`
	url := siteURL("personfirst.localhost")
	const reader = "FreshReader/1.0 (+https://example.org/bot)" // re-reads robots.txt
	c := newClient(t, site)
	c.expect(url+"/a/x", exampleUA, 403)
	if err := os.WriteFile(filepath.Join(dir, "robots.txt"), []byte("User-agent: *\nDisallow: /b/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the new version", func() bool {
		c.get(url+"/robots.txt", reader)
		return c.get(url+"/b/x", reader).status == 403
	})
	time.Sleep(500 * time.Millisecond) // the history is written in the background
	for round := range 3 {
		c.tc.InitServer(globals+siteURL("personfirst.localhost")+" {\n\trespond ok\n}\n", "caddyfile")
		c.tc.InitServer(site, "caddyfile")
		// A version with preferences in the table, so people's requests
		// load sites; then a person first, the crawler right after.
		c.expect(siteURL("prefs-personfirst.localhost")+"/", exampleUA, 200)
		c.expect(url+"/", chromeUA, 200)
		if res := c.get(url+"/b/x", exampleUA); res.status != 200 {
			t.Fatalf("round %d: a crawler holding the old file got %d for /b/x after a person's request came first", round, res.status)
		}
	}
}
