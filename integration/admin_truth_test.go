package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// TestAdminStatusPageTellsTheTruth: through a real Caddy with two robots
// site blocks, the status page (rendered in headless Chromium) and its JSON
// name each block, list each site under the block serving it, and do not
// show green where it is broken: an HTML robots.txt is "ok, but" with a
// warning, a site whose robots.txt never loaded says it has no copy yet
// and its 503s are counted apart from the offenders, and a ban earned in
// mode log is listed as "would be banned (log mode)", not in force (nor in
// caddy_robots_bans_in_force).
func TestAdminStatusPageTellsTheTruth(t *testing.T) {
	chromium := chromiumtest.Find(t)
	backend.set("truth-html.localhost", 200, "<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body>Our shop</body></html>\n")
	backend.set("truth-down.localhost", http.StatusServiceUnavailable, "maintenance")
	backend.set("truth-log.localhost", 200, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globals+siteURL("truth-html.localhost")+", "+siteURL("truth-down.localhost")+` {
	robots {
		strikes 2 10m 1h
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`+siteURL("truth-log.localhost")+` {
	robots {
		mode log
		strikes 2 10m 1h
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`+statusPageSite("truth-status.localhost"))
	settle(c, siteURL("truth-html.localhost")+"/")
	// Memory stores outlive a config load: start from no ban at all, so
	// the counts below are this test's.
	adminJSON(t, http.MethodDelete, "/robots/bans?all=true", nil, http.StatusOK, nil)
	const polite = "PoliteBot/1.0 (+https://polite.example/bot)"
	const rude = "RudeBot/1.0 (+https://rude.example/bot)"
	c.expect(siteURL("truth-html.localhost")+"/shop", polite, 200)
	for range 2 {
		c.expect(siteURL("truth-down.localhost")+"/page", polite, http.StatusServiceUnavailable)
	}
	// Mode log: never refused, but two strikes earn a (logged) ban.
	c.expect(siteURL("truth-log.localhost")+"/private/1", rude, 200)
	c.expect(siteURL("truth-log.localhost")+"/private/2", rude, 200)
	c.expect(siteURL("truth-log.localhost")+"/public", rude, 200)

	checkTruthStatus(t)
	checkTruthBans(t)
	checkTruthPage(t, chromium)
}

// checkTruthStatus checks /robots/status for TestAdminStatusPageTellsTheTruth:
// each card names its site block and lists its own sites, an HTML
// robots.txt warns, an unavailable site has no copy yet, its 503s are
// counted apart from offenders, and the log-mode ban is counted apart.
func checkTruthStatus(t *testing.T) {
	t.Helper()
	var st struct {
		Handlers []struct {
			SiteBlock string `json:"site_block"`
			Sites     []struct {
				Host     string   `json:"host"`
				State    string   `json:"state"`
				NoCopy   string   `json:"no_copy"`
				Warnings []string `json:"warnings"`
			} `json:"sites"`
			Offenders []struct {
				Crawler     string `json:"crawler"`
				Refused     int    `json:"refused"`
				WouldRefuse int    `json:"would_refuse"`
			} `json:"top_offenders"`
			RefusedUnavailable int `json:"refused_while_unavailable"`
			Bans               struct {
				Count  int `json:"count"`
				Logged int `json:"logged"`
			} `json:"bans"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	if len(st.Handlers) != 2 {
		t.Fatalf("%d handlers, want 2: %+v", len(st.Handlers), st.Handlers)
	}
	shop, logged := st.Handlers[0], st.Handlers[1]
	if !strings.HasPrefix(shop.SiteBlock, "truth-down.localhost, truth-html.localhost on ") || !strings.HasPrefix(logged.SiteBlock, "truth-log.localhost on ") {
		t.Errorf("site blocks %q and %q", shop.SiteBlock, logged.SiteBlock)
	}
	hosts := map[string]bool{}
	for _, s := range shop.Sites {
		hosts[s.Host] = true
		switch s.Host {
		case "truth-html.localhost":
			if s.State != "ok" || len(s.Warnings) == 0 || !strings.Contains(s.Warnings[0], "an HTML page") {
				t.Errorf("the HTML robots.txt: %+v, want ok with an HTML warning", s)
			}
		case "truth-down.localhost":
			if s.State != "unavailable" || !strings.Contains(s.NoCopy, "no copy of robots.txt yet") || !strings.Contains(s.NoCopy, "disallow") {
				t.Errorf("the unavailable site: %+v, want no copy yet under the disallow rule", s)
			}
		}
	}
	if len(hosts) != 2 || hosts["truth-log.localhost"] {
		t.Errorf("the shop's block lists %v, want its own two sites", hosts)
	}
	if len(logged.Sites) != 1 || logged.Sites[0].Host != "truth-log.localhost" {
		t.Errorf("the log block lists %+v, want truth-log.localhost alone", logged.Sites)
	}
	if shop.RefusedUnavailable != 2 || len(shop.Offenders) != 0 {
		t.Errorf("refused while unavailable %d, offenders %+v; want 2 and none", shop.RefusedUnavailable, shop.Offenders)
	}
	// Mode log refuses nothing: RudeBot's disallowed requests (and the
	// one after its logged ban) are what enforce would refuse.
	if o := logged.Offenders; len(o) != 1 || o[0].Crawler != "RudeBot" || o[0].Refused != 0 || o[0].WouldRefuse != 3 {
		t.Errorf("the log block's offenders %+v, want RudeBot with 0 refused and 3 that enforce would refuse", o)
	}
	if logged.Bans.Count != 0 || logged.Bans.Logged != 1 {
		t.Errorf("log block's bans %+v, want none in force and 1 logged", logged.Bans)
	}
	if shop.Bans.Count != 0 || shop.Bans.Logged != 0 {
		t.Errorf("the shop's bans %+v, want none: the logged ban is the other block's (they share a store)", shop.Bans)
	}
}

// checkTruthBans checks that /robots/bans and the ban metrics tell the
// log-mode ban apart from bans in force.
func checkTruthBans(t *testing.T) {
	t.Helper()
	var bans struct {
		Bans []struct {
			Crawler string `json:"crawler"`
			Mode    string `json:"mode"`
		} `json:"bans"`
		InForce int `json:"in_force"`
		LogMode int `json:"log_mode"`
	}
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &bans)
	if len(bans.Bans) != 1 || bans.Bans[0].Crawler != "RudeBot" || bans.Bans[0].Mode != "log" || bans.InForce != 0 || bans.LogMode != 1 {
		t.Errorf("/robots/bans: %+v, want RudeBot's ban in mode log alone", bans)
	}
	if n := metricValue(t, adminURL()+"/metrics", `caddy_robots_bans_in_force{store="memory"}`); n != 0 {
		t.Errorf("caddy_robots_bans_in_force = %v, want 0: a log-mode ban is not in force", n)
	}
	if n := metricValue(t, adminURL()+"/metrics", `caddy_robots_bans_logged{store="memory"}`); n != 1 {
		t.Errorf("caddy_robots_bans_logged = %v, want 1", n)
	}
}

// checkTruthPage checks the status page's texts and renders it in
// headless Chromium.
func checkTruthPage(t *testing.T, chromium string) {
	t.Helper()
	status, page := admin(t, http.MethodGet, "/robots/", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /robots/: %d %s", status, page)
	}
	for _, want := range []string{`<h2 class="site-block">truth-down.localhost, truth-html.localhost on `, `<h2 class="site-block">truth-log.localhost on `,
		"ok, but", "an HTML page, not a robots.txt", "no copy of robots.txt yet", "Refused while robots.txt unavailable: 2",
		"Would be banned (log mode)", "No ban in force.", `<b>3</b><span>sites</span>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "<h2>Handler 0") {
		t.Error("the page names a card Handler 0, not its site block")
	}

	shot := os.Getenv("ROBOTS_SCREENSHOT_TRUTH")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "truth.png")
	}
	img := chromiumtest.Screenshot(t, chromium, siteURL("truth-status.localhost")+"/robots/", 1100, 3300, shot)
	colours, dark := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r < 60 && g < 60 && b < 70 })
	if colours < 8 || dark < 1100*20 {
		t.Errorf("screenshot looks blank: %d colours, %d dark pixels", colours, dark)
	}
	// The log-mode tile and the warnings render in the page's orange.
	_, orange := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r > 0xa0 && g > 0x40 && g < 0x70 && b < 0x20 })
	if orange < 200 {
		t.Errorf("only %d orange pixels: the warnings did not render", orange)
	}
}
