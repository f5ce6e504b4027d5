package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// admin sends a request to the admin API and returns the status and body.
func admin(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, adminURL()+path, rd)
	if err != nil {
		t.Fatalf("building %s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// The admin endpoint is replaced on each config load, like the site.
	c := &http.Client{Timeout: 30 * time.Second, Transport: resetRetrier{&http.Transport{DisableKeepAlives: true}}}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading %s %s: %v", method, path, err)
	}
	return res.StatusCode, out
}

// adminJSON sends a request to the admin API, expects want and decodes the
// answer into v.
func adminJSON(t *testing.T, method, path string, body any, want int, v any) {
	t.Helper()
	status, out := admin(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, out)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, out, err)
		}
	}
}

// The parts of the admin API's answers the tests read.
type (
	adminStatus struct {
		Handlers []struct {
			Index  int    `json:"index"`
			Source string `json:"source"`
			Server string `json:"server"`
			Sites  []struct {
				Host     string `json:"host"`
				State    string `json:"state"`
				Version  string `json:"version"`
				Versions []struct {
					ID      string `json:"id"`
					InGrace bool   `json:"in_grace"`
				} `json:"versions"`
				AgeSeconds *float64 `json:"age_seconds"`
				Fetch      *struct {
					Result string `json:"result"`
					Error  string `json:"error"`
				} `json:"fetch"`
			} `json:"sites"`
			TopCrawlers []struct {
				Name    string `json:"crawler"`
				Allowed int    `json:"allowed"`
				Refused int    `json:"refused"`
			} `json:"top_crawlers"`
			TopOffenders []struct {
				Name    string `json:"crawler"`
				Refused int    `json:"refused"`
			} `json:"top_offenders"`
			Bans struct {
				Count int `json:"count"`
			} `json:"bans"`
			Store struct {
				Type    string `json:"type"`
				Healthy bool   `json:"healthy"`
			} `json:"store"`
		} `json:"handlers"`
	}
	adminCheck struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
		Crawler  string `json:"crawler"`
		Group    string `json:"group"`
		Rule     string `json:"rule"`
		Line     int    `json:"line"`
		Version  string `json:"version"`
	}
	adminBans struct {
		Bans []struct {
			Identity string    `json:"identity"`
			Crawler  string    `json:"crawler"`
			Site     string    `json:"site"`
			Network  string    `json:"network"`
			Until    time.Time `json:"until"`
			Reason   string    `json:"reason"`
		} `json:"bans"`
	}
	adminReload struct {
		Reloaded []struct {
			Host     string `json:"host"`
			Result   string `json:"result"`
			Error    string `json:"error"`
			Previous string `json:"previous"`
			Version  string `json:"version"`
			Changed  bool   `json:"changed"`
		} `json:"reloaded"`
	}
)

// settle waits until a browser's GET of url gets an answer: the first
// connection after a config load can meet the old server as it shuts
// down (EOF). A browser's request changes no state.
func settle(c client, url string) {
	t := c.t
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", chromeUA)
		res, err := c.tc.Client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// siteVersion returns the current robots.txt version of host from
// /robots/status, and whether the site is listed.
func siteVersion(t *testing.T, host string) (string, bool) {
	t.Helper()
	var st adminStatus
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	for _, h := range st.Handlers {
		for _, s := range h.Sites {
			if s.Host == host {
				if s.State != "ok" || s.Fetch == nil || s.Fetch.Result != "ok" || s.AgeSeconds == nil {
					t.Errorf("status of %s: %+v", host, s)
				}
				return s.Version, true
			}
		}
	}
	return "", false
}

// TestAdminStatusCheckBans: the status lists the site's version once a bot
// came; a check explains a refusal without counting it; a ban made by
// real requests is listed, lifted by DELETE, and the bot is allowed again.
func TestAdminStatusCheckBans(t *testing.T) {
	backend.set("adm.localhost", 200, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globals+siteURL("adm.localhost")+` {
	robots {
		strikes 2 10m 1h
		crawl_delay off
	}
	reverse_proxy `+backend.addr+`
}
`)
	settle(c, siteURL("adm.localhost")+"/")
	const bot = "AdminTestBot/1.0 (+https://admin-test.example/bot)"
	c.expect(siteURL("adm.localhost")+"/public", bot, 200, "app:/public")

	version, ok := siteVersion(t, "adm.localhost")
	if !ok || version == "" {
		t.Fatalf("site adm.localhost not in /robots/status (version %q)", version)
	}

	check := map[string]string{"user_agent": bot, "ip": "127.0.0.1", "url": siteURL("adm.localhost") + "/private/x"}
	for range 4 {
		var res adminCheck
		adminJSON(t, http.MethodPost, "/robots/check", check, http.StatusOK, &res)
		if res.Decision != "block" || res.Reason != "rule" || res.Rule != "Disallow: /private/ (line 2)" || res.Line != 2 ||
			res.Group != "User-agent: * (line 1)" || res.Version != version || res.Crawler != "AdminTestBot" {
			t.Fatalf("check: %+v (version %s)", res, version)
		}
	}
	// Four checks of a disallowed URL with strikes 2: had they counted,
	// the bot would be banned now.
	c.expect(siteURL("adm.localhost")+"/public", bot, 200, "app:/public")
	var res adminCheck
	adminJSON(t, http.MethodPost, "/robots/check", map[string]string{"user_agent": chromeUA, "ip": "127.0.0.1", "url": siteURL("adm.localhost") + "/private/x"}, http.StatusOK, &res)
	if res.Decision != "allow" || res.Reason != "not a crawler" {
		t.Errorf("browser check: %+v", res)
	}

	// A real ban: two disallowed requests.
	c.expect(siteURL("adm.localhost")+"/private/1", bot, 403, "Disallow: /private/")
	c.expect(siteURL("adm.localhost")+"/private/2", bot, 403)
	c.expect(siteURL("adm.localhost")+"/public", bot, 403, "banned until")
	adminJSON(t, http.MethodPost, "/robots/check", map[string]string{"user_agent": bot, "ip": "127.0.0.1", "url": siteURL("adm.localhost") + "/public"}, http.StatusOK, &res)
	if res.Decision != "ban" || res.Reason != "ban" {
		t.Errorf("check of the banned bot: %+v", res)
	}

	var bans adminBans
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &bans)
	identity := ""
	for _, b := range bans.Bans {
		if b.Site == "adm.localhost" && b.Crawler == bot[:strings.IndexByte(bot, '/')] {
			identity = b.Identity
			if b.Network != "127.0.0.1/32" || !strings.HasPrefix(b.Reason, "strikes") || time.Until(b.Until) < 59*time.Minute {
				t.Errorf("ban entry: %+v", b)
			}
		}
	}
	if identity == "" {
		t.Fatalf("the ban is not listed: %+v", bans)
	}
	var st adminStatus
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	seen := false
	for _, h := range st.Handlers {
		if len(h.Sites) == 0 || h.Sites[0].Host != "adm.localhost" {
			continue
		}
		seen = true
		if h.Bans.Count < 1 || h.Store.Type != "memory" || !h.Store.Healthy {
			t.Errorf("status after the ban: %+v", h)
		}
		if off := h.TopOffenders; len(off) == 0 || off[0].Name != "AdminTestBot" || off[0].Refused < 3 {
			t.Errorf("top offenders: %+v", off)
		}
	}
	if !seen {
		t.Errorf("no handler with site adm.localhost: %+v", st.Handlers)
	}

	var lifted map[string]any
	adminJSON(t, http.MethodDelete, "/robots/bans/"+url.PathEscape(identity), nil, http.StatusOK, &lifted)
	if lifted["lifted"] != true {
		t.Errorf("DELETE answered %v", lifted)
	}
	c.expect(siteURL("adm.localhost")+"/public", bot, 200, "app:/public")
	if status, out := admin(t, http.MethodDelete, "/robots/bans/"+url.PathEscape(identity), nil); status != http.StatusNotFound {
		t.Errorf("second DELETE: %d %s, want 404", status, out)
	}
	if status, out := admin(t, http.MethodGet, "/robots/check", nil); status != http.StatusMethodNotAllowed {
		t.Errorf("GET /robots/check: %d %s, want 405", status, out)
	}
}

// TestAdminReloadFileServer: POST /robots/reload loads a changed
// robots.txt from a file_server site at once.
func TestAdminReloadFileServer(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "robots.txt")
	if err := os.WriteFile(robots, []byte("User-agent: *\nDisallow: /one/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, globals+siteURL("adminreload.localhost")+` {
	robots {
		refresh 1h
		grace 0s
		crawl_delay off
		strikes off
	}
	root * `+dir+`
	file_server
}
`)
	settle(c, siteURL("adminreload.localhost")+"/")
	const bot = "ReloadBot/1.0 (+https://reload.example/bot)"
	c.expect(siteURL("adminreload.localhost")+"/one/x", bot, 403, "Disallow: /one/")
	c.expect(siteURL("adminreload.localhost")+"/two/x", bot, 404)
	before, ok := siteVersion(t, "adminreload.localhost")
	if !ok {
		t.Fatal("site adminreload.localhost not in /robots/status")
	}
	if err := os.WriteFile(robots, []byte("User-agent: *\nDisallow: /two/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep adminReload
	adminJSON(t, http.MethodPost, "/robots/reload", nil, http.StatusOK, &rep)
	found := false
	for _, r := range rep.Reloaded {
		if r.Host == "adminreload.localhost" {
			found = true
			if r.Result != "ok" || !r.Changed || r.Previous != before || r.Version == before || r.Error != "" {
				t.Errorf("reload: %+v (before %s)", r, before)
			}
		}
	}
	if !found {
		t.Fatalf("adminreload.localhost not reloaded: %+v", rep)
	}
	c.expect(siteURL("adminreload.localhost")+"/two/x", bot, 403, "Disallow: /two/")
	c.expect(siteURL("adminreload.localhost")+"/one/x", bot, 404)
	if after, _ := siteVersion(t, "adminreload.localhost"); after == before {
		t.Errorf("status still shows version %s", after)
	}
}

// checkStatusCounts checks what /robots/status says after
// TestAdminStatusPageInChromium's requests: the top crawlers' counts (an
// unverified Googlebot apart from the real one), the warning about
// use_error_routes, and what each IP list proves.
func checkStatusCounts(t *testing.T) {
	t.Helper()
	type ipList struct {
		Method       string `json:"method"`
		VerifiedBy   string `json:"verified_by"`
		ProvesSpoofs bool   `json:"proves_spoofs"`
		Why          string `json:"why"`
	}
	var st struct {
		// The IP lists every handler shares, listed once.
		IPLists  []ipList `json:"ip_lists"`
		Handlers []struct {
			Top []struct {
				Crawler string `json:"crawler"`
				Claim   string `json:"claim"`
				Allowed int    `json:"allowed"`
				Refused int    `json:"refused"`
			} `json:"top_crawlers"`
			Warnings []string `json:"config_warnings"`
			IPLists  []ipList `json:"ip_lists"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	counts := map[string]string{}
	var warned bool
	lists := st.IPLists
	if len(lists) == 0 {
		t.Error("/robots/status lists no crawler IP list")
	}
	for _, h := range st.Handlers {
		for _, x := range h.Top {
			counts[x.Crawler+"|"+x.Claim] = fmt.Sprintf("%d/%d", x.Allowed, x.Refused)
		}
		for _, w := range h.Warnings {
			warned = warned || strings.Contains(w, "use_error_routes") && strings.Contains(w, "page.localhost")
		}
		lists = append(lists, h.IPLists...)
	}
	for _, l := range lists {
		if l.Why == "" || l.VerifiedBy == "" {
			t.Errorf("IP list %+v does not say what it proves and why", l)
		}
		if l.Method == "google" && (l.VerifiedBy != "reverse DNS" || !l.ProvesSpoofs) {
			t.Errorf("google's list: %+v, want verified by reverse DNS, proving spoofs", l)
		}
	}
	for key, want := range map[string]string{"PageBot|": "4/0", "Googlebot|unverified claim": "1/0", "(no User-Agent name)|": "0/1"} {
		if counts[key] != want {
			t.Errorf("top crawlers %q = %q, want %q (all: %v)", key, counts[key], want, counts)
		}
	}
	if _, ok := counts["Googlebot|"]; ok {
		t.Errorf("an unverified Googlebot is counted as the real one: %v", counts)
	}
	if !warned {
		t.Errorf("use_error_routes without handle_errors not among the config warnings: %+v", st.Handlers)
	}
}

// TestAdminStatusPageInChromium loads the status page in a real headless
// Chromium at a phone's size. Browsers send Sec-Fetch-Mode without an
// Origin when opening an address, which the admin endpoint refuses, so the
// page is read the way the module's documentation says: through a site
// that proxies GET /robots/ to the admin endpoint without those headers.
func TestAdminStatusPageInChromium(t *testing.T) {
	chromium := chromiumtest.Find(t)
	backend.set("page.localhost", 200, "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /\n")
	pageConfig := func(ban string) string {
		return globals + siteURL("page.localhost") + ` {
	robots {
		strikes 2 10m ` + ban + `
		crawl_delay off
		use_error_routes
	}
	reverse_proxy ` + backend.addr + `
}
` + statusPageSite("status.localhost")
	}
	c := newClient(t, pageConfig("1h"))
	settle(c, siteURL("page.localhost")+"/")
	const bot = "PageBot/1.0 (+https://page.example/bot)"
	for range 3 {
		c.expect(siteURL("page.localhost")+"/public", bot, 200)
	}
	c.expect(siteURL("page.localhost")+"/", gptbotUA, 403)
	c.expect(siteURL("page.localhost")+"/private/a", "BadBot/2.0 (+https://bad.example)", 403)
	c.expect(siteURL("page.localhost")+"/private/b", "BadBot/2.0 (+https://bad.example)", 403)
	// A "Googlebot" from loopback cannot be verified: it must not be
	// counted as the real one. A bot with no User-Agent has a label.
	c.expect(siteURL("page.localhost")+"/public", googleUA, 200)
	c.expect(siteURL("page.localhost")+"/private/c", "", 403)
	version, ok := siteVersion(t, "page.localhost")
	if !ok {
		t.Fatal("site page.localhost not in /robots/status")
	}

	// The counts survive a config reload that keeps the site block.
	c = newClient(t, pageConfig("2h"))
	settle(c, siteURL("page.localhost")+"/")
	c.expect(siteURL("page.localhost")+"/public", bot, 200)
	checkStatusCounts(t)

	// The HTML straight from the admin endpoint.
	status, page := admin(t, http.MethodGet, "/robots/", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /robots/: %d %s", status, page)
	}
	for _, want := range []string{"page.localhost", version, "PageBot", "BadBot", "127.0.0.1/32", `name="viewport"`,
		"unverified claim", "(no User-Agent name)", "Config warnings", "Crawler IP lists", "refused as spoofed",
		"curl -X DELETE " + hostPort("localhost", adminPort) + "/robots/bans/", "judged by <code>User-agent: *</code>"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if adminPort != 2019 && bytes.Contains(page, []byte("localhost:2019")) {
		t.Errorf("status page names localhost:2019, not the admin address in use (%d)", adminPort)
	}
	// And through the proxy, as the browser reads it.
	res := c.get(siteURL("status.localhost")+"/robots/", chromeUA, "Sec-Fetch-Mode: navigate", "Sec-Fetch-Site: none")
	if res.status != http.StatusOK || !strings.Contains(res.body, version) {
		t.Fatalf("status page through the proxy: %d %.300s", res.status, res.body)
	}

	statusPage := siteURL("status.localhost") + "/robots/"
	img := chromiumtest.Screenshot(t, chromium, statusPage, 412, 915, os.Getenv("ROBOTS_SCREENSHOT"))
	if p := os.Getenv("ROBOTS_SCREENSHOT"); p != "" {
		// A tall one too, to look at the whole page.
		chromiumtest.Screenshot(t, chromium, statusPage, 412, 6000, strings.TrimSuffix(p, ".png")+"-full.png")
	}
	colours, dark := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r < 60 && g < 60 && b < 70 })
	if colours < 8 {
		t.Errorf("screenshot looks blank: %d distinct colours", colours)
	}
	// The dark header band and text: a refused page (the admin's JSON
	// error) would be mostly white.
	if dark < 412*20 {
		t.Errorf("only %d dark pixels: the page's header did not render", dark)
	}
}

// TestAdminRedisBans: with a Redis store the status shows its health (a
// PING), and a ban kept in Redis (and learnt by the local fallback store)
// is listed and lifted in both.
func TestAdminRedisBans(t *testing.T) {
	r := needRedis(t)
	prefix := "admin" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c := newClient(t, globals+siteURL("adminredis.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
		crawl_delay off
		store redis `+r.url()+` {
			prefix `+prefix+`
			timeout 200ms
		}
	}
	respond "ok"
}
`)
	settle(c, siteURL("adminredis.localhost")+"/")
	const bot = "RedisAdminBot/1.0 (+https://redis-admin.example/bot)"
	c.expect(siteURL("adminredis.localhost")+"/public", bot, 200, "ok")
	c.expect(siteURL("adminredis.localhost")+"/private/1", bot, 403)
	c.expect(siteURL("adminredis.localhost")+"/private/2", bot, 403)
	c.expect(siteURL("adminredis.localhost")+"/public", bot, 403, "banned until")

	var st struct {
		Handlers []struct {
			Source string `json:"source"`
			Store  struct {
				Type    string  `json:"type"`
				Healthy bool    `json:"healthy"`
				PingMS  float64 `json:"ping_ms"`
				Error   string  `json:"error"`
			} `json:"store"`
			Bans struct {
				Count int `json:"count"`
			} `json:"bans"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	found := false
	for _, h := range st.Handlers {
		if h.Store.Type == "redis" {
			found = true
			if !h.Store.Healthy || h.Store.PingMS <= 0 || h.Store.PingMS > 100 || h.Bans.Count < 1 {
				t.Errorf("redis store status: %+v", h)
			}
		}
	}
	if !found {
		t.Fatalf("no handler with a redis store: %+v", st)
	}

	var bans struct {
		Bans []struct {
			Identity string `json:"identity"`
			Site     string `json:"site"`
			Store    string `json:"store"`
		} `json:"bans"`
	}
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &bans)
	identity := ""
	for _, b := range bans.Bans {
		if b.Site == "adminredis.localhost" && b.Store == "redis" {
			identity = b.Identity
		}
	}
	if identity == "" {
		t.Fatalf("the Redis ban is not listed: %+v", bans)
	}
	adminJSON(t, http.MethodDelete, "/robots/bans/"+url.PathEscape(identity), nil, http.StatusOK, nil)
	// Allowed again: Redis and the local fallback store both forgot it.
	c.expect(siteURL("adminredis.localhost")+"/public", bot, 200, "ok")
	adminJSON(t, http.MethodGet, "/robots/bans", nil, http.StatusOK, &bans)
	for _, b := range bans.Bans {
		if b.Identity == identity {
			t.Errorf("ban still listed after DELETE: %+v", b)
		}
	}
}

// TestAdminReloadWithdrawPrevious: an emergency rule change. A new
// Disallow normally applies to a crawler that may still hold the old file
// only after the grace window (24 h); POST
// /robots/reload?withdraw_previous=true reloads the site and withdraws
// every replaced version, so the new rule applies at once to every
// crawler, and the answer names the versions withdrawn and the site. A
// site whose reload fails keeps its grace and the answer says why.
func TestAdminReloadWithdrawPrevious(t *testing.T) {
	const host = "emergency.localhost"
	backend.set(host, 200, "User-agent: *\nDisallow: /private/\n")
	c := newClient(t, globals+siteURL(host)+` {
	robots {
		refresh 1h
		crawl_delay off
		strikes off
	}
	reverse_proxy `+backend.addr+`
}
`)
	settle(c, siteURL(host)+"/")
	const bot = "EmergencyBot/1.0 (+https://emergency.example/bot)" // never re-reads robots.txt
	c.expect(siteURL(host)+"/leak/x", bot, 200)
	old, ok := siteVersion(t, host)
	if !ok {
		t.Fatalf("site %s not in /robots/status", host)
	}

	// The new Disallow, loaded the ordinary way: the crawler may still
	// hold the old file, so grace lets it through.
	backend.set(host, 200, "User-agent: *\nDisallow: /private/\nDisallow: /leak/\n")
	adminJSON(t, http.MethodPost, "/robots/reload", nil, http.StatusOK, &adminReload{})
	cur, _ := siteVersion(t, host)
	if cur == old {
		t.Fatal("the reload did not publish the new file")
	}
	c.expect(siteURL(host)+"/leak/x", bot, 200)

	// A reload that fails withdraws nothing, and says so.
	backend.set(host, 500, "down")
	var failed adminReloadWithdraw
	adminJSON(t, http.MethodPost, "/robots/reload?withdraw_previous=true", nil, http.StatusOK, &failed)
	if r, ok := failed.site(host); !ok || len(r.Withdrawn) != 0 || !strings.Contains(r.NotWithdrawn, "server_error") {
		t.Errorf("a failed reload with withdraw_previous: %+v", failed)
	}
	c.expect(siteURL(host)+"/leak/x", bot, 200)

	backend.set(host, 200, "User-agent: *\nDisallow: /private/\nDisallow: /leak/\n")
	var rep adminReloadWithdraw
	adminJSON(t, http.MethodPost, "/robots/reload?withdraw_previous=true", nil, http.StatusOK, &rep)
	r, ok := rep.site(host)
	if !rep.WithdrawPrevious || !ok || r.Result != "ok" || r.Version != cur || len(r.Withdrawn) != 1 || r.Withdrawn[0].Version != old || r.Withdrawn[0].Until.IsZero() {
		t.Errorf("reload with withdraw_previous: %+v (old %s, current %s)", rep, old, cur)
	}
	c.expect(siteURL(host)+"/leak/x", bot, 403, "Disallow: /leak/")
	if vs := siteVersionsOf(t, host); len(vs) != 1 || vs[0] != cur {
		t.Errorf("versions after withdraw_previous: %v, want only %s", vs, cur)
	}
	if status, body := admin(t, http.MethodPost, "/robots/reload?withdraw_previous=maybe", nil); status != http.StatusBadRequest {
		t.Errorf("withdraw_previous=maybe: %d %s, want 400", status, body)
	}
}

// adminReloadWithdraw is the answer of POST
// /robots/reload?withdraw_previous=true.
type adminReloadWithdraw struct {
	WithdrawPrevious bool           `json:"withdraw_previous"`
	Reloaded         []reloadedSite `json:"reloaded"`
}

// reloadedSite is one site of a reload's answer, with what
// withdraw_previous did to it.
type reloadedSite struct {
	Host      string `json:"host"`
	Result    string `json:"result"`
	Version   string `json:"version"`
	Withdrawn []struct {
		Version string    `json:"version"`
		From    time.Time `json:"from"`
		Until   time.Time `json:"until"`
	} `json:"withdrawn"`
	NotWithdrawn string `json:"not_withdrawn"`
}

// site returns the result for host.
func (a adminReloadWithdraw) site(host string) (reloadedSite, bool) {
	for _, x := range a.Reloaded {
		if x.Host == host {
			return x, true
		}
	}
	return reloadedSite{}, false
}

// statusPageSite is a site block that serves the admin status page
// (GET /robots/) at host, the way a browser can open it: the admin
// endpoint refuses a browser's Sec-Fetch-* and Origin headers, so the
// proxy drops them.
func statusPageSite(host string) string {
	return siteURL(host) + ` {
	@page {
		path /robots/
		method GET
	}
	handle @page {
		reverse_proxy ` + hostPort("localhost", adminPort) + ` {
			header_up Host ` + hostPort("localhost", adminPort) + `
			header_up -Sec-Fetch-*
			header_up -Origin
		}
	}
	respond 404
}
`
}
