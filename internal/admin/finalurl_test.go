package admin

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// TestStatusFinalURL: a site whose robots.txt redirected to another host
// shows the URL it was read from, in the JSON and on the page.
func TestStatusFinalURL(t *testing.T) {
	now := time.Now()
	const final = "https://static.example/robots.txt"
	ss := siteStatusOf(Site{}, sites.Status{Host: "a.example", State: "ok", LastFetch: now, LastResult: "ok", FinalURL: final,
		Versions: []sites.VersionStatus{{ID: "v1", From: now, Current: true, FinalURL: final}}}, now)
	js, err := json.Marshal(ss)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(js), `"final_url":"`+final+`"`); got != 2 {
		t.Errorf("final_url %d times in %s, want 2 (fetch and version)", got, js)
	}
	var buf bytes.Buffer
	data := pageData{StatusReport: StatusReport{Time: now, Handlers: []HandlerStatus{{Source: "site", Mode: "enforce", Sites: []SiteStatus{ss}}}}}
	if err := statusPage.Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "read from <code>"+final+"</code>") {
		t.Error("the page does not show the final URL")
	}
	plain := siteStatusOf(Site{}, sites.Status{Host: "b.example", State: "ok", LastFetch: now, LastResult: "ok"}, now)
	if js, _ := json.Marshal(plain); strings.Contains(string(js), "final_url") {
		t.Errorf("a site that answered itself shows a final_url: %s", js)
	}
}
