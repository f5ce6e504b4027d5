package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const prefsRobots = `User-agent: *
Disallow: /private/
Content-Usage: train-ai=n
Content-Usage: /ok/ train-ai=y
Content-Signal: search=yes, ai-input=no
`

// TestPreferencesEnforce: with preferences enforce, a crawler whose
// documented purpose the preference for the path excludes is refused
// (403 naming the line, no strike); others, and people, are not; the
// placeholders show the preference to everyone, and preferences header
// adds Content-Usage without replacing the backend's.
func TestPreferencesEnforce(t *testing.T) {
	dir := advSite(t, prefsRobots)
	_ = os.MkdirAll(filepath.Join(dir, "ok"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "ok", "page.html"), []byte("ok page"), 0o644)
	c := newClient(t, globals+`
`+siteURL("prefs.localhost")+` {
	root * `+dir+`
	robots {
		preferences enforce
		crawl_delay off
		strikes 3 10m 1h
	}
	handle /show {
		respond "usage=[{http.robots.content_usage}] signal=[{http.robots.content_signal}]"
	}
	handle {
		file_server
	}
}
`+siteURL("prefsheader.localhost")+` {
	root * `+dir+`
	robots {
		preferences header
	}
	handle /backend/* {
		header Content-Usage "train-ai=y"
		respond "backend"
	}
	handle {
		file_server
	}
}
`+siteURL("prefsoff.localhost")+` {
	root * `+dir+`
	robots
	file_server
}
`)
	base := siteURL("prefs.localhost")
	// GPTBot trains AI: train-ai=n at /, train-ai=y under /ok/.
	for range 5 {
		c.expect(base+"/index.html", gptbotUA, 403, "AI usage preference", "train-ai=n (line 3)", "not a strike")
	}
	c.expect(base+"/ok/page.html", gptbotUA, 200, "ok page") // five refusals were no strikes
	// PerplexityBot answers questions with AI: ai-input=no applies.
	c.expect(base+"/ok/page.html", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", 403, "ai-input=no")
	// A search crawler (search=yes), a crawler of unknown purpose, and a
	// person: never refused for a preference.
	c.expect(base+"/index.html", bingUA, 200)
	c.expect(base+"/index.html", exampleUA, 200)
	c.expect(base+"/index.html", chromeUA, 200)
	// Rules still apply first: a disallowed path is refused by its rule.
	c.expect(base+"/private/secret.html", bingUA, 403, "Disallow: /private/")
	// The placeholders, for people too.
	c.expect(base+"/show", chromeUA, 200, "usage=[train-ai=n]", "ai-input=no", "search=yes")

	// preferences header: the applicable Content-Usage, never replacing
	// the backend's; preferences expose (default) refuses nothing.
	get := func(url string) *http.Response {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("User-Agent", chromeUA)
		res, err := c.tc.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	// A person's first request starts the load of the site's rules in the
	// background; the header follows as soon as they are there.
	eventually(t, 5*time.Second, "the Content-Usage header", func() bool {
		return get(siteURL("prefsheader.localhost")+"/index.html").Header.Get("Content-Usage") != ""
	})
	if h := get(siteURL("prefsheader.localhost") + "/index.html").Header.Get("Content-Usage"); h != "train-ai=n" {
		t.Errorf("Content-Usage at /: %q, want train-ai=n", h)
	}
	if h := get(siteURL("prefsheader.localhost") + "/ok/page.html").Header.Get("Content-Usage"); h != "train-ai=y" {
		t.Errorf("Content-Usage under /ok/: %q, want train-ai=y", h)
	}
	if h := get(siteURL("prefsheader.localhost") + "/backend/x").Header.Values("Content-Usage"); len(h) != 1 || h[0] != "train-ai=y" {
		t.Errorf("backend's Content-Usage replaced or doubled: %q", h)
	}
	c.expect(siteURL("prefsheader.localhost")+"/index.html", gptbotUA, 200)
	if res := c.get(siteURL("prefsoff.localhost")+"/index.html", gptbotUA); res.status != 200 || strings.Contains(res.body, "preference") {
		t.Errorf("preferences expose refused GPTBot: %d", res.status)
	}
}
