package integration

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Scripts that wear a browser's User-Agent, through a real Caddy: curl,
// Python's requests and urllib, Go's net/http and Scrapy get 403 on a
// disallowed path over HTTPS and 200 on an allowed one; over plain HTTP
// (to a host that is not loopback) the header rule does not judge them.

const firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

// browserNav are the headers Chromium sends with a navigation to a secure
// context (integration/browsers_test.go records them), for tests that act
// as a person's browser over HTTPS or to localhost.
var browserNav = []string{"Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document", "Sec-Fetch-User: ?1", `Sec-CH-UA: "Chromium";v="131"`}

// undeclaredConfig serves the same small site over HTTPS on 127.0.0.1 (a
// certificate from a throwaway CA) and over plain HTTP to any Host.
func undeclaredConfig(t *testing.T, extra string) string {
	ca := newTestCA(t, "127.0.0.1")
	site := `
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		strikes off
` + extra + `
	}
	respond "page {path}"
`
	return tlsGlobals() + fmt.Sprintf(`
https://127.0.0.1:%d {
	tls %s %s
%s}
http://:%d {
%s}
`, httpsPort, ca.certFile, ca.keyFile, site, crawlPort, site)
}

// tlsGlobals is globals for a config with an HTTPS site: without HTTP/3,
// whose UDP listener would collide with the port reservations of
// internal/freeport (a UDP socket on each port).
func tlsGlobals() string {
	return globalsWith("\tservers {\n\t\tprotocols h1 h2\n\t}\n")
}

// need returns the path of a tool the test runs, failing under CI=true
// when it is missing (scripts/need-browsers.sh installs it).
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: run scripts/need-browsers.sh", name)
		}
		t.Skipf("%s not installed (scripts/need-browsers.sh installs it)", name)
	}
	return p
}

// debianPython returns Debian's python3, which has requests and Scrapy
// from Debian's packages (a python3 earlier on PATH may not).
func debianPython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import requests, scrapy").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3-requests and python3-scrapy are required under CI=true: run scripts/need-browsers.sh (%v: %s)", err, out)
		}
		t.Skipf("python3-requests or python3-scrapy missing: %s", out)
	}
	return py
}

// scriptClient fetches url with User-Agent ua (and Host host when set)
// and returns the status.
type scriptClient struct {
	name  string
	fetch func(t *testing.T, url, ua, host string) int
}

func scriptClients(t *testing.T) []scriptClient {
	curl := need(t, "curl")
	py := debianPython(t)
	runStatus := func(t *testing.T, cmd *exec.Cmd) int {
		t.Helper()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd.Args, err, out)
		}
		lines := strings.Fields(string(out))
		if len(lines) == 0 {
			t.Fatalf("%s: no status printed", cmd.Args)
		}
		n, err := strconv.Atoi(lines[len(lines)-1])
		if err != nil {
			t.Fatalf("%s: %q", cmd.Args, out)
		}
		return n
	}
	pyScript := func(code string) func(t *testing.T, url, ua, host string) int {
		return func(t *testing.T, url, ua, host string) int {
			return runStatus(t, exec.Command(py, "-c", code, url, ua, host))
		}
	}
	return []scriptClient{
		{"curl", func(t *testing.T, url, ua, host string) int {
			args := []string{"-sk", "-o", "/dev/null", "-w", "%{http_code}", "-A", ua}
			if host != "" {
				args = append(args, "-H", "Host: "+host)
			}
			return runStatus(t, exec.Command(curl, append(args, url)...))
		}},
		{"python requests", pyScript(`
import sys, requests, urllib3
urllib3.disable_warnings()
url, ua, host = sys.argv[1:4]
h = {"User-Agent": ua}
if host: h["Host"] = host
print(requests.get(url, headers=h, verify=False, allow_redirects=False).status_code)`)},
		{"python urllib", pyScript(`
import sys, ssl, urllib.request, urllib.error
url, ua, host = sys.argv[1:4]
req = urllib.request.Request(url, headers={"User-Agent": ua})
if host: req.add_header("Host", host)
try:
    print(urllib.request.urlopen(req, context=ssl._create_unverified_context()).status)
except urllib.error.HTTPError as e:
    print(e.code)`)},
		{"Go net/http", func(t *testing.T, url, ua, host string) int {
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			req, err := http.NewRequest("GET", url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("User-Agent", ua)
			if host != "" {
				req.Host = host
			}
			res, err := c.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", url, err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return res.StatusCode
		}},
		{"Scrapy", func(t *testing.T, url, ua, host string) int {
			dir := t.TempDir()
			spider := filepath.Join(dir, "spider.py")
			if err := os.WriteFile(spider, []byte(`
import scrapy
class S(scrapy.Spider):
    name = "s"
    custom_settings = {"ROBOTSTXT_OBEY": False, "HTTPERROR_ALLOW_ALL": True, "LOG_LEVEL": "ERROR",
                       "TELNETCONSOLE_ENABLED": False, "RETRY_ENABLED": False, "REDIRECT_ENABLED": False}
    def start_requests(self):
        h = {"User-Agent": self.ua}
        if self.host: h["Host"] = self.host
        yield scrapy.Request(self.url, headers=h, dont_filter=True)
    def parse(self, response):
        print(response.status, flush=True)
`), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, "-m", "scrapy", "runspider", spider, "-a", "url="+url, "-a", "ua="+ua, "-a", "host="+host)
			cmd.Dir = dir
			return runStatus(t, cmd)
		}},
	}
}

func TestUndeclaredScripts(t *testing.T) {
	clients := scriptClients(t)
	newClient(t, undeclaredConfig(t, ""))
	https := "https://" + hostPort("127.0.0.1", httpsPort)
	plain := "http://" + hostPort("127.0.0.1", crawlPort)
	plainHost := hostPort("undeclared.example", crawlPort)
	before := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="fetch_metadata",action="block",mode="enforce"`)
	blocks := 0
	for _, c := range clients {
		for _, ua := range []string{chromeUA, firefoxUA} {
			browser := strings.Fields(ua)[len(strings.Fields(ua))-1]
			if got := c.fetch(t, https+"/private/x", ua, ""); got != 403 {
				t.Errorf("%s as %s over HTTPS, disallowed path: %d, want 403", c.name, browser, got)
			} else {
				blocks++
			}
			if got := c.fetch(t, https+"/public", ua, ""); got != 200 {
				t.Errorf("%s as %s over HTTPS, allowed path: %d, want 200", c.name, browser, got)
			}
			if got := c.fetch(t, plain+"/private/x", ua, plainHost); got != 200 {
				t.Errorf("%s as %s over plain HTTP, disallowed path: %d, want 200 (not judged)", c.name, browser, got)
			}
			t.Logf("%-16s %-16s https /private/ and /public, http /private/: checked", c.name, browser)
		}
	}
	if d := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="fetch_metadata",action="block",mode="enforce"`) - before; int(d) != blocks {
		t.Errorf("caddy_robots_undeclared_total{fetch_metadata,block,enforce} grew by %v, want %d", d, blocks)
	}
}

// undeclaredMetric sums the series of the in-process Caddy's metrics (the
// admin endpoint's /metrics) that carry every label of labels (pairs
// separated by commas, in any order); 0 when there is none.
func undeclaredMetric(t *testing.T, name, labels string) float64 {
	t.Helper()
	res, err := http.Get(adminURL() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var total float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		match := true
		for _, l := range strings.Split(labels, ",") {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

// makeTrapSite writes a site with a hidden trap link first on its index
// page, then links to 22 private and 5 public pages.
func makeTrapSite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var idx strings.Builder
	idx.WriteString(`<!doctype html><html><head><title>Trap site</title></head><body>
<a href="/no-robots/" rel="nofollow" hidden aria-hidden="true" tabindex="-1">Do not follow this link: it is a trap for crawlers that ignore robots.txt.</a>
<h1>Index</h1><ul>
`)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "private"), 0o755))
	for i := 1; i <= 22; i++ {
		fmt.Fprintf(&idx, "<li><a href=\"/private/p%d.html\">private %d</a></li>\n", i, i)
		must(os.WriteFile(filepath.Join(dir, "private", fmt.Sprintf("p%d.html", i)), []byte(fmt.Sprintf("<html><body>private page %d</body></html>", i)), 0o644))
	}
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(&idx, "<li><a href=\"/pub%d.html\">public %d</a></li>\n", i, i)
		must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("pub%d.html", i)), []byte(fmt.Sprintf("<html><body>public page %d</body></html>", i)), 0o644))
	}
	idx.WriteString("</ul></body></html>\n")
	must(os.WriteFile(filepath.Join(dir, "index.html"), []byte(idx.String()), 0o644))
	return dir
}

func trapConfig(root string) string {
	return globals + fmt.Sprintf(`
http://:%d {
	root * %s
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
		trap /no-robots/
	}
	file_server
}
`, crawlPort, root)
}

// TestTrapCatchesCrawlers: lynx -crawl -traversal and wget -r -e
// robots=off -U Chrome follow the hidden link first and are then refused
// most private pages; over plain HTTP to a host that is not loopback, so
// only the trap can catch them.
func TestTrapCatchesCrawlers(t *testing.T) {
	lynx := need(t, "lynx")
	wget := need(t, "wget")
	root := makeTrapSite(t)
	newClient(t, trapConfig(root))
	host := hostPort("trap.example", crawlPort)
	base := "http://" + hostPort("127.0.0.1", crawlPort)

	// wget as Chrome, over plain HTTP with a Host that is not loopback.
	dir := t.TempDir()
	trapsBefore := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="trap"`)
	headerBefore := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="fetch_metadata"`)
	cmd := exec.Command(wget, "-r", "-l", "2", "-e", "robots=off", "-U", chromeUA, "--header", "Host: "+host,
		"-nv", "-P", dir, base+"/")
	out, _ := cmd.CombinedOutput() // wget exits 8 when pages are refused
	fetched, refused := countWget(string(out))
	t.Logf("wget -r -e robots=off -U Chrome: %d private pages saved, %d requests refused\n%s", fetched, refused, lastLines(string(out), 6))
	if fetched > 2 || refused < 20 {
		t.Errorf("wget as Chrome: %d private pages fetched and %d refused, want at most 2 fetched and at least 20 refused", fetched, refused)
	}
	if d := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="fetch_metadata"`) - headerBefore; d != 0 {
		t.Errorf("the header rule judged plain HTTP: %v", d)
	}

	// A person in lynx follows the trap once by hand, then reads private
	// pages at a person's pace: only the trap page is refused.
	ldir := t.TempDir()
	lynxCmd := func(args ...string) *exec.Cmd {
		c := exec.Command(lynx, args...)
		c.Dir = ldir
		c.Env = append(os.Environ(), "TERM=vt100", "HOME="+ldir)
		// Lynx reads the keyboard while it waits for the network and
		// stops at end of input: give it an input that never ends.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c.Stdin = pr
		t.Cleanup(func() { pw.Close(); pr.Close() })
		return c
	}
	dump := func(path string) string {
		o, _ := lynxCmd("-dump", "-nolist", base+path).CombinedOutput()
		return string(o)
	}
	if o := dump("/no-robots/"); !strings.Contains(o, "by hand in a text") {
		t.Errorf("person's trap request: %q", o)
	}
	for i := 1; i <= 3; i++ {
		time.Sleep(1500 * time.Millisecond)
		if o := dump(fmt.Sprintf("/private/p%d.html", i)); !strings.Contains(o, fmt.Sprintf("private page %d", i)) {
			t.Errorf("person in lynx, private page %d after the trap: %q", i, o)
		}
	}
	t.Logf("a person in lynx: the trap refused, then 3 private pages read at 1.5 s intervals")

	// lynx -crawl -traversal: every request comes at a crawler's pace (and
	// from the same address and User-Agent as the person above, so its
	// trap request is that key's second).
	refusedBy := func() float64 {
		return undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="block"`) +
			undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="ban"`)
	}
	refusedBefore := refusedBy()
	start := time.Now()
	// It exits 1 when pages were refused.
	_ = lynxCmd("-crawl", "-traversal", base+"/").Run()
	privateRead := lynxResult(t, ldir)
	lynxRefused := refusedBy() - refusedBefore
	t.Logf("lynx -crawl -traversal (%.1fs): %d private pages read, %v requests refused as an undeclared crawler's", time.Since(start).Seconds(), privateRead, lynxRefused)
	if privateRead > 2 || lynxRefused < 20 {
		t.Errorf("lynx -crawl -traversal read %d private pages and was refused %v, want at most 2 read and at least 20 refused", privateRead, lynxRefused)
	}
	if d := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="trap"`) - trapsBefore; d < 3 {
		t.Errorf("trap requests counted: %v, want wget's, the person's and lynx's", d)
	}

	// robots.txt still answers the crawlers, and lists the trap.
	res, err := http.Get(base + "/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "Disallow: /no-robots/") {
		t.Errorf("robots.txt: %d %q", res.StatusCode, body)
	}
}

var wgetSaved = regexp.MustCompile(`URL:\S+/private/p\d+\.html .*-> "`)

// countWget counts the private pages wget saved and the requests refused
// (-nv prints an "ERROR 403" line per refused URL).
func countWget(out string) (fetched, refused int) {
	fetched = len(wgetSaved.FindAllString(out, -1))
	refused = strings.Count(out, "ERROR 403")
	return fetched, refused
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// lynxResult reads lynx -crawl's output files (lnk*.dat, one per page it
// read: refused pages are not written) and returns how many private pages
// it read.
func lynxResult(t *testing.T, dir string) (private int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "lnk*.dat"))
	if len(files) == 0 {
		t.Fatalf("lynx wrote no pages")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "private page") {
			private++
		}
	}
	return private
}
