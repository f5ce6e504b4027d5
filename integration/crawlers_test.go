package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real-crawler tests run classic crawlers (GNU Wget, Wget2) against a
// generated site behind caddy-robots and check what a field report found
// broken: crawlers that obey robots.txt by the 1994 standard read
// `Disallow: /*?q=` as a literal prefix, so they ask for /search?q=...;
// those requests must be refused, but must not count as strikes, and
// randomised waits around Crawl-delay must not be throttled. Run with
//
//	go test -count=1 -run TestRealCrawlers ./integration/
//
// The crawlers come from scripts/need-crawlers.sh.

const (
	crawlSearchLinks  = 12 // more than the default 10 strikes
	crawlPrivateLinks = 5
	crawlPages        = 40
)

// crawlSiteRobots is the site's robots.txt: a prefix rule, a wildcard rule
// that 1994-standard crawlers read as a literal prefix, and a Crawl-delay.
const crawlSiteRobots = "User-agent: *\nDisallow: /private/\nDisallow: /*?q=\nCrawl-delay: 0.2\n"

// makeCrawlSite writes a site of index.html, crawlPages allowed pages,
// crawlPrivateLinks private pages and a /search page, and returns the paths
// of the allowed pages (index included) and the search targets it links.
func makeCrawlSite(t *testing.T, dir string) (allowed, searches []string) {
	t.Helper()
	write := func(name, body string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var links strings.Builder
	// Search links first: a crawler meets them before most pages, so a
	// ban they caused would cost it the pages.
	for i := range crawlSearchLinks {
		s := "/search?q=" + strconv.Itoa(i)
		searches = append(searches, s)
		fmt.Fprintf(&links, "<a href=\"%s\">search %d</a>\n", s, i)
	}
	for i := range crawlPrivateLinks {
		fmt.Fprintf(&links, "<a href=\"/private/p%d.html\">private %d</a>\n", i, i)
		write(fmt.Sprintf("private/p%d.html", i), "<html><body>private</body></html>\n")
	}
	allowed = append(allowed, "/index.html")
	for i := range crawlPages {
		name := fmt.Sprintf("/p%02d.html", i)
		allowed = append(allowed, name)
		fmt.Fprintf(&links, "<a href=\"%s\">page %d</a>\n", name, i)
		next := fmt.Sprintf("/p%02d.html", (i+1)%crawlPages)
		write(name, fmt.Sprintf("<html><body><h1>page %d</h1><a href=\"%s\">next</a> <a href=\"/search?q=p%d\">search</a></body></html>\n", i, next, i))
		searches = append(searches, fmt.Sprintf("/search?q=p%d", i))
	}
	write("index.html", "<html><body>\n"+links.String()+"</body></html>\n")
	write("search", "<html><body>results</body></html>\n")
	write("robots.txt", crawlSiteRobots)
	return allowed, searches
}

// crawlURL returns the address of the real-crawler tests' site, on a port
// of its own, "http://localhost:<crawlPort>".
func crawlURL() string { return "http://" + hostPort("localhost", crawlPort) }

// accessEntry is the part of a Caddy JSON access log entry the tests read.
type accessEntry struct {
	Request struct {
		Method   string              `json:"method"`
		URI      string              `json:"uri"`
		Headers  map[string][]string `json:"headers"`
		RemoteIP string              `json:"remote_ip"`
	} `json:"request"`
	Status int `json:"status"`
}

func readAccessLog(t *testing.T, path string) []accessEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening the access log: %v", err)
	}
	defer f.Close()
	var out []accessEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e accessEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("access log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the access log: %v", err)
	}
	return out
}

// requireCrawler returns the path of a crawler binary; under CI=true a
// missing one fails the test.
func requireCrawler(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not on PATH and CI=true: the real-crawler tests must run in CI; scripts/need-crawlers.sh installs it", name)
	}
	t.Skipf("%s is not on PATH: run scripts/need-crawlers.sh", name)
	return ""
}

// TestRealCrawlers runs each crawler recursively over the site and checks,
// from Caddy's access log: every allowed page was fetched (a 200), every
// wildcard-disallowed /search?q= the crawler asked for was refused (a 403,
// not a ban), nothing it was refused is an allowed page (no ban), and no
// request was throttled (no 503: the crawler keeps the delay on average).
func TestRealCrawlers(t *testing.T) {
	crawlers := []struct {
		name string
		bin  string
		args func(out, url string) []string
	}{
		{"wget", "wget", func(out, url string) []string {
			return []string{"-r", "-l", "inf", "--wait=0.2", "-e", "robots=on", "-nv", "-nH", "-P", out, "--tries=1", url}
		}},
		{"wget-random-wait", "wget", func(out, url string) []string {
			return []string{"-r", "-l", "inf", "--wait=0.2", "--random-wait", "-e", "robots=on", "-nv", "-nH", "-P", out, "--tries=1", url}
		}},
		{"wget2", "wget2", func(out, url string) []string {
			return []string{"-r", "-l", "inf", "--wait=0.2", "--max-threads=1", "--robots=on", "-nv", "-nH", "-P", out, "--tries=1", url}
		}},
	}
	// The three crawl at once, each from an address of its own (wget and
	// wget --random-wait send the same User-Agent: from one address they
	// would be one crawler), so the test takes one crawl's time, not three.
	// A store of its own (the pool keys stores by their config), so that no
	// throttle, strike or ban leaks into another test.
	site := t.TempDir()
	allowed, searches := makeCrawlSite(t, site)
	logPath := filepath.Join(t.TempDir(), "access.log")
	newClient(t, globals+crawlURL()+` {
	root * `+site+`
	robots {
		store memory 20001
	}
	file_server
	log {
		output file `+logPath+`
		format json
	}
}
`)
	type run struct {
		from   string
		took   time.Duration
		output []byte
		err    error
	}
	runs := make([]run, len(crawlers))
	var wg sync.WaitGroup
	for i, cr := range crawlers {
		bin := requireCrawler(t, cr.bin)
		runs[i].from = fmt.Sprintf("127.0.0.%d", 11+i)
		out := t.TempDir()
		home := t.TempDir() // no user configuration reaches the crawler
		rc := filepath.Join(home, "wgetrc")
		if err := os.WriteFile(rc, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, append([]string{"--bind-address=" + runs[i].from}, cr.args(out, crawlURL()+"/")...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "WGETRC="+rc)
		wg.Add(1)
		go func(r *run) {
			defer wg.Done()
			start := time.Now()
			r.output, r.err = cmd.CombinedOutput()
			r.took = time.Since(start)
		}(&runs[i])
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // let the access log flush
	log := readAccessLog(t, logPath)
	for i, cr := range crawlers {
		t.Run(cr.name, func(t *testing.T) {
			from, took, output, err := runs[i].from, runs[i].took, runs[i].output, runs[i].err
			if err != nil {
				// wget exits 8 when the server answered an error (our 403s).
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 8 {
					t.Fatalf("%s: %v\n%s", cr.name, err, output)
				}
			}
			checkCrawl(t, cr.name, from, took, log, allowed, searches)
		})
	}
}

// checkCrawl checks, from Caddy's access log, the crawl named name made
// from the address from: every allowed page fetched, every /search?q= and
// /private/ target refused, no ban, no throttle.
func checkCrawl(t *testing.T, name, from string, took time.Duration, log []accessEntry, allowed, searches []string) {
	t.Helper()
	var entries []accessEntry
	for _, e := range log {
		if e.Request.RemoteIP == from {
			entries = append(entries, e)
		}
	}

	got := map[string][]int{} // URI -> statuses
	ua := ""
	for _, e := range entries {
		got[e.Request.URI] = append(got[e.Request.URI], e.Status)
		if v := e.Request.Headers["User-Agent"]; len(v) > 0 {
			ua = v[0]
		}
	}
	has := func(uri string, status int) bool {
		for _, s := range got[uri] {
			if s == status {
				return true
			}
		}
		return false
	}
	var missing, banned, throttled, searchedOK, privateOK []string
	for _, p := range allowed {
		uri := p
		if p == "/index.html" {
			uri = "/"
		}
		if !has(uri, 200) {
			missing = append(missing, uri)
		}
	}
	searched := 0
	for _, e := range entries {
		uri := e.Request.URI
		isSearch := strings.HasPrefix(uri, "/search?q=")
		isPrivate := strings.HasPrefix(uri, "/private/")
		switch {
		case e.Status == 503:
			throttled = append(throttled, uri)
		case isSearch && e.Status != 403:
			searchedOK = append(searchedOK, fmt.Sprintf("%s=%d", uri, e.Status))
		case isPrivate && e.Status != 403:
			privateOK = append(privateOK, fmt.Sprintf("%s=%d", uri, e.Status))
		case e.Status == 403 && !isSearch && !isPrivate:
			banned = append(banned, uri)
		}
		if isSearch {
			searched++
		}
	}
	t.Logf("%s (User-Agent %q): %d requests in %s, %d for /search?q=, %d allowed pages missing, %d refused allowed pages (ban), %d throttled",
		name, ua, len(entries), took.Round(100*time.Millisecond), searched, len(missing), len(banned), len(throttled))
	if len(missing) > 0 {
		t.Errorf("allowed pages never fetched with 200: %v", missing)
	}
	if len(banned) > 0 {
		t.Errorf("allowed pages refused with 403 (the crawler was banned): %v", banned)
	}
	if len(throttled) > 0 {
		t.Errorf("requests throttled (503) although the crawler keeps Crawl-delay on average: %v", throttled)
	}
	if len(searchedOK) > 0 {
		t.Errorf("wildcard-disallowed targets not refused: %v", searchedOK)
	}
	if len(privateOK) > 0 {
		t.Errorf("/private/ targets not refused: %v", privateOK)
	}
	if searched == 0 {
		t.Logf("%s never asked for a /search?q= target (%d linked)", name, len(searches))
	}
}

// TestRealCrawlersTwoProcessesOneRobotsVersionApart: two processes of one
// crawler (same User-Agent, same address). The newer one fetches
// /robots.txt after it changed (the new version forbids /old/); the older
// one, still holding the previous version, keeps requesting /old/ pages it
// allowed. Those requests may be refused, but they are no strikes: the
// crawler is never banned, and its allowed pages keep being served.
func TestRealCrawlersTwoProcessesOneRobotsVersionApart(t *testing.T) {
	site := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(site, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		write(fmt.Sprintf("old/%d.html", i), "old page\n")
	}
	write("new.html", "new page\n")
	const v1 = "User-agent: *\nDisallow: /private/\n"
	const v2 = "User-agent: *\nDisallow: /private/\nDisallow: /old/\n"
	write("robots.txt", v1)
	// A host of its own: the site's robots.txt history (kept across
	// reloads, per host) holds no other test's versions, which would
	// excuse strikes for 24 hours.
	base := "http://" + hostPort("versionbot.example", crawlPort)
	c := newClient(t, globals+base+` {
	root * `+site+`
	robots {
		strikes 3 1m 1h
		crawl_delay off
		store memory 20009
	}
	file_server
}
`)
	const ua = "VersionBot/1.0 (+https://version.example/bot)"
	// Both processes start from v1.
	c.expect(base+"/robots.txt", ua, 200, "Disallow: /private/")
	c.expect(base+"/old/0.html", ua, 200, "old page")
	// The site changes robots.txt, and caddy-robots learns it (here from a
	// person's fetch: any 200 for /robots.txt prompts the loader).
	write("robots.txt", v2)
	c.expect(base+"/robots.txt", chromeUA, 200, "Disallow: /old/")
	time.Sleep(50 * time.Millisecond)
	// Then the newer process reads the new version.
	c.expect(base+"/robots.txt", ua, 200, "Disallow: /old/")
	// The older process keeps crawling /old/ by v1, far past the strike
	// threshold, interleaved with the newer process's allowed fetches.
	refused := 0
	for i := 1; i < 10; i++ {
		res := c.get(base+fmt.Sprintf("/old/%d.html", i), ua)
		switch {
		case res.status == 403 && strings.Contains(res.body, "banned"):
			t.Fatalf("request %d for /old/ by the older process: banned: %q", i, res.body)
		case res.status == 403:
			refused++
		case res.status != 200:
			t.Fatalf("request %d for /old/: status %d: %q", i, res.status, res.body)
		}
		if res := c.get(base+"/new.html", ua); res.status != 200 {
			t.Fatalf("after %d /old/ requests the newer process's allowed page got %d: %q (a strike was counted for a request v1 allowed)", i, res.status, res.body)
		}
	}
	t.Logf("/old/ requests refused: %d of 9 (refusals are allowed; strikes are not)", refused)
	// A path no version ever allowed still counts: the crawler is banned
	// after 3 strikes, so strikes are on in this configuration.
	for i := range 3 {
		c.get(base+fmt.Sprintf("/private/%d", i), ua)
	}
	c.expect(base+"/new.html", ua, 403, "banned")
}
