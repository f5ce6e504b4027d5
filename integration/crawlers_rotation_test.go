package integration

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Several crawlers on one address, and a rogue that rotates names beside
// them (enforce/state/rotation.go): the compliant crawlers keep their own
// budgets and lose no page, the rogue is refused what robots.txt forbids
// and bounded in rate, and no refusal shows one client another's name.

// rotationDelay is the Crawl-delay of the rotation tests' site, in seconds:
// a whole number, because Python's urllib.robotparser reads no other
// (it takes "Crawl-delay: 0.5" for none), and short enough that the crawls
// take seconds.
const rotationDelay float64 = 1

// rotationPages is the number of allowed pages of the site besides its index.
const rotationPages = 12

// robotParserCrawler is a polite crawler written the way Python's
// documentation shows: urllib.robotparser reads robots.txt (fetched with
// the crawler's own User-Agent, before any page), every link is checked
// with can_fetch, and the crawler waits crawl_delay between requests.
const robotParserCrawler = `
import sys, time, urllib.request, urllib.robotparser, urllib.parse, re
start, ua = sys.argv[1], sys.argv[2]
base = urllib.parse.urljoin(start, "/")
def get(url):
    req = urllib.request.Request(url, headers={"User-Agent": ua})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
status, body = get(urllib.parse.urljoin(base, "/robots.txt"))
rp = urllib.robotparser.RobotFileParser()
rp.parse(body.splitlines() if status == 200 else [])
delay = float(rp.crawl_delay(ua) or 0)
seen, queue = {start}, [start]
while queue:
    url = queue.pop(0)
    if not rp.can_fetch(ua, url):
        continue
    time.sleep(delay)
    status, body = get(url)
    if status != 200:
        print("robotparser crawler:", url, status, file=sys.stderr)
        continue
    for href in re.findall(r'href="([^"]+)"', body):
        u = urllib.parse.urljoin(url, href)
        if u.startswith(base) and u not in seen:
            seen.add(u)
            queue.append(u)
`

// rotationSite writes the site of the rotation tests: an index linking
// rotationPages pages, each linking the next and a private page, and a
// robots.txt that forbids /private/ and asks for rotationDelay. It returns
// the allowed paths as requested ("/" for the index).
func rotationSite(t *testing.T) (dir string, allowed []string) {
	t.Helper()
	dir = t.TempDir()
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
	allowed = append(allowed, "/")
	for i := range rotationPages {
		name := fmt.Sprintf("/p%02d.html", i)
		allowed = append(allowed, name)
		fmt.Fprintf(&links, "<a href=\"%s\">page %d</a>\n", name, i)
		write(name, fmt.Sprintf("<html><body>page %d <a href=\"/p%02d.html\">next</a> <a href=\"/private/p%d.html\">private</a></body></html>\n", i, (i+1)%rotationPages, i))
		write(fmt.Sprintf("private/p%d.html", i), "private\n")
	}
	write("index.html", "<html><body>\n"+links.String()+"<a href=\"/private/\">private</a></body></html>\n")
	write("robots.txt", "User-agent: *\nDisallow: /private/\nCrawl-delay: "+strconv.FormatFloat(rotationDelay, 'f', -1, 64)+"\n")
	return dir, allowed
}

// rotationURL is the rotation tests' site as the crawlers reach it: over
// IPv4 loopback, so that every client has the one address 127.0.0.1.
func rotationURL() string { return "http://" + hostPort("127.0.0.1", crawlPort) }

// rotationConfig serves dir on the crawl port as 127.0.0.1 and name (a host
// name no client uses: it gives the site block a scope of its own, so no
// other test's names, rotation or bans reach it), with a store of its own
// (store: the store directive's arguments and block) and a JSON access log
// at logPath.
func rotationConfig(dir, name, store, logPath string) string {
	return globals + rotationURL() + `, http://` + hostPort(name, crawlPort) + ` {
	root * ` + dir + `
	robots {
		store ` + store + `
	}
	file_server
	log {
		output file ` + logPath + `
		format json
	}
}
`
}

// rotationCrawler is a real crawler program of the rotation tests.
type rotationCrawler struct {
	name string // as reported
	ua   string // a part of its User-Agent that tells its requests apart
	cmd  func(t *testing.T, start string) *exec.Cmd
	// failOK reports whether an exit error is only the crawler saying the
	// server answered an error for a URL (wget's 8).
	failOK func(err error) bool
}

// wgetFailOK accepts wget's and wget2's exit code 8 (the server answered an
// error, the 403 of /private/ links).
func wgetFailOK(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 8
}

// crawlerHome makes an empty HOME (and WGETRC) for a crawler, so no user
// configuration reaches it.
func crawlerHome(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	home := t.TempDir()
	rc := filepath.Join(home, "wgetrc")
	if err := os.WriteFile(rc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "HOME="+home, "WGETRC="+rc)
	return cmd
}

func delayArg() string { return strconv.FormatFloat(rotationDelay, 'f', -1, 64) }

// rotationCrawlers returns the real crawlers: wget, wget2, Scrapy, HTTrack,
// a Colly crawler and the robotparser crawler, each keeping the site's
// Crawl-delay (HTTrack, which does not read Crawl-delay, at one connection
// per second without keep-alive, slower than the delay).
func rotationCrawlers(t *testing.T) []rotationCrawler {
	t.Helper()
	wget, wget2 := requireCrawler(t, "wget"), requireCrawler(t, "wget2")
	scrapy, httrack := requireCrawler(t, "scrapy"), requireCrawler(t, "httrack")
	python := requireCrawler(t, "python3")
	colly := collyCrawler(t)
	dir := t.TempDir()
	spider, parser := filepath.Join(dir, "spider.py"), filepath.Join(dir, "crawl.py")
	if err := os.WriteFile(spider, []byte(scrapySpider), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(parser, []byte(robotParserCrawler), 0o644); err != nil {
		t.Fatal(err)
	}
	never := func(error) bool { return false }
	return []rotationCrawler{
		{"wget2", "wget2/", func(t *testing.T, start string) *exec.Cmd {
			return crawlerHome(t, exec.Command(wget2, "-r", "-l", "inf", "--wait="+delayArg(), "--max-threads=1", "--robots=on", "-nv", "-nH", "-P", t.TempDir(), "--tries=1", start))
		}, wgetFailOK},
		{"wget", "Wget/", func(t *testing.T, start string) *exec.Cmd {
			return crawlerHome(t, exec.Command(wget, "-r", "-l", "inf", "--wait="+delayArg(), "-e", "robots=on", "-nv", "-nH", "-P", t.TempDir(), "--tries=1", start))
		}, wgetFailOK},
		{"colly", "CollyBot/", func(t *testing.T, start string) *exec.Cmd {
			return exec.Command(colly, "-start", start, "-delay", fmt.Sprintf("%dms", int(rotationDelay*1000)), "-ua", "CollyBot/1.0 (+https://example.org/colly)")
		}, never},
		{"httrack", "HTTrack", func(t *testing.T, start string) *exec.Cmd {
			return crawlerHome(t, exec.Command(httrack, start, "-O", t.TempDir(), "-s2", "-c1", "-%c1", "-%k0", "-R0", "-q", "-%v0"))
		}, never},
		{"robotparser", "RobotParserBot/", func(t *testing.T, start string) *exec.Cmd {
			return exec.Command(python, parser, start, "RobotParserBot/1.0 (+https://example.org/robotparser)")
		}, never},
		{"scrapy", "Scrapy/", func(t *testing.T, start string) *exec.Cmd {
			return crawlerHome(t, exec.Command(scrapy, "runspider", spider, "-a", "start="+start,
				"-s", "ROBOTSTXT_OBEY=True", "-s", "DOWNLOAD_DELAY="+delayArg(), "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1",
				"-s", "RETRY_ENABLED=False", "-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False"))
		}, never},
	}
}

// collyCrawler builds integration/testdata/collycrawler, a small crawler
// made with Colly (github.com/gocolly/colly/v2, a module of its own so the
// plugin does not depend on it), and returns its path.
func collyCrawler(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "collycrawler")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = repoPath("integration/testdata/collycrawler")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Colly crawler: %v\n%s", err, b)
	}
	return out
}

// crawlTally is what one client got, from the access log.
type crawlTally struct {
	requests  int
	missing   []string // allowed pages never answered 200
	refused   []string // allowed pages answered 403
	throttled []string // any request answered 503
	private   []string // /private/ requests not answered 403
}

// tallyCrawl reads what the requests whose User-Agent contains ua got.
func tallyCrawl(log []accessEntry, ua string, allowed []string) crawlTally {
	var tl crawlTally
	ok := map[string]bool{}
	for _, e := range log {
		v := e.Request.Headers["User-Agent"]
		if len(v) == 0 || !strings.Contains(v[0], ua) {
			continue
		}
		tl.requests++
		uri := e.Request.URI
		private := strings.HasPrefix(uri, "/private/")
		switch {
		case e.Status == 200:
			ok[uri] = true
			if private {
				tl.private = append(tl.private, uri)
			}
		case e.Status == 503:
			tl.throttled = append(tl.throttled, uri)
		case e.Status == 403 && !private:
			tl.refused = append(tl.refused, uri)
		}
	}
	for _, p := range allowed {
		if !ok[p] && !(p == "/" && ok["/index.html"]) {
			tl.missing = append(tl.missing, p)
		}
	}
	return tl
}

// runCrawlers runs the crawlers from start, each begun stagger after the
// previous one, and waits for them all.
func runCrawlers(t *testing.T, crawlers []rotationCrawler, start string, stagger time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	for i, cr := range crawlers {
		if i > 0 {
			time.Sleep(stagger)
		}
		cmd := cr.cmd(t, start)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := cmd.CombinedOutput()
			if err != nil && !cr.failOK(err) {
				t.Errorf("%s: %v\n%s", cr.name, err, out)
			}
		}()
	}
	wg.Wait()
}

// checkCompliant asserts that each crawler fetched every allowed page with
// 200, was never refused one, never throttled and refused every /private/
// page it asked for.
func checkCompliant(t *testing.T, log []accessEntry, crawlers []rotationCrawler, allowed []string, took time.Duration) {
	t.Helper()
	for _, cr := range crawlers {
		tl := tallyCrawl(log, cr.ua, allowed)
		t.Logf("%s: %d requests, %d of %d allowed pages lost, %d refused (403) allowed pages, %d throttled (503)",
			cr.name, tl.requests, len(tl.missing), len(allowed), len(tl.refused), len(tl.throttled))
		switch {
		case tl.requests == 0:
			t.Errorf("%s made no request", cr.name)
		case len(tl.missing) > 0 || len(tl.refused) > 0 || len(tl.throttled) > 0:
			t.Errorf("%s, keeping Crawl-delay %gs beside the others: lost %v, refused %v, throttled %v", cr.name, rotationDelay, tl.missing, tl.refused, tl.throttled)
		}
		if len(tl.private) > 0 {
			t.Errorf("%s: /private/ pages served: %v", cr.name, tl.private)
		}
	}
	t.Logf("the crawls took %s", took.Round(100*time.Millisecond))
}

// TestRealCrawlersSixOnOneAddress: wget2, wget, a Colly crawler, HTTrack,
// the robotparser crawler and Scrapy crawl one site at once from one
// address (127.0.0.1), each keeping its Crawl-delay: more names than an
// address's residents, and none of them loses an allowed page, gets a 403
// for one or a 503. They start a little apart, as crawlers do; the last two
// are beyond the address's first four names and earn budgets of their own
// by fetching /robots.txt.
func TestRealCrawlersSixOnOneAddress(t *testing.T) {
	crawlers := rotationCrawlers(t)
	dir, allowed := rotationSite(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	newClient(t, rotationConfig(dir, "six.rotation.invalid", "memory 20301", logPath))
	start := time.Now()
	runCrawlers(t, crawlers, rotationURL()+"/", 300*time.Millisecond)
	took := time.Since(start)
	time.Sleep(300 * time.Millisecond) // let the access log flush
	checkCompliant(t, readAccessLog(t, logPath), crawlers, allowed, took)
}

// rogueRun is what a rogue that rotates names got.
type rogueRun struct {
	mu        sync.Mutex
	first     time.Time
	last      time.Time
	allowedOK int // allowed pages answered 200
	allowed   int // allowed pages asked for
	private   int // /private/ pages asked for
	privateOK []string
	names     map[string]bool
	leaks     []string // refusals that name another client
}

// rogueStyle is how a rogue's requests vary besides their names.
type rogueStyle struct {
	// rotateShapes sends a header of a new random name with each request,
	// so that no two requests have one client shape.
	rotateShapes bool
	// headers are "Key: value" headers sent with each request.
	headers []string
	// tls is the client's TLS configuration, for an https base.
	tls *tls.Config
}

// rogueName matches the names the rogue rotates through.
var rogueName = regexp.MustCompile(`Rnd[0-9a-f]{12}`)

// runRogue sends requests from workers goroutines, each at most one every
// 10 ms (far more than any Crawl-delay allows, and light on a shared
// machine), each with a new random product token, until stop is closed:
// allowed pages and /private/ pages in turn, as style says.
func runRogue(t *testing.T, base string, workers int, stop <-chan struct{}, style rogueStyle) *rogueRun {
	t.Helper()
	r := &rogueRun{names: map[string]bool{}}
	// A connection the previous config's server took as it shut down is
	// reset unread: resetRetrier sends the request again.
	hc := &http.Client{Timeout: 20 * time.Second, Transport: resetRetrier{&http.Transport{MaxIdleConnsPerHost: workers, TLSClientConfig: style.tls}}}
	var wg sync.WaitGroup
	var n atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				i := n.Add(1)
				name := fmt.Sprintf("Rnd%012x", rand.Uint64()&(1<<48-1))
				path := fmt.Sprintf("/p%02d.html", i%rotationPages)
				if i%2 == 0 {
					path = fmt.Sprintf("/private/p%d.html", i%rotationPages)
				}
				req, err := http.NewRequest(http.MethodGet, base+path, nil)
				if err != nil {
					t.Error(err)
					return
				}
				req.Header.Set("User-Agent", name+"/1.0")
				if style.rotateShapes {
					req.Header.Set(fmt.Sprintf("X-%012x", rand.Uint64()&(1<<48-1)), "1")
				}
				for _, h := range style.headers {
					k, v, _ := strings.Cut(h, ":")
					req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
				}
				sent := time.Now()
				res, err := hc.Do(req)
				if err != nil {
					select {
					case <-stop:
						return
					default:
					}
					t.Errorf("rogue: %v", err)
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				done := time.Now()
				r.mu.Lock()
				if r.first.IsZero() || sent.Before(r.first) {
					r.first = sent
				}
				if done.After(r.last) {
					r.last = done
				}
				r.names[name] = true
				if strings.HasPrefix(path, "/private/") {
					r.private++
					if res.StatusCode != http.StatusForbidden {
						r.privateOK = append(r.privateOK, fmt.Sprintf("%s=%d", path, res.StatusCode))
					}
				} else {
					r.allowed++
					if res.StatusCode == http.StatusOK {
						r.allowedOK++
					}
				}
				for _, m := range rogueName.FindAllString(string(body), -1) {
					if m != name {
						r.leaks = append(r.leaks, fmt.Sprintf("%s was shown %s: %q", name, m, body))
					}
				}
				r.mu.Unlock()
			}
		}()
	}
	t.Cleanup(wg.Wait)
	go func() { <-stop; wg.Wait(); hc.CloseIdleConnections() }()

	return r
}

// politeClient is a compliant crawler written here, so that the test sees
// every answer's body: it fetches /robots.txt first (unless skipRobots: a
// crawler holding a cached copy), then each allowed page, a little more
// than the delay apart. It returns the statuses and the bodies of the
// answers that were not 200.
func politeClient(t *testing.T, c client, base, ua string, pages []string, skipRobots bool, headers ...string) (statuses []int, refusals []string) {
	t.Helper()
	if !skipRobots {
		if res := c.get(base+"/robots.txt", ua, headers...); res.status != 200 {
			t.Errorf("%s: /robots.txt: %d", ua, res.status)
		}
	}
	gap := time.Duration(rotationDelay * 1.1 * float64(time.Second))
	for i, p := range pages {
		if i > 0 || !skipRobots {
			time.Sleep(gap)
		}
		res := c.get(base+p, ua, headers...)
		statuses = append(statuses, res.status)
		if res.status != 200 {
			refusals = append(refusals, fmt.Sprintf("%s %d: %q", p, res.status, res.body))
		}
	}
	return statuses, refusals
}

// rogueBound is the most allowed requests a rogue that never reuses a name
// and never fetches /robots.txt can get in span from pools Crawl-delay
// pools of its address (state.Rotations.Pool: one for a rogue of one
// client shape, state.RotationShapes+1 for one that rotates shapes too):
// one request for each of the address's residents (its first names), and
// each pool RotationPoolNames names' worth of the Crawl-delay budget (GCRA
// with emission interval 7/8 of delay/4, a burst of 4 per name, and the
// jitter tolerance).
func rogueBound(span time.Duration, pools int) int {
	const residents, poolNames, burst = 4, 4, 4
	interval := time.Duration(rotationDelay * float64(time.Second) / poolNames)
	emission := interval - interval/8
	tolerance := interval / 2
	return residents + pools*(poolNames*burst+int((span+tolerance)/emission)+1)
}

// checkRogue asserts that the rogue was refused every /private/ page, got
// no more allowed pages than pools pools allow (rogueBound), asked for
// enough of them to test that bound, and was never shown another client's
// name.
func checkRogue(t *testing.T, rogue *rogueRun, pools int) {
	t.Helper()
	rogue.mu.Lock()
	defer rogue.mu.Unlock()
	span := rogue.last.Sub(rogue.first)
	bound := rogueBound(span, pools)
	windows := span.Seconds() / rotationDelay
	t.Logf("the rogue: %d names in %s; %d of %d allowed-page requests answered 200 (%.1f per Crawl-delay window; bound %d in all, %d pools), %d /private/ requests, %d served",
		len(rogue.names), span.Round(100*time.Millisecond), rogue.allowedOK, rogue.allowed, float64(rogue.allowedOK)/windows, bound, pools, rogue.private, len(rogue.privateOK))
	if rogue.allowed < 3*bound {
		t.Fatalf("the rogue asked for only %d allowed pages, too few to test its bound %d (a busy machine?)", rogue.allowed, bound)
	}
	if rogue.allowedOK > bound {
		t.Errorf("the rotating rogue got %d allowed pages in %s, more than the %d that 4 residents and %d pools of 4 names allow", rogue.allowedOK, span, bound, pools)
	}
	if len(rogue.privateOK) > 0 {
		t.Errorf("the rogue was served /private/ pages: %v", rogue.privateOK)
	}
	for i, l := range rogue.leaks {
		if i == 2 {
			t.Errorf("... and %d more", len(rogue.leaks)-i)
			break
		}
		t.Errorf("a refusal names another client: %s", l)
	}
}

// checkPolite asserts that PoliteBot (politeClient) got every page, and
// that no refusal it got names the rogue.
func checkPolite(t *testing.T, statuses []int, refusals []string) {
	t.Helper()
	t.Logf("PoliteBot (written here): %v", statuses)
	for i, r := range refusals {
		if i < 2 {
			t.Errorf("PoliteBot, after fetching /robots.txt beside the rogue, refused: %s", r)
		}
	}
	for _, r := range refusals {
		if m := rogueName.FindString(r); m != "" {
			t.Errorf("a refusal to PoliteBot names the rogue's %s", m)
		}
	}
}

// TestRealCrawlersAfterARotatingRogue: a rogue on 127.0.0.1 sends every
// request with a new product token, as fast as it can, half of them for
// /private/. While it runs, compliant crawlers arrive on the same address:
// all six real ones and one written here that reads every answer: seven
// newcomers, more than the address's graduate places once the rogue took
// its residents, so the last to fetch /robots.txt crawl unproven to the
// end, and wget asks for its start page before /robots.txt. None
// loses an allowed page or gets a 403 or 503: an unproven name spends the
// pool of its client's shape, and none of them looks like the rogue. No
// answer to anyone names another client; the rogue is refused every
// /private/ page, and its allowed requests stay within what the address's
// residents and its shape's one pool of RotationPoolNames names allow.
func TestRealCrawlersAfterARotatingRogue(t *testing.T) {
	crawlers := rotationCrawlers(t)
	dir, allowed := rotationSite(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	c := newClient(t, rotationConfig(dir, "rogue.rotation.invalid", "memory 20303", logPath))
	base := rotationURL()
	stop := make(chan struct{})
	rogue := runRogue(t, base, 4, stop, rogueStyle{})
	time.Sleep(time.Second) // the rogue is well under way
	var wg sync.WaitGroup
	var statuses []int
	var refusals []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		statuses, refusals = politeClient(t, c, base, "PoliteBot/1.0 (+https://example.org/polite)", allowed[:8], false)
	}()
	start := time.Now()
	runCrawlers(t, crawlers, base+"/", 200*time.Millisecond)
	took := time.Since(start)
	wg.Wait()
	close(stop)
	time.Sleep(300 * time.Millisecond) // let the access log flush and the rogue stop

	checkCompliant(t, readAccessLog(t, logPath), crawlers, allowed, took)
	checkPolite(t, statuses, refusals)
	checkRogue(t, rogue, 1)
}

// TestRealCrawlersAfterARotatingRogueRedis: as
// TestRealCrawlersAfterARotatingRogue, with the Crawl-delay budgets in
// Redis: the pools of an address's unproven names are keyed by client
// shape there too, so the six real crawlers lose nothing beside the rogue,
// and the rogue's one pool bounds it.
func TestRealCrawlersAfterARotatingRogueRedis(t *testing.T) {
	r := needRedis(t)
	crawlers := rotationCrawlers(t)
	dir, allowed := rotationSite(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	// A timeout far above a busy machine's latency: a call that timed out
	// would be decided from local state (fail open), outside the bound.
	store := fmt.Sprintf("redis %s {\n\t\t\tprefix rot%d\n\t\t\ttimeout 5s\n\t\t}", r.url(), time.Now().UnixNano())
	newClient(t, rotationConfig(dir, "redis.rotation.invalid", store, logPath))
	base := rotationURL()
	stop := make(chan struct{})
	rogue := runRogue(t, base, 4, stop, rogueStyle{})
	time.Sleep(time.Second)
	start := time.Now()
	runCrawlers(t, crawlers, base+"/", 200*time.Millisecond)
	took := time.Since(start)
	close(stop)
	time.Sleep(300 * time.Millisecond)
	checkCompliant(t, readAccessLog(t, logPath), crawlers, allowed, took)
	checkRogue(t, rogue, 1)
}

// TestRotatingRogueThatRotatesShapesToo: a rogue that sends, with every
// request, a new product token and a header of a new name (a new client
// shape each time) takes its address's shape pools and the overflow pool,
// and no more: its allowed requests stay within what the residents and
// state.RotationShapes+1 pools allow, and it is refused every /private/
// page. A compliant crawler that fetches /robots.txt first keeps a budget
// of its own beside it and loses no page.
func TestRotatingRogueThatRotatesShapesToo(t *testing.T) {
	dir, allowed := rotationSite(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	c := newClient(t, rotationConfig(dir, "shapes.rotation.invalid", "memory 20307", logPath))
	base := rotationURL()
	stop := make(chan struct{})
	rogue := runRogue(t, base, 4, stop, rogueStyle{rotateShapes: true})
	time.Sleep(time.Second)
	statuses, refusals := politeClient(t, c, base, "PoliteBot/1.0 (+https://example.org/polite)", allowed[:8], false)
	close(stop)
	time.Sleep(300 * time.Millisecond)
	checkPolite(t, statuses, refusals)
	const shapes = 4 // state.RotationShapes
	checkRogue(t, rogue, shapes+1)
}

// TestRotatingRogueOverTLS: over HTTPS with robots_fingerprint, a client's
// shape is its handshake's JA4. A rogue that rotates names and header
// names with every request still shows one handshake (Go's), so all its
// unproven names share one pool, and a newcomer whose handshake differs
// (curl's) that asks for pages without ever fetching /robots.txt, beyond
// the address's residents, gets every page. Over plain HTTP the same rogue
// would take every shape pool (TestRotatingRogueThatRotatesShapesToo) and
// share the overflow pool with the newcomer. The rogue stays within one
// pool and is refused every /private/ page.
func TestRotatingRogueOverTLS(t *testing.T) {
	curl := requireCrawler(t, "curl")
	ca := newTestCA(t, "127.0.0.1")
	dir, allowed := rotationSite(t)
	base := "https://" + hostPort("127.0.0.1", httpsPort)
	newClient(t, globalsWith("\tservers {\n\t\tprotocols h1 h2\n\t\tlistener_wrappers {\n\t\t\trobots_fingerprint\n\t\t\ttls\n\t\t}\n\t}\n")+
		base+`, https://`+hostPort("tls.rotation.invalid", httpsPort)+` {
	tls `+ca.certFile+` `+ca.keyFile+`
	root * `+dir+`
	robots {
		store memory 20309
	}
	file_server
}
`)
	stop := make(chan struct{})
	rogue := runRogue(t, base, 4, stop, rogueStyle{rotateShapes: true, tls: ca.clientTLS(t)})
	time.Sleep(time.Second)
	gap := time.Duration(rotationDelay * 1.1 * float64(time.Second))
	var statuses []string
	for i, p := range allowed[:8] {
		if i > 0 {
			time.Sleep(gap)
		}
		out, err := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca.caFile,
			"-A", "NewcomerBot/1.0 (+https://example.org/new)", base+p).Output()
		if err != nil {
			t.Fatalf("curl %s: %v", p, err)
		}
		statuses = append(statuses, p+"="+string(out))
		if string(out) != "200" {
			t.Errorf("the newcomer (curl's handshake, no /robots.txt) beside a rogue of another handshake: %s got %s", p, out)
		}
	}
	close(stop)
	time.Sleep(300 * time.Millisecond)
	t.Logf("NewcomerBot over curl: %v", statuses)
	checkRogue(t, rogue, 1)
}

// TestRotationBehindAnUntrustedProxy: the server trusts no proxy, and every
// client arrives from 127.0.0.1 with X-Forwarded-For, as behind a reverse
// proxy nobody configured. One of them rotates names and asks for /private/
// (it would ban or throttle an address's unproven names); a Googlebot claim
// and a new crawler behind the same proxy, neither of which fetched
// /robots.txt (they hold a cached copy), keep the Crawl-delay and get every
// page. The operator sees the mistake: a config_warnings entry in
// /robots/status and a red line on the status page.
func TestRotationBehindAnUntrustedProxy(t *testing.T) {
	dir, allowed := rotationSite(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	c := newClient(t, rotationConfig(dir, "proxy.rotation.invalid", "memory 20305", logPath))
	base := rotationURL()
	stop := make(chan struct{})
	rogue := runRogue(t, base, 4, stop, rogueStyle{headers: []string{"X-Forwarded-For: 198.51.100.23"}})
	time.Sleep(time.Second)
	var wg sync.WaitGroup
	for _, ua := range []string{googleUA, "NewCrawler/1.0 (+https://example.org/new)"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses, refusals := politeClient(t, c, base, ua, allowed[:8], true, "X-Forwarded-For: 203.0.113.7")
			t.Logf("%s behind the proxy: %v", ua, statuses)
			for i, r := range refusals {
				if i < 2 {
					t.Errorf("%s, keeping the delay behind an untrusted proxy beside a rotating rogue, refused: %s", ua, r)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rogue.mu.Lock()
	t.Logf("the rogue: %d names, %d of %d allowed-page requests answered 200, %d /private/ requests, %d served",
		len(rogue.names), rogue.allowedOK, rogue.allowed, rogue.private, len(rogue.privateOK))
	if len(rogue.privateOK) > 0 {
		t.Errorf("the rogue was served /private/ pages: %v", rogue.privateOK)
	}
	rogue.mu.Unlock()

	var st struct {
		Handlers []struct {
			Warnings       []string `json:"config_warnings"`
			UntrustedProxy string   `json:"untrusted_proxy"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	found := false
	for _, h := range st.Handlers {
		for _, w := range h.Warnings {
			if strings.Contains(w, "127.0.0.1") && strings.Contains(w, "X-Forwarded-For") && strings.Contains(w, "trusted_proxies") {
				found = true
			}
		}
		if found && h.UntrustedProxy != "127.0.0.1" {
			t.Errorf("untrusted_proxy = %q, want 127.0.0.1", h.UntrustedProxy)
		}
	}
	if !found {
		t.Errorf("no config warning about the untrusted proxy in /robots/status: %+v", st)
	}
	status, page := admin(t, http.MethodGet, "/robots/", nil)
	if status != http.StatusOK || !strings.Contains(string(page), `class="bad" id="untrusted-proxy"`) {
		t.Errorf("the status page (%d) has no red line about the untrusted proxy", status)
	}
}
