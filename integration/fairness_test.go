package integration

// Who earned it: throttles, strikes and bans belong to the crawler that
// earned them, not to its neighbours on the same address, nor to the Host
// header it sends.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFairnessNeighbours: two compliant crawlers that honour Crawl-delay 1
// and a rogue that ignores robots.txt, all from one address, for 16 s. The
// compliant ones get no 403 and no 503; the rogue is throttled and banned.
func TestFairnessNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("16 s of real time")
	}
	dir := advSite(t, "User-agent: *\nDisallow: /private/\nCrawl-delay: 1\n")
	c := newClient(t, globals+siteURL("neighbours.localhost")+` {
	root * `+dir+`
	robots
	file_server
}
`)
	u := siteURL("neighbours.localhost")
	type tally struct {
		mu     sync.Mutex
		status map[int]int
	}
	run := func(ua string, every time.Duration, paths []string, tl *tally, until time.Time, wg *sync.WaitGroup) {
		defer wg.Done()
		for i := 0; time.Now().Before(until); i++ {
			res := c.get(u+paths[i%len(paths)], ua)
			tl.mu.Lock()
			tl.status[res.status]++
			tl.mu.Unlock()
			time.Sleep(every)
		}
	}
	until := time.Now().Add(16 * time.Second)
	polite := []string{"/index.html", "/public/index.html"}
	rude := []string{"/private/secret.html", "/public/index.html", "/private/a", "/index.html"}
	a, b, r := &tally{status: map[int]int{}}, &tally{status: map[int]int{}}, &tally{status: map[int]int{}}
	var wg sync.WaitGroup
	wg.Add(3)
	go run("PoliteBotA/1.0 (+https://a.example/bot)", 1100*time.Millisecond, polite, a, until, &wg)
	go run("PoliteBotB/2.0 (+https://b.example/bot)", 1100*time.Millisecond, polite, b, until, &wg)
	go run("RudeBot/1.0 (+https://rude.example/bot)", 50*time.Millisecond, rude, r, until, &wg)
	wg.Wait()
	for name, tl := range map[string]*tally{"PoliteBotA": a, "PoliteBotB": b} {
		if tl.status[403] > 0 || tl.status[503] > 0 || tl.status[200] < 10 {
			t.Errorf("%s, compliant beside a rogue on its address: %v", name, tl.status)
		}
	}
	if r.status[503] == 0 || r.status[403] < 10 {
		t.Errorf("the rogue was not throttled and banned: %v", r.status)
	}
	if res := c.get(u+"/index.html", "RudeBot/1.0 (+https://rude.example/bot)"); res.status != 403 || !strings.Contains(res.body, "banned") {
		t.Errorf("the rogue after 16 s: %d %q, want banned", res.status, res.body)
	}
	t.Logf("PoliteBotA %v, PoliteBotB %v, RudeBot %v", a.status, b.status, r.status)
}

// TestFairnessBanScope: a ban on a catch-all site holds whatever Host the
// bot sends next; it does not reach another site block.
func TestFairnessBanScope(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globals+fmt.Sprintf("http://:%d", httpPort)+` {
	root * `+dir+`
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
	}
	file_server
}
`+siteURL("other.localhost")+` {
	root * `+dir+`
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
	}
	file_server
}
`)
	const ua = "HostHopper/1.0 (+https://hop.example/bot)"
	get := func(host, path string) response {
		t.Helper()
		res := c.get(siteURL(host)+path, ua)
		return res
	}
	get("a.example", "/private/1")
	get("a.example", "/private/2")
	for _, host := range []string{"a.example", "b.example", "127.0.0.1", "A.EXAMPLE."} {
		if res := get(host, "/index.html"); res.status != 403 || !strings.Contains(res.body, "banned") {
			t.Errorf("banned on the catch-all as a.example, then Host %s: %d %q", host, res.status, res.body)
		}
	}
	if res := get("other.localhost", "/index.html"); res.status != 200 {
		t.Errorf("the ban reached another site block: %d %q", res.status, res.body)
	}
}

// TestFairnessLogModeSwitch: after mode log → enforce, the first refusal
// and the ban of the new mode are logged at INFO, whatever log mode logged.
func TestFairnessLogModeSwitch(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /private/\n")
	logFile := filepath.Join(t.TempDir(), "robots.log")
	site := func(mode string) string {
		return globalsWith("\tlog robots {\n\t\tinclude http.handlers.robots\n\t\toutput file "+logFile+"\n\t\tlevel INFO\n\t}\n") +
			siteURL("switch.localhost") + ` {
	root * ` + dir + `
	robots {
		mode ` + mode + `
		strikes 3 10m 1h
	}
	file_server
}
`
	}
	const ua = "SwitchBot/1.0 (+https://switch.example/bot)"
	c := newClient(t, site("log"))
	for i := range 4 {
		c.get(siteURL("switch.localhost")+fmt.Sprintf("/private/%d", i), ua)
	}
	c = newClient(t, site("enforce"))
	for i := range 4 {
		c.get(siteURL("switch.localhost")+fmt.Sprintf("/private/e%d", i), ua)
	}
	var log string
	eventually(t, 10*time.Second, "the enforce mode's lines", func() bool {
		b, _ := os.ReadFile(logFile)
		log = string(b)
		return strings.Contains(log, `"crawler banned"`) || strings.Contains(log, "robots: crawler banned")
	})
	var refusedEnforce, bannedEnforce bool
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.Contains(line, `"mode":"enforce"`) {
			continue
		}
		refusedEnforce = refusedEnforce || strings.Contains(line, "robots: request refused")
		bannedEnforce = bannedEnforce || strings.Contains(line, "robots: crawler banned")
	}
	if !refusedEnforce || !bannedEnforce {
		t.Errorf("after log → enforce: refusal logged %v, ban logged %v:\n%s", refusedEnforce, bannedEnforce, log)
	}
}

// TestFairnessGoogleIndexRule: with Disallow: / and Allow:
// /public/index.html, Google's parser allows /public/ (its index.html
// rule). RFC 9309 refuses it, so the request gets 403, but a crawler that
// follows Google's documented reading is not struck for it: many such
// requests ban neither a Googlebot claim nor another crawler. A path that
// every reading refuses still earns strikes and a ban.
func TestFairnessGoogleIndexRule(t *testing.T) {
	robots := "User-agent: *\nDisallow: /\nAllow: /public/index.html\n"
	dir := advSite(t, robots)
	c := newClient(t, globals+siteURL("indexrule.localhost")+` {
	root * `+dir+`
	robots {
		strikes 3 10m 1h
	}
	file_server
}
`)
	u := siteURL("indexrule.localhost")
	for _, ua := range []string{googleUA, "IndexBot/1.0 (+https://index.example/bot)"} {
		for i := range 8 {
			res := c.get(u+"/public/", ua)
			if res.status != 403 || !strings.Contains(res.body, "No strike: ") || !strings.Contains(res.body, "index.html rule") {
				t.Fatalf("%s, request %d for /public/: %d %q, want 403 with no strike by Google's index.html rule", ua, i+1, res.status, res.body)
			}
		}
		if res := c.get(u+"/public/index.html", ua); res.status != 200 {
			t.Errorf("%s after eight requests Google's reading allows: %d %q, want 200 (not banned)", ua, res.status, res.body)
		}
	}
	// Every reading refuses /private/: three strikes ban.
	const rogue = "RudeIndexBot/1.0 (+https://rude.example/bot)"
	for range 3 {
		c.expect(u+"/private/secret.html", rogue, 403)
	}
	if res := c.get(u+"/public/index.html", rogue); res.status != 403 || !strings.Contains(res.body, "banned") {
		t.Errorf("three unambiguous refusals did not ban: %d %q", res.status, res.body)
	}
}

// TestFairnessCocCocToken: Coc Coc's web robot obeys the group that names
// coccocbot-web (its documented token), else coccocbot, else "*". A site
// that allows it by that name while "*" disallows everything serves it,
// and a group for coccocbot governs it when none names coccocbot-web.
func TestFairnessCocCocToken(t *testing.T) {
	dir := advSite(t, "User-agent: *\nDisallow: /\n")
	c := newClient(t, globals+siteURL("coccoc.localhost")+` {
	root * `+dir+`
	robots {
		source inline "User-agent: coccocbot-web\nAllow: /\n\nUser-agent: coccocbot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /\n"
		crawl_delay off
		strikes 3 10m 1h
	}
	file_server
}
`)
	u := siteURL("coccoc.localhost")
	const web = "Mozilla/5.0 (compatible; coccocbot-web/1.0; +http://help.coccoc.com/searchengine)"
	for range 4 {
		c.expect(u+"/index.html", web, 200, "home")
		c.expect(u+"/private/secret.html", web, 200, secret)
	}
	const image = "Mozilla/5.0 (compatible; coccocbot-image/1.0; +http://help.coccoc.com/searchengine)"
	c.expect(u+"/index.html", image, 200, "home")
	c.expect(u+"/private/secret.html", image, 403, "User-agent: coccocbot")
}
