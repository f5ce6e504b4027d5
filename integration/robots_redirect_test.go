package integration

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

// TestRobotsRedirectAcrossHosts: a site whose /robots.txt redirects to
// another host (another site block, on another port) is held to the file
// it reaches, as RFC 9309 §2.3.1.2 crawlers are: five redirects in all are
// followed, a sixth is not (no rules), a loop is refused at once, and
// /robots/status names the URL the rules were read from.
func TestRobotsRedirectAcrossHosts(t *testing.T) {
	ports, err := freeport.Take(1)
	if err != nil {
		t.Fatal(err)
	}
	static := "http://" + hostPort("127.0.0.1", ports[0])
	var chain strings.Builder
	for i := 1; i < 6; i++ {
		chain.WriteString("\tredir /h" + strconv.Itoa(i) + " /h" + strconv.Itoa(i+1) + " 302\n")
	}
	siteBlock := func(host, target string) string {
		return siteURL(host) + ` {
	redir /robots.txt ` + target + ` 301
	robots {
		crawl_delay off
	}
	respond "app:{path}"
}
`
	}
	c := newClient(t, globals+
		siteBlock("crosshost.localhost", static+"/robots.txt")+
		siteBlock("fivehops.localhost", static+"/h2")+
		siteBlock("sixhops.localhost", static+"/h1")+
		siteBlock("crossloop.localhost", static+"/back")+
		static+` {
	respond /robots.txt <<TXT
		User-agent: *
		Disallow: /from-static/
		TXT
`+chain.String()+`	respond /h6 <<TXT
		User-agent: *
		Disallow: /deep/
		TXT
	redir /back `+siteURL("crossloop.localhost")+`/robots.txt 302
	respond "static:{path}"
}
`)
	// The rule of the file on the other host is enforced.
	c.expect(siteURL("crosshost.localhost")+"/from-static/page", exampleUA, 403, "Disallow: /from-static/")
	c.expect(siteURL("crosshost.localhost")+"/other", exampleUA, 200, "app:/other")
	c.expect(siteURL("crosshost.localhost")+"/from-static/page", chromeUA, 200, "app:/from-static/page")
	// Five redirects (the site's, then /h2 to /h6): followed.
	c.expect(siteURL("fivehops.localhost")+"/deep/x", exampleUA, 403, "Disallow: /deep/")
	// Six: the file is taken as unavailable, i.e. no rules.
	c.expect(siteURL("sixhops.localhost")+"/deep/x", exampleUA, 200, "app:/deep/x")
	// A loop back to the site: no rules, at once.
	c.expect(siteURL("crossloop.localhost")+"/deep/x", exampleUA, 200, "app:/deep/x")

	var st struct {
		Handlers []struct {
			Sites []struct {
				Host  string `json:"host"`
				Fetch *struct {
					Result   string `json:"result"`
					Error    string `json:"error"`
					FinalURL string `json:"final_url"`
				} `json:"fetch"`
				Versions []struct {
					FinalURL string `json:"final_url"`
				} `json:"versions"`
			} `json:"sites"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	want := map[string][3]string{ // result, final URL, error
		"crosshost.localhost": {"ok", static + "/robots.txt", ""},
		"fivehops.localhost":  {"ok", static + "/h6", ""},
		"sixhops.localhost":   {"redirect", static + "/h5", "more than 5 redirects"}, // the last URL asked
		"crossloop.localhost": {"redirect", static + "/back", "redirect loop at " + siteURL("crossloop.localhost") + "/robots.txt"},
	}
	found := map[string]bool{}
	for _, h := range st.Handlers {
		for _, s := range h.Sites {
			w, ok := want[s.Host]
			if !ok || found[s.Host] {
				continue
			}
			found[s.Host] = true
			if s.Fetch == nil || s.Fetch.Result != w[0] || s.Fetch.FinalURL != w[1] || !strings.Contains(s.Fetch.Error, w[2]) {
				t.Errorf("%s: fetch %+v, want %v", s.Host, s.Fetch, w)
			}
			if w[0] == "ok" && (len(s.Versions) == 0 || s.Versions[0].FinalURL != w[1]) {
				t.Errorf("%s: versions %+v, want the current one read from %s", s.Host, s.Versions, w[1])
			}
		}
	}
	if len(found) != len(want) {
		t.Errorf("sites in /robots/status: %v, want %d", found, len(want))
	}
	_, page := admin(t, http.MethodGet, "/robots/", nil)
	if !strings.Contains(string(page), "read from <code>"+static+"/robots.txt</code>") {
		t.Error("the status page does not show where crosshost.localhost's rules were read")
	}
}
