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
