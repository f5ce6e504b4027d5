package admin

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// TestUnavailableSiteSaysNoCopy: a site with no copy of robots.txt yet is
// shown as such, with the unavailable rule crawlers get, never as keeping
// a "last good" copy.
func TestUnavailableSiteSaysNoCopy(t *testing.T) {
	now := time.Now()
	s := Site{Source: "site", Mode: "enforce", Unavailable: "disallow"}
	ss := siteStatusOf(s, sites.Status{Host: "down.example", State: "unavailable", LastResult: "server_error", LastFetch: now}, now)
	if !strings.Contains(ss.NoCopy, "no copy of robots.txt yet") || !strings.Contains(ss.NoCopy, "disallow") {
		t.Fatalf("NoCopy = %q", ss.NoCopy)
	}
	if ok := siteStatusOf(s, sites.Status{Host: "up.example", State: "ok"}, now); ok.NoCopy != "" {
		t.Errorf("a site with a copy: NoCopy = %q", ok.NoCopy)
	}
	var buf bytes.Buffer
	data := pageData{StatusReport: StatusReport{Time: now, Handlers: []HandlerStatus{{Source: "site", Mode: "enforce", Sites: []SiteStatus{ss}}}}}
	if err := statusPage.Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "no copy of robots.txt yet") {
		t.Error("the page does not say the site has no copy yet")
	}
}

// TestSiteWarningsShown: a site whose robots.txt loaded with warnings is
// shown "ok, but" with each warning, on the page and in the JSON's
// warnings; a site without any has an empty list.
func TestSiteWarningsShown(t *testing.T) {
	now := time.Now()
	s := Site{Source: "site", Mode: "enforce"}
	html := siteStatusOf(s, sites.Status{Host: "html.example", State: "ok", Warnings: []string{"an HTML page, not a robots.txt"},
		Versions: []sites.VersionStatus{{ID: "v1", Current: true, From: now}}}, now)
	good := siteStatusOf(s, sites.Status{Host: "good.example", State: "ok", Versions: []sites.VersionStatus{{ID: "v2", Current: true, From: now}}}, now)
	if len(html.Warnings) != 1 || good.Warnings == nil || len(good.Warnings) != 0 {
		t.Fatalf("warnings %q and %q", html.Warnings, good.Warnings)
	}
	var buf bytes.Buffer
	data := pageData{StatusReport: StatusReport{Time: now, Handlers: []HandlerStatus{{Source: "site", Mode: "enforce", Sites: []SiteStatus{html, good}}}}}
	if err := statusPage.Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "ok, but") || !strings.Contains(page, "an HTML page, not a robots.txt") {
		t.Error("the page shows the HTML robots.txt as plain ok")
	}
	if n := strings.Count(page, `<span class="ok">ok</span>`); n != 1 {
		t.Errorf("%d plain ok, want 1 (the good site)", n)
	}
}

// TestLogModeBansApart: a ban earned in mode log (scope "log|…") is not a
// ban in force: /robots/bans marks it mode log and counts it apart, the
// handler's count of bans in force leaves it out, and the page lists it
// under "would be banned (log mode)", not under bans in force.
func TestLogModeBansApart(t *testing.T) {
	policy := state.StrikePolicy{Strikes: 1, Window: time.Minute, Ban: time.Hour}
	mem := state.NewMemory(state.MemoryConfig{})
	now := time.Now()
	ban := func(name, site, ip string) {
		id := state.NewIdentity(name, false, netip.MustParseAddr(ip))
		id.Site = site
		if res, err := mem.Strike(context.Background(), id, policy, now, state.StrikeInfo{Crawler: name, Token: "*", Line: 2}); err != nil || !res.Banned {
			t.Fatalf("strike: %+v %v", res, err)
		}
	}
	ban("EnforcedBot", "h:aaaaaaaaaaaa", "198.51.100.1")
	ban("LoggedBot", "log|h:bbbbbbbbbbbb", "198.51.100.2")
	site := Site{Source: "inline", Mode: "enforce", Strikes: policy, Store: mem, StoreType: "memory"}

	rep := Bans(context.Background(), []Site{site}, now)
	if rep.InForce != 1 || rep.LogMode != 1 || len(rep.Bans) != 2 {
		t.Fatalf("in force %d, log mode %d, listed %d; want 1, 1, 2", rep.InForce, rep.LogMode, len(rep.Bans))
	}
	for _, b := range rep.Bans {
		if want := map[string]string{"EnforcedBot": "enforce", "LoggedBot": "log"}[b.Crawler]; b.Mode != want {
			t.Errorf("%s: mode %q, want %q", b.Crawler, b.Mode, want)
		}
	}
	st := Status(context.Background(), []Site{site}, now)
	if c := st.Handlers[0].Bans; c.Count != 1 || c.Logged != 1 {
		t.Errorf("status bans %+v, want count 1 (in force), logged 1", c)
	}

	w := httptest.NewRecorder()
	api := &API{Sites: func() []Site { return []Site{site} }}
	if err := api.servePage(w, httptest.NewRequest("GET", "/robots/", nil)); err != nil {
		t.Fatal(err)
	}
	page := w.Body.String()
	inForce, logged, ok := strings.Cut(page, "Would be banned (log mode)")
	if !ok {
		t.Fatal("the page has no section of log-mode bans")
	}
	if !strings.Contains(inForce, "EnforcedBot") || strings.Contains(inForce, "LoggedBot") {
		t.Error("the bans in force must list EnforcedBot and not LoggedBot")
	}
	if !strings.Contains(logged, "LoggedBot") || strings.Contains(logged, "EnforcedBot") {
		t.Error("the log-mode section must list LoggedBot only")
	}
	if !strings.Contains(page, `<b class="bad">1</b><span>bans in force</span>`) {
		t.Error("the tile must count 1 ban in force")
	}
}

// TestRefusedWhileUnavailableApart: the 503s of an unavailable robots.txt
// are shown on their own line, not as offenders.
func TestRefusedWhileUnavailableApart(t *testing.T) {
	now := time.Now()
	hs := handlerStatusOf(0, Site{Source: "site", Mode: "enforce", RefusedUnavailable: 5,
		TopCrawlers: []CrawlerCount{{Name: "PoliteBot", Unavailable: 5}}}, now)
	if hs.RefusedUnavailable != 5 || len(hs.TopOffenders) != 0 {
		t.Fatalf("status %+v", hs)
	}
	var buf bytes.Buffer
	if err := statusPage.Execute(&buf, pageData{StatusReport: StatusReport{Time: now, Handlers: []HandlerStatus{hs}}}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "Refused while robots.txt unavailable: 5") || !strings.Contains(page, "No refusals.") {
		t.Error("the page must count the unavailable 503s apart and list no offender")
	}
}
