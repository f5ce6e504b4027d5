package admin

import (
	"bytes"
	"strings"
	"testing"
	"time"

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
