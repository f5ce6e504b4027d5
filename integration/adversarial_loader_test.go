package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/sites"
)

// Adversarial tests of the loader (issue 21): ways one request, or one
// robots.txt, used to switch a site's rules off, keep them off, or fill
// the storage. Each failed on the code before its fix.

// tenantBackend is a multi-tenant app behind reverse_proxy: it answers
// /robots.txt per Host exactly as sent (case and port included), through a
// function the test sets, and counts what it was asked.
type tenantBackend struct {
	addr   string
	mu     sync.Mutex
	robots func(host string, n int) (status int, body string)
	hosts  map[string]int // Host headers of /robots.txt requests
	n      int            // /robots.txt requests answered
}

func startTenant(t *testing.T) *tenantBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &tenantBackend{addr: ln.Addr().String(), hosts: map[string]int{}}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

// answer sets how /robots.txt is answered: f gets the Host as sent and the
// number of the request (1 for the first).
func (b *tenantBackend) answer(f func(host string, n int) (int, string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.robots = f
}

// exactly answers body for the one Host want, 404 for any other.
func exactly(want, body string) func(string, int) (int, string) {
	return func(host string, _ int) (int, string) {
		if host != want {
			return http.StatusNotFound, "no such shop\n"
		}
		return http.StatusOK, body
	}
}

func (b *tenantBackend) asked() (hosts map[string]int, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	hosts = map[string]int{}
	for h, c := range b.hosts {
		hosts[h] = c
	}
	return hosts, b.n
}

func (b *tenantBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/robots.txt" {
		_, _ = io.WriteString(w, "app:"+r.URL.Path)
		return
	}
	b.mu.Lock()
	b.n++
	n := b.n
	b.hosts[r.Host]++
	f := b.robots
	b.mu.Unlock()
	status, body := http.StatusNotFound, ""
	if f != nil {
		status, body = f(r.Host, n)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// tenantSite is a catch-all site on the run's HTTP port in front of b.
func tenantSite(b *tenantBackend, options string) string {
	return globals + `
:` + strconv.Itoa(httpPort) + ` {
	robots {
		crawl_delay off
		strikes off
` + options + `	}
	reverse_proxy ` + b.addr + `
}
`
}

const shopRobots = "User-agent: *\nDisallow: /private/\n"

// botGet sends a crawler's GET of target with the Host exactly as given.
func botGet(t *testing.T, host, target string) int {
	t.Helper()
	status, _ := rawGet(t, httpAddr(), "GET", target, host, "User-Agent: "+exampleUA)
	return status
}

// TestLoaderAsksWithTheSiteHost: the loader asks for /robots.txt with the
// site's own Host (its name in lower case, with the server's port), never
// with a client's spelling of it. A multi-tenant backend answers 404 for a
// Host it does not know; one bot request with "Host: SHOP.example:1" used
// to make the loader ask with that Host, publish "no rules", and keep
// asking with it on every refresh and on POST /robots/reload.
func TestLoaderAsksWithTheSiteHost(t *testing.T) {
	b := startTenant(t)
	own := hostPort("shop.example", httpPort)
	b.answer(exactly(own, shopRobots))
	newClient(t, tenantSite(b, ""))

	if s := botGet(t, "SHOP.example:1", "/private/x"); s != http.StatusForbidden {
		t.Errorf("first request with Host SHOP.example:1: %d, want 403 (the site's rules)", s)
	}
	if s := botGet(t, "shop.example", "/private/x"); s != http.StatusForbidden {
		t.Errorf("Host shop.example: %d, want 403", s)
	}
	var rep adminReload
	adminJSON(t, http.MethodPost, "/robots/reload", nil, http.StatusOK, &rep)
	for _, r := range rep.Reloaded {
		if r.Host == "shop.example" && (r.Result != "ok" || r.Version == "") {
			t.Errorf("reload: %+v", r)
		}
	}
	if s := botGet(t, "Shop.EXAMPLE:8080", "/private/x"); s != http.StatusForbidden {
		t.Errorf("after a reload: %d, want 403", s)
	}
	// (The loader also reloads, through this backend, the sites earlier
	// tests left in the catch-all server's table.)
	hosts, _ := b.asked()
	for h := range hosts {
		if name, _, _ := strings.Cut(strings.ToLower(h), ":"); strings.TrimSuffix(name, ".") == "shop.example" && h != own {
			t.Errorf("the loader asked with Host %q (asked with %v); want only %q", h, hosts, own)
		}
	}
}

// TestLoaderTooManyRequests: 429 means "come back later", not "no
// rules": the last good copy stays, and a site that never had one is
// unavailable (503 for crawlers), as with a 5xx. Google reads it the same
// way. It used to count as a 4xx, which RFC 9309 reads as no rules.
func TestLoaderTooManyRequests(t *testing.T) {
	b := startTenant(t)
	busy := false
	var mu sync.Mutex
	b.answer(func(host string, _ int) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if busy || host == hostPort("busy.example", httpPort) {
			return http.StatusTooManyRequests, "slow down\n"
		}
		return http.StatusOK, shopRobots
	})
	newClient(t, tenantSite(b, ""))
	if s := botGet(t, "shop.example", "/private/x"); s != http.StatusForbidden {
		t.Fatalf("before: %d, want 403", s)
	}
	mu.Lock()
	busy = true
	mu.Unlock()
	var rep adminReload
	adminJSON(t, http.MethodPost, "/robots/reload", nil, http.StatusOK, &rep)
	for _, r := range rep.Reloaded {
		if r.Host == "shop.example" && (r.Result != "server_error" || r.Changed) {
			t.Errorf("reload answered 429: %+v, want server_error and the same version", r)
		}
	}
	if s := botGet(t, "shop.example", "/private/x"); s != http.StatusForbidden {
		t.Errorf("after a 429: %d, want 403 (the last good copy)", s)
	}
	if s := botGet(t, "busy.example", "/private/x"); s != http.StatusServiceUnavailable {
		t.Errorf("a site whose first answer is 429: %d, want 503 (unavailable)", s)
	}
}

// TestLoaderConfirmsNoRules: a change from rules to no rules (here a 404,
// as when a deploy or a misrouted backend answers for a few seconds) is
// published only once a second fetch, the confirmation delay later,
// agrees; until then the rules stay and the status page says a change is
// pending. It used to be published at the first 404.
func TestLoaderConfirmsNoRules(t *testing.T) {
	defer sites.SetConfirmDelay(3 * time.Second)()
	b := startTenant(t)
	var mu sync.Mutex
	gone := false
	b.answer(func(string, int) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return http.StatusNotFound, "not found\n"
		}
		return http.StatusOK, shopRobots
	})
	newClient(t, tenantSite(b, "\t\trefresh 1s\n"))
	if s := botGet(t, "shop.example", "/private/x"); s != http.StatusForbidden {
		t.Fatalf("before: %d, want 403", s)
	}
	mu.Lock()
	gone = true
	mu.Unlock()
	var rep struct {
		Reloaded []struct {
			Host          string    `json:"host"`
			Changed       bool      `json:"changed"`
			PendingChange *struct{} `json:"pending_change"`
		} `json:"reloaded"`
	}
	adminJSON(t, http.MethodPost, "/robots/reload", nil, http.StatusOK, &rep)
	for _, r := range rep.Reloaded {
		if r.Host == "shop.example" && (r.Changed || r.PendingChange == nil) {
			t.Errorf("reload after a 404: %+v, want the same version and a pending change", r)
		}
	}
	if s := botGet(t, "shop.example", "/private/x"); s != http.StatusForbidden {
		t.Errorf("right after a 404: %d, want 403 (the rules stay until confirmed)", s)
	}
	var st struct {
		Handlers []struct {
			Sites []struct {
				Host          string `json:"host"`
				PendingChange *struct {
					What string `json:"what"`
				} `json:"pending_change"`
			} `json:"sites"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	pending := false
	for _, h := range st.Handlers {
		for _, s := range h.Sites {
			pending = pending || s.Host == "shop.example" && s.PendingChange != nil && s.PendingChange.What != ""
		}
	}
	if !pending {
		t.Errorf("the status does not say a change is pending: %+v", st)
	}
	_, page := admin(t, http.MethodGet, "/robots/", nil)
	if !bytes.Contains(page, []byte("no rules pending confirmation")) {
		t.Error("the status page does not say a change is pending")
	}
	// The refresh after the delay confirms it.
	eventually(t, 10*time.Second, "the confirmed change to no rules", func() bool {
		return botGet(t, "shop.example", "/private/x") == http.StatusOK
	})
}

// switchable answers /robots.txt with whatever body is set, 200.
type switchable struct {
	mu   sync.Mutex
	body string
}

func (s *switchable) set(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}

func (s *switchable) answer(string, int) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return http.StatusOK, s.body
}

// restart drops every table (a config without the handler), then loads
// config again: what a restart leaves is what storage kept.
func restart(c client, config string) {
	c.tc.InitServer(globals+":"+strconv.Itoa(httpPort)+" {\n\trespond ok\n}\n", "caddyfile")
	c.tc.InitServer(config, "caddyfile")
}

const freshReader = "FreshReader/1.0 (+https://example.org/bot)" // re-reads robots.txt

// TestLoaderBriefVersion: rules A, then an empty robots.txt for 8 seconds
// (the report saw 20; anything under the 10 minutes of policy.BriefFor is
// brief), then A again. The empty version allowed everything while it was
// current, but it was current only briefly: once A is back, a bot that did
// not fetch /robots.txt meanwhile is judged by A, not let through by the
// empty version's "allow everything" for the next 24 hours (it is the
// union of the versions a crawler may hold that allows); a crawler seen
// fetching the empty file keeps its grace. After a restart, the history
// read back from storage says the same.
func TestLoaderBriefVersion(t *testing.T) {
	defer sites.SetConfirmDelay(2 * time.Second)()
	b := startTenant(t)
	robots := &switchable{body: shopRobots}
	b.answer(robots.answer)
	config := tenantSite(b, "\t\trefresh 1s\n")
	c := newClient(t, config)
	get := func(ua, path string) int {
		status, _ := rawGet(t, httpAddr(), "GET", path, "shop.example", "User-Agent: "+ua)
		return status
	}
	if s := get(exampleUA, "/private/x"); s != http.StatusForbidden {
		t.Fatalf("with A: %d, want 403", s)
	}
	robots.set("")
	emptied := time.Now()
	eventually(t, 15*time.Second, "the empty version", func() bool {
		get(freshReader, "/robots.txt")
		return get(freshReader, "/private/x") == http.StatusOK
	})
	if s := get(exampleUA, "/private/x"); s != http.StatusOK {
		t.Errorf("while the empty file is current: %d, want 200", s)
	}
	get(freshReader, "/robots.txt") // the reader holds the empty file
	time.Sleep(time.Until(emptied.Add(8 * time.Second)))
	robots.set(shopRobots)
	eventually(t, 10*time.Second, "A again", func() bool {
		return get(exampleUA, "/private/x") == http.StatusForbidden
	})
	if s := get(freshReader, "/private/x"); s != http.StatusOK {
		t.Errorf("a crawler seen fetching the empty file: %d, want 200 (it may hold it)", s)
	}
	time.Sleep(500 * time.Millisecond) // the history is written in the background
	restart(c, config)
	if s := get(exampleUA, "/private/x"); s != http.StatusForbidden {
		t.Errorf("after a restart: %d, want 403 (the empty version was brief)", s)
	}
}

// TestLoaderFirstVersionNotBrief: the first version a site is loaded with
// was current for as long as the site says, not since the loader's first
// fetch: replaced a second later, it still earns grace for every crawler
// (any of them may hold it), before and after a restart. It used to count
// as current for that one second, hence brief, and a crawler holding it was
// refused.
func TestLoaderFirstVersionNotBrief(t *testing.T) {
	b := startTenant(t)
	robots := &switchable{body: "User-agent: *\nDisallow: /a/\n"}
	b.answer(robots.answer)
	config := tenantSite(b, "\t\trefresh 1s\n")
	c := newClient(t, config)
	get := func(ua, path string) int {
		status, _ := rawGet(t, httpAddr(), "GET", path, "first.example", "User-Agent: "+ua)
		return status
	}
	if s := get(exampleUA, "/a/x"); s != http.StatusForbidden {
		t.Fatalf("first version: %d, want 403", s)
	}
	robots.set("User-agent: *\nDisallow: /b/\n")
	eventually(t, 10*time.Second, "the second version", func() bool {
		get(freshReader, "/robots.txt")
		return get(freshReader, "/b/x") == http.StatusForbidden
	})
	if s := get(exampleUA, "/b/x"); s != http.StatusOK {
		t.Errorf("a crawler holding the first version: %d, want 200 (grace)", s)
	}
	time.Sleep(500 * time.Millisecond) // the history is written in the background
	restart(c, config)
	if s := get(exampleUA, "/b/x"); s != http.StatusOK {
		t.Errorf("after a restart: %d, want 200 (grace)", s)
	}
}

// TestLoaderNoisyRobotsTxt: a robots.txt whose body changes on every
// fetch (a timestamp comment, the Host in a Sitemap line) but whose rules
// do not is one version, with one body in storage. It used to be a new
// version and a new body file on every refresh (8,600 a day per site at
// the 10 s prompt interval), never deleted, pushing the real older
// versions out of the 8-version grace window.
func TestLoaderNoisyRobotsTxt(t *testing.T) {
	b := startTenant(t)
	marker := "/noisy-" + randHex(8) + "/"
	var mu sync.Mutex
	noisy := false
	b.answer(func(host string, n int) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if host != hostPort("noisy.example", httpPort) {
			return http.StatusNotFound, "" // the sites earlier tests left in the table
		}
		if !noisy {
			return http.StatusOK, "User-agent: *\nDisallow: " + marker + "\n"
		}
		return http.StatusOK, fmt.Sprintf("# generated for request %d at %s\nUser-agent: *\nDisallow: %sx/\n\nSitemap: http://%s/sitemap.xml\n",
			n, time.Now().Format(time.RFC3339Nano), marker, host)
	})
	newClient(t, tenantSite(b, "\t\trefresh 1s\n"))
	if s := botGet(t, "noisy.example", marker); s != http.StatusForbidden {
		t.Fatalf("first version: %d, want 403", s)
	}
	// A real change first, so that the site's history is in storage (a
	// new site with one version is written once it is established).
	mu.Lock()
	noisy = true
	mu.Unlock()
	eventually(t, 10*time.Second, "the second version", func() bool {
		return botGet(t, "noisy.example", marker+"x/y") == http.StatusForbidden &&
			botGet(t, "noisy.example", marker) == http.StatusOK
	})
	_, before := b.asked()
	time.Sleep(5 * time.Second) // a refresh every second, a new body each
	if _, after := b.asked(); after-before < 3 {
		t.Fatalf("the loader fetched robots.txt %d times in 5 s", after-before)
	}
	var st struct {
		Handlers []struct {
			Sites []struct {
				Host     string            `json:"host"`
				Versions []json.RawMessage `json:"versions"`
			} `json:"sites"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	for _, h := range st.Handlers {
		for _, s := range h.Sites {
			if s.Host == "noisy.example" && len(s.Versions) != 2 {
				t.Errorf("%d versions, want 2 (the first and the noisy one)", len(s.Versions))
			}
		}
	}
	dir := filepath.Join(os.Getenv("CADDY_ROBOTS_IT_STORAGE"), "caddy-robots", "robots")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	bodies := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && bytes.Contains(data, []byte(marker)) {
			bodies++
		}
	}
	if bodies != 2 {
		t.Errorf("%d bodies of the site in storage, want 2", bodies)
	}
}

// TestAdminWithdrawVersion: a robots.txt that should never have been
// served stays in the grace window for 24 hours, and across a restart,
// letting every crawler that may hold it read what it allowed. DELETE
// /robots/versions/<id> withdraws it from every site's grace and from the
// stored history, with an INFO line naming the version, the site and who
// asked; the current version cannot be withdrawn (409), an unknown id is
// 404.
func TestAdminWithdrawVersion(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "robots.log")
	b := startTenant(t)
	robots := &switchable{body: "User-agent: *\nDisallow: /private/\nAllow: /\n"}
	b.answer(func(host string, n int) (int, string) {
		if host != hostPort("withdraw.example", httpPort) {
			return http.StatusNotFound, ""
		}
		return robots.answer(host, n)
	})
	config := globalsWith("\tlog withdraw {\n\t\toutput file "+logFile+"\n\t\tinclude http.handlers.robots\n\t\tlevel INFO\n\t}\n") + `
:` + strconv.Itoa(httpPort) + ` {
	robots {
		crawl_delay off
		strikes off
		refresh 1s
	}
	reverse_proxy ` + b.addr + `
}
`
	c := newClient(t, config)
	get := func(ua, path string) int {
		status, _ := rawGet(t, httpAddr(), "GET", path, "withdraw.example", "User-Agent: "+ua)
		return status
	}
	if s := get(exampleUA, "/private/x"); s != http.StatusForbidden {
		t.Fatalf("with the good file: %d, want 403", s)
	}
	// A broken file, live for a few seconds.
	robots.set("User-agent: *\nDisallow:\n")
	eventually(t, 10*time.Second, "the broken file", func() bool {
		get(freshReader, "/robots.txt")
		return get(freshReader, "/private/x") == http.StatusOK
	})
	broken, _ := siteVersionOf(t, "withdraw.example")
	robots.set("User-agent: *\nDisallow: /private/\nAllow: /\n# fixed\n")
	eventually(t, 10*time.Second, "the fixed file", func() bool {
		v, _ := siteVersionOf(t, "withdraw.example")
		return v != broken
	})
	fixed, _ := siteVersionOf(t, "withdraw.example")
	// The reader fetched the broken file: it may hold it, and reads
	// /private/ for 24 hours.
	if s := get(freshReader, "/private/x"); s != http.StatusOK {
		t.Fatalf("a crawler that fetched the broken file: %d, want 200 before the withdrawal", s)
	}

	status, out := admin(t, http.MethodDelete, "/robots/versions/"+fixed, nil)
	if status != http.StatusConflict || !bytes.Contains(out, []byte("current")) {
		t.Errorf("withdrawing the current version: %d %s, want 409 saying why", status, out)
	}
	if status, out := admin(t, http.MethodDelete, "/robots/versions/0123456789ab", nil); status != http.StatusNotFound {
		t.Errorf("withdrawing an unknown version: %d %s, want 404", status, out)
	}
	var rep struct {
		Version   string `json:"version"`
		Withdrawn []struct {
			Host string `json:"host"`
		} `json:"withdrawn"`
	}
	adminJSON(t, http.MethodDelete, "/robots/versions/"+broken, nil, http.StatusOK, &rep)
	if rep.Version != broken || len(rep.Withdrawn) != 1 || rep.Withdrawn[0].Host != "withdraw.example" {
		t.Errorf("withdrawal: %+v", rep)
	}
	if s := get(freshReader, "/private/x"); s != http.StatusForbidden {
		t.Errorf("after the withdrawal: %d, want 403", s)
	}
	var logged bool
	eventually(t, 5*time.Second, "the log line", func() bool {
		data, _ := os.ReadFile(logFile)
		for _, line := range bytes.Split(data, []byte("\n")) {
			var e map[string]any
			if json.Unmarshal(line, &e) != nil || !strings.Contains(fmt.Sprint(e["msg"]), "withdrawn") {
				continue
			}
			logged = e["level"] == "info" && e["version"] == broken && e["host"] == "withdraw.example" && strings.Contains(fmt.Sprint(e["by"]), "127.0.0.1")
			return true
		}
		return false
	})
	if !logged {
		t.Error("the log line does not name the version, the site and who asked")
	}
	// The stored history no longer holds it: a restart does not bring it
	// back (the reader's fetch is forgotten, so only the history decides).
	time.Sleep(500 * time.Millisecond) // the history is written in the background
	restart(c, config)
	if s := get(exampleUA, "/private/x"); s != http.StatusForbidden {
		t.Errorf("after a restart: %d, want 403", s)
	}
	for _, v := range siteVersionsOf(t, "withdraw.example") {
		if v == broken {
			t.Errorf("the withdrawn version is back after a restart")
		}
	}
}

// siteVersionOf returns the current version of host from /robots/status.
func siteVersionOf(t *testing.T, host string) (string, bool) {
	t.Helper()
	vs := siteVersionsOf(t, host)
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// siteVersionsOf returns the versions of host from /robots/status,
// current first.
func siteVersionsOf(t *testing.T, host string) []string {
	t.Helper()
	var st adminStatus
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	for _, h := range st.Handlers {
		for _, s := range h.Sites {
			if s.Host == host {
				var out []string
				for _, v := range s.Versions {
					out = append(out, v.ID)
				}
				return out
			}
		}
	}
	return nil
}
