package integration

// The adversarial suite: every way a bot was seen to get what robots.txt
// forbids, poison the rules, or borrow a claim, tried through a real Caddy
// in front of Caddy's own file_server and a path-normalising backend behind
// reverse_proxy. Each test failed on the code before its fix; keep them
// all: a change that makes one pass by accident has broken a promise.

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const secret = "SECRET-CONTENT"

// advSite makes a site directory: robots.txt, a public page, and a private
// page whose body is secret.
func advSite(t *testing.T, robots string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"robots.txt":          robots,
		"index.html":          "home",
		"public/index.html":   "public",
		"private/secret.html": secret,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// normalisingBackend is an app that does what many frameworks do with a
// path: decode it (%2F included), read "\" as "/", drop ";" parameters,
// clean dot segments and slashes. It serves the secret for /private/.
type normalisingBackend struct {
	srv  *http.Server
	addr string
	mu   sync.Mutex
	// robots is its /robots.txt; earlyClose makes it declare 1034 bytes and
	// send 29; httpsOnly redirects requests without X-Forwarded-Proto https.
	robots     string
	earlyClose bool
	httpsOnly  bool
	endless    bool
}

func startNormalising(t *testing.T, robots string) *normalisingBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &normalisingBackend{addr: ln.Addr().String(), robots: robots}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	t.Cleanup(func() { _ = b.srv.Close() })
	return b
}

func (b *normalisingBackend) set(f func(b *normalisingBackend)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

func (b *normalisingBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	robots, early, httpsOnly, endless := b.robots, b.earlyClose, b.httpsOnly, b.endless
	b.mu.Unlock()
	if httpsOnly && r.Header.Get("X-Forwarded-Proto") != "https" {
		http.Redirect(w, r, "https://"+r.Host+r.URL.RequestURI(), http.StatusMovedPermanently)
		return
	}
	p := strings.ReplaceAll(r.URL.Path, "\\", "/")
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if j := strings.IndexByte(s, ';'); j >= 0 {
			segs[i] = s[:j]
		}
	}
	p = path.Clean("/" + strings.Join(segs, "/"))
	switch {
	case p == "/robots.txt" && endless:
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "User-agent: *\n")
		for {
			if _, err := io.WriteString(w, "# still coming\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	case p == "/robots.txt" && early:
		hj, ok := w.(http.Hijacker)
		if !ok {
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1034\r\n\r\nUser-agent: *\nAllow: /\n#xxxxx")
		_ = buf.Flush()
		_ = conn.Close()
	case p == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, robots)
	case strings.HasPrefix(p, "/private/"):
		_, _ = io.WriteString(w, secret)
	default:
		_, _ = io.WriteString(w, "app:"+p)
	}
}

// rawGet sends one request with the target exactly as given, over a fresh
// connection, and returns the status and body.
func rawGet(t *testing.T, addr, method, target, host string, headers ...string) (int, string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", method, target, host)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	for attempt := 0; ; attempt++ {
		status, body, unread, err := rawOnce(addr, b.String())
		if err == nil {
			return status, body
		}
		// A connection closed or reset before one byte of answer was the
		// old server's, as a config reload shut it down (see
		// resetRetrier): the request was never served, so it is sent again.
		// A busy machine may take a while to accept again after a reload
		// or a flood of connections: back off, up to about 3 s in all.
		if !unread || attempt == 8 {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		time.Sleep(time.Duration(attempt+1) * 60 * time.Millisecond)
	}
}

// rawOnce sends req on a new connection to addr and reads the response;
// unread reports that the connection ended before any byte of it.
func rawOnce(addr, req string) (status int, body string, unread bool, err error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, "", false, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, "", errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE), fmt.Errorf("write: %w", err)
	}
	cr := &countingReader{r: conn}
	res, err := http.ReadResponse(bufio.NewReader(cr), nil)
	if err != nil {
		return 0, "", cr.n == 0, fmt.Errorf("reading response: %w", err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data), false, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

const advRobots = "User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nAllow: /\n"

// TestAdversarialPathForms: every rewrite of a disallowed path that Caddy's
// file_server or a normalising backend serves as the disallowed resource is
// refused; targets that are not origin-form or absolute-form are refused
// with 400; nothing leaks the secret, nothing panics.
func TestAdversarialPathForms(t *testing.T) {
	dir := advSite(t, advRobots)
	app := startNormalising(t, advRobots)
	c := newClient(t, globals+`
`+siteURL("files.localhost")+` {
	root * `+dir+`
	robots {
		crawl_delay off
		strikes off
	}
	file_server
}
`+siteURL("proxied.localhost")+` {
	robots {
		crawl_delay off
		strikes off
	}
	reverse_proxy `+app.addr+`
}
`)
	_ = c
	ua := "User-Agent: " + exampleUA
	forms := []string{
		"/private/secret.html",
		"//private/secret.html",
		"/./private/secret.html",
		"/public/../private/secret.html",
		"/private%2Fsecret.html",
		"/private%2fsecret.html",
		"/%2Fprivate/secret.html",
		"/%2e/private/secret.html",
		"/public/%2e%2e/private/secret.html",
		"/public/%2E%2E/private/secret.html",
		"/private;jsessionid=1/secret.html",
		"/public/..;/private/secret.html",
		"/private\\secret.html",
		"/public\\..\\private\\secret.html",
		"/%70rivate/secret.html",
		"/private/./secret.html",
		"///private///secret.html",
		siteURL("files.localhost") + "/private/secret.html",
		"HTTP://" + at("files.localhost") + "//private/secret.html",
	}
	for _, host := range []string{at("files.localhost"), at("proxied.localhost")} {
		for _, f := range forms {
			target := strings.Replace(f, at("files.localhost"), host, 1)
			status, body := rawGet(t, httpAddr(), "GET", target, host, ua)
			if strings.Contains(body, secret) {
				t.Errorf("%s %s: a bot got the secret (status %d)", host, target, status)
			}
			if status != 403 && status != 400 {
				t.Errorf("%s %s: status %d, want 403", host, target, status)
			}
		}
		// The same forms are people's business: never judged.
		status, body := rawGet(t, httpAddr(), "GET", "//private/secret.html", host, "User-Agent: "+chromeUA)
		if status != 200 || !strings.Contains(body, secret) {
			t.Errorf("%s: a browser got %d for a private page", host, status)
		}
		// Allowed paths in odd forms stay allowed for bots. (A raw target
		// that a rule refuses, such as /private/../public/, is refused
		// whatever it resolves to: no compliant crawler sends it.)
		for _, ok := range []string{"/public/", "//public/", "/public/./", "/public/x/../", "/%70ublic/", "/public/?q=%2F"} {
			if status, _ := rawGet(t, httpAddr(), "GET", ok, host, ua); status != 200 {
				t.Errorf("%s %s: allowed path got %d", host, ok, status)
			}
		}
		// Not origin-form, not absolute-form with an authority: 400.
		for _, bad := range []string{"foo:/private/secret.html", "http:/private/secret.html", "http:///private/secret.html"} {
			status, body := rawGet(t, httpAddr(), "GET", bad, host, ua)
			if strings.Contains(body, secret) || (status != 400 && status != 403) {
				t.Errorf("%s %s: status %d, want 400 (body %q)", host, bad, status, body)
			}
		}
		// Nothing odd panics or leaks.
		for _, odd := range []string{"/private/%00", "/private%00/secret.html", "/private%C0%AFsecret.html", "/%C0%AE%C0%AE/private/secret.html",
			"/private/secret.html%0A", "/pri%0Dvate/", "/\x7f/", "/private/secret.html;", "/private/secret.html?x=/robots.txt"} {
			status, body := rawGet(t, httpAddr(), "GET", odd, host, ua)
			if strings.Contains(body, secret) || status >= 500 {
				t.Errorf("%s %q: status %d, body %q", host, odd, status, body)
			}
		}
	}
}

// TestAdversarialLongTargets: a bot's target past 8 KiB is refused with
// 414, and a pathological pattern file answers within the engine's bound.
func TestAdversarialLongTargets(t *testing.T) {
	var rules strings.Builder
	rules.WriteString("User-agent: *\n")
	for i := range 3000 {
		fmt.Fprintf(&rules, "Disallow: /*%c%c%c*%c%c%c*q\n", 'a'+i%26, 'a'+i/26%26, 'a'+i/676%26, 'z'-i%26, 'y'-i/26%26, 'x'-i/676%26)
	}
	app := startNormalising(t, rules.String())
	newClient(t, globals+`
`+siteURL("long.localhost")+` {
	robots {
		crawl_delay off
		strikes off
	}
	reverse_proxy `+app.addr+`
}
`)
	ua := "User-Agent: " + exampleUA
	long := "/" + strings.Repeat("a", 9<<10)
	if status, _ := rawGet(t, httpAddr(), "GET", long, at("long.localhost"), ua); status != 414 {
		t.Errorf("9 KiB target: status %d, want 414", status)
	}
	if status, _ := rawGet(t, httpAddr(), "GET", long, at("long.localhost"), "User-Agent: "+chromeUA); status != 200 {
		t.Errorf("9 KiB target from a browser: status %d, want 200", status)
	}
	// A near-8 KiB target made of every segment in the wrong order.
	var p strings.Builder
	p.WriteString("/")
	for p.Len() < 8<<10-8 {
		p.WriteString("zyxq")
	}
	start := time.Now()
	for range 20 {
		rawGet(t, httpAddr(), "GET", p.String(), at("long.localhost"), ua)
	}
	if took := time.Since(start) / 20; took > 250*time.Millisecond {
		t.Errorf("hostile target took %s per request", took)
	}
}

// TestAdversarialRobotsTxtPoisoning: no client can make a response the
// rules: /robots.txt is recognised on the parsed path only, a client's
// download never becomes a version, and an incomplete body is never
// published.
func TestAdversarialRobotsTxtPoisoning(t *testing.T) {
	dir := advSite(t, advRobots)
	app := startNormalising(t, advRobots)
	newClient(t, globals+`
`+siteURL("files.localhost")+` {
	root * `+dir+`
	robots {
		refresh 1s
		crawl_delay off
		strikes off
	}
	file_server
}
`+siteURL("proxied.localhost")+` {
	robots {
		refresh 1s
		crawl_delay off
		strikes off
	}
	reverse_proxy `+app.addr+`
}
`)
	ua := "User-Agent: " + exampleUA
	for _, host := range []string{at("files.localhost"), at("proxied.localhost")} {
		if s, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", host, ua); s != 403 {
			t.Fatalf("%s: baseline %d, want 403", host, s)
		}
		// Absolute-form with the path in the query: asks for "/".
		status, body := rawGet(t, httpAddr(), "GET", "http://"+host+"?/robots.txt", host, ua)
		if status != 200 || strings.Contains(body, "User-agent") {
			t.Logf("%s: http://host?/robots.txt answered %d %q", host, status, body)
		}
		time.Sleep(1500 * time.Millisecond)
		if s, body := rawGet(t, httpAddr(), "GET", "/private/secret.html", host, ua); s != 403 || strings.Contains(body, secret) {
			t.Errorf("%s: after http://host?/robots.txt the private page got %d", host, s)
		}
	}

	// A backend that closes early: declares 1034 bytes, sends 29 saying
	// "Allow: /". The last good copy stays.
	app.set(func(b *normalisingBackend) { b.earlyClose = true })
	time.Sleep(2500 * time.Millisecond) // two refreshes
	if s, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", at("proxied.localhost"), ua); s != 403 {
		t.Errorf("after an incomplete robots.txt: %d, want 403 (the last good copy)", s)
	}
	// A robots.txt that never finishes: the load times out, the last good
	// copy stays, the server keeps answering.
	app.set(func(b *normalisingBackend) { b.earlyClose, b.endless = false, true })
	time.Sleep(2500 * time.Millisecond)
	if s, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", at("proxied.localhost"), ua); s != 403 {
		t.Errorf("during an endless robots.txt: %d, want 403", s)
	}
	app.set(func(b *normalisingBackend) { b.endless = false })
}

// TestAdversarialAbortedClientDownload: a client that aborts its own
// download of a large robots.txt does not publish the part it read.
func TestAdversarialAbortedClientDownload(t *testing.T) {
	big := "User-agent: *\n" + strings.Repeat("# padding line of a large robots.txt file\n", 200<<10/42) + "Disallow: /private/\n"
	dir := advSite(t, big)
	app := startNormalising(t, big)
	newClient(t, globals+`
`+siteURL("abortfiles.localhost")+` {
	root * `+dir+`
	robots {
		crawl_delay off
		strikes off
	}
	file_server
}
`+siteURL("abortproxied.localhost")+` {
	robots {
		crawl_delay off
		strikes off
	}
	reverse_proxy `+app.addr+`
}
`)
	ua := "User-Agent: " + exampleUA
	for _, host := range []string{at("abortfiles.localhost"), at("abortproxied.localhost")} {
		if s, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", host, ua); s != 403 {
			t.Fatalf("%s: baseline %d", host, s)
		}
		for range 5 {
			conn, err := net.Dial("tcp", httpAddr())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "GET /robots.txt HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n\r\n", host, exampleUA)
			buf := make([]byte, 32<<10)
			_, _ = io.ReadFull(conn, buf)
			_ = conn.Close()
		}
		time.Sleep(300 * time.Millisecond)
		if s, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", host, ua); s != 403 {
			t.Errorf("%s: after aborted downloads the private page got %d, want 403", host, s)
		}
	}
}

// TestAdversarialCapCutsLine: a file past 500 KiB whose cap falls inside
// "Disallow: /archive/..." does not turn it into "Disallow: /".
func TestAdversarialCapCutsLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /private/\n")
	pad := (500 << 10) - b.Len() - len("Disallow: /")
	b.WriteString(strings.Repeat("#", pad-1) + "\n")
	b.WriteString("Disallow: /archive/2019/\n")
	if b.Len() <= 500<<10 {
		t.Fatal("test file does not cross the cap")
	}
	for _, src := range []string{"site", "file"} {
		dir := advSite(t, b.String())
		robots := "robots {\n\t\tcrawl_delay off\n\t}"
		if src == "file" {
			robots = "robots {\n\t\tsource file " + filepath.Join(dir, "robots.txt") + "\n\t\tcrawl_delay off\n\t}"
		}
		c := newClient(t, globals+`
`+siteURL("cap.localhost")+` {
	root * `+dir+`
	`+robots+`
	file_server
}
`)
		c.expect(siteURL("cap.localhost")+"/public/", exampleUA, 200)
		c.expect(siteURL("cap.localhost")+"/private/secret.html", exampleUA, 403)
	}
}

// TestAdversarialInlineServed: with source inline (or file), /robots.txt
// answers with the enforced text, so a crawler that follows it is never
// refused; robots_txt pass keeps the site's own.
func TestAdversarialInlineServed(t *testing.T) {
	dir := advSite(t, "User-agent: *\nAllow: /\n")
	c := newClient(t, globals+`
`+siteURL("inline.localhost")+` {
	root * `+dir+`
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
	}
	file_server
}
`+siteURL("pass.localhost")+` {
	root * `+dir+`
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		robots_txt pass
		crawl_delay off
	}
	file_server
}
`)
	res := c.expect(siteURL("inline.localhost")+"/robots.txt", exampleUA, 200, "Disallow: /private/")
	if strings.Contains(res.body, "Allow: /\n") {
		t.Errorf("served the site's file, not the enforced one: %q", res.body)
	}
	c.expect(siteURL("inline.localhost")+"/robots.txt", chromeUA, 200, "Disallow: /private/")
	c.expect(siteURL("pass.localhost")+"/robots.txt", exampleUA, 200, "Allow: /")
}

// TestAdversarialLoaderScheme: an app that redirects every request without
// X-Forwarded-Proto https (behind a TLS-terminating proxy) gets the
// loader's request as https, so the site has its rules.
func TestAdversarialLoaderScheme(t *testing.T) {
	app := startNormalising(t, advRobots)
	app.set(func(b *normalisingBackend) { b.httpsOnly = true })
	newClient(t, globalsWith(`	servers {
		trusted_proxies static 127.0.0.1/32
		trusted_proxies_strict
	}
`)+siteURL("tls.localhost")+` {
	robots {
		crawl_delay off
		strikes off
	}
	reverse_proxy `+app.addr+`
}
`)
	status, body := rawGet(t, httpAddr(), "GET", "/private/secret.html", at("tls.localhost"),
		"User-Agent: "+exampleUA, "X-Forwarded-Proto: https", "X-Forwarded-For: 203.0.113.9")
	if status != 403 || strings.Contains(body, secret) {
		t.Errorf("https-only app: bot got %d %q, want 403 (the loader must ask as https)", status, body)
	}
}

// TestAdversarialSitesKeepTheirRules: a site on another port with the same
// host name, and a catch-all site reached with a trailing-dot Host, do not
// govern a site with their robots.txt.
func TestAdversarialSitesKeepTheirRules(t *testing.T) {
	strict := advSite(t, advRobots)
	open := advSite(t, "User-agent: *\nAllow: /\n")
	c := newClient(t, globals+`
`+siteURL("twoport.localhost")+` {
	root * `+strict+`
	robots {
		crawl_delay off
	}
	file_server
}
http://`+hostPort("twoport.localhost", altPort)+` {
	root * `+open+`
	robots {
		crawl_delay off
	}
	file_server
}
:`+strconv.Itoa(alt2Port)+` {
	root * `+open+`
	robots {
		crawl_delay off
	}
	file_server
}
http://`+hostPort("strict.localhost", alt2Port)+` {
	root * `+strict+`
	robots {
		crawl_delay off
	}
	file_server
}
`)
	c.expect("http://"+hostPort("twoport.localhost", altPort)+"/private/secret.html", exampleUA, 200)
	c.expect(siteURL("twoport.localhost")+"/private/secret.html", exampleUA, 403)
	alt2 := hostPort("127.0.0.1", alt2Port)
	status, _ := rawGet(t, alt2, "GET", "/private/secret.html", hostPort("strict.localhost.", alt2Port), "User-Agent: "+exampleUA)
	_ = status // the catch-all (or the strict site) answers; either way its own rules
	if s, body := rawGet(t, alt2, "GET", "/private/secret.html", hostPort("strict.localhost", alt2Port), "User-Agent: "+exampleUA); s != 403 || strings.Contains(body, secret) {
		t.Errorf("strict site after a trailing-dot request: %d, want 403", s)
	}
	// The Host as a bot may spell it: case and an explicit port name the
	// same site, which keeps its rules (the handler parses the Host once
	// for the site key and the crawler's identity).
	for _, host := range []string{hostPort("STRICT.Localhost", alt2Port), hostPort("strict.LOCALHOST", alt2Port)} {
		if s, body := rawGet(t, alt2, "GET", "/private/secret.html", host, "User-Agent: "+exampleUA); s != 403 || strings.Contains(body, secret) {
			t.Errorf("strict site with Host %q: %d, want 403", host, s)
		}
	}
}

// TestAdversarialHostFlood: random Host headers on a catch-all site with a
// 500 KiB robots.txt cost a small entry each, not a parsed copy each, and
// do not evict the rules (and grace history) of a site in use.
func TestAdversarialHostFlood(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /private/\n")
	for i := 0; b.Len() < 499<<10; i++ {
		fmt.Fprintf(&b, "User-agent: bot%d\nDisallow: /x%d/\n", i, i)
	}
	dir := advSite(t, b.String())
	c := newClient(t, globals+`
:`+strconv.Itoa(httpPort)+` {
	root * `+dir+`
	robots {
		crawl_delay off
		strikes off
	}
	file_server
}
`)
	c.expect(siteURL("real.localhost")+"/private/secret.html", exampleUA, 403)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := range 300 {
		host := at(randHex(8) + ".flood.localhost")
		status, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", host, "User-Agent: "+exampleUA)
		if status != 403 {
			t.Fatalf("flood request %d: %d", i, status)
		}
		if i%50 == 0 {
			c.expect(siteURL("real.localhost")+"/private/secret.html", exampleUA, 403)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("300 random hosts with a 500 KiB robots.txt: heap %+d KiB, %s", grew>>10, time.Since(start))
	if grew > 64<<20 {
		t.Errorf("heap grew by %d MiB for 300 hosts sharing one robots.txt", grew>>20)
	}
	// Nor does the flood fill the disk: a new site's history is written
	// once the site is established (requested again a minute later), or
	// when its robots.txt changes. It used to be one file per Host.
	time.Sleep(500 * time.Millisecond) // histories are written in the background
	if n := len(siteHistories(t, ".flood.localhost")); n > 0 {
		t.Errorf("300 random hosts wrote %d site histories to storage", n)
	}
}

// siteHistories returns the hosts of the site histories in the tests'
// Caddy storage whose host ends with suffix. (Other tests' sites, reloaded
// through a later test's catch-all site, may change and be written.)
func siteHistories(t *testing.T, suffix string) []string {
	t.Helper()
	dir := filepath.Join(os.Getenv("CADDY_ROBOTS_IT_STORAGE"), "caddy-robots", "sites")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var hosts []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Host string `json:"host"`
		}
		if err := json.Unmarshal(data, &h); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if strings.HasSuffix(h.Host, suffix) {
			hosts = append(hosts, h.Host)
		}
	}
	return hosts
}

func randHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// TestAdversarialHostileInputs: a 64 KiB User-Agent, control characters,
// a binary robots.txt and one of 100,000 groups: no panic, bounded time,
// bounded memory.
func TestAdversarialHostileInputs(t *testing.T) {
	bin := make([]byte, 300<<10)
	_, _ = rand.Read(bin)
	var groups strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&groups, "User-agent: b%d\nDisallow: /x%d\n", i, i)
	}
	groups.WriteString("User-agent: *\nDisallow: /private/\n") // past the cap: never seen
	binDir := advSite(t, string(bin))
	groupsDir := advSite(t, groups.String())
	newClient(t, globals+`
`+siteURL("binary.localhost")+` {
	root * `+binDir+`
	robots {
		crawl_delay off
	}
	file_server
}
`+siteURL("groups.localhost")+` {
	root * `+groupsDir+`
	robots {
		crawl_delay off
	}
	file_server
}
`)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	hugeUA := "Bot/1.0 " + strings.Repeat("x", 64<<10)
	for _, host := range []string{at("binary.localhost"), at("groups.localhost")} {
		for _, ua := range []string{exampleUA, hugeUA, "Bot\x01/1.0", "Mozilla/5.0 \x7f", "ExampleCrawler/1.0\tx"} {
			for _, path := range []string{"/public/", "/private/secret.html", "/x5/"} {
				status, body := rawGet(t, httpAddr(), "GET", path, host, "User-Agent: "+ua)
				if status >= 500 && status != 503 {
					t.Errorf("%s %s UA %.20q: status %d %q", host, path, ua, status, body)
				}
			}
		}
	}
	// The file of 100,000 groups is read up to its 500 KiB cap: group
	// b5 is in it, "*" past the cap is not.
	if s, _ := rawGet(t, httpAddr(), "GET", "/x5/a", at("groups.localhost"), "User-Agent: b5/1.0"); s != 403 {
		t.Errorf("group b5 of 100,000: %d, want 403", s)
	}
	if s, _ := rawGet(t, httpAddr(), "GET", "/private/secret.html", at("groups.localhost"), "User-Agent: "+exampleUA); s == 403 {
		t.Error("a rule past the 500 KiB cap was enforced")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("hostile inputs: %s, heap %+d KiB", time.Since(start), (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>10)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("hostile inputs took %s", took)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 128<<20 {
		t.Errorf("heap grew by %d MiB", grew>>20)
	}
}

// awaitRule waits until a bot's request for url is refused by rule. Right
// after a config load, the previous config's server may still answer a
// connection the kernel handed it (SO_REUSEPORT) as it shuts down: with
// its own routes, where this site may not exist (Caddy's empty 200) or has
// its old rules. A few seconds cover that; rules that stay stale until the
// next refresh (1h here) do not pass.
func awaitRule(c client, url, rule string) {
	c.t.Helper()
	var last response
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		last = c.get(url, exampleUA)
		if last.status == http.StatusForbidden && strings.Contains(last.body, rule) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Errorf("GET %s as a bot: %d %q, want 403 by %q", url, last.status, last.body, rule)
}

// TestAdversarialReloadAppliesAtOnce: a config reload that gives a site
// another robots.txt (here a new root) applies the new rules from the
// first decision after it. The rules of the previous config used to stay
// until the next refresh (up to a second), refusing pages the new file
// allows. (Pages the new file newly forbids stay allowed for 24 hours,
// the grace a crawler holding the old file is owed; so the switch back is
// seen in which rule refuses.)
func TestAdversarialReloadAppliesAtOnce(t *testing.T) {
	before := advSite(t, "User-agent: *\nDisallow: /x/\nDisallow: /private/\n")
	after := advSite(t, "User-agent: *\nAllow: /public/\nDisallow: /x/\n")
	config := func(root string) string {
		return globals + `
` + siteURL("reload-at-once.localhost") + ` {
	root * ` + root + `
	robots {
		refresh 1h
		crawl_delay off
		strikes off
	}
	file_server
}
`
	}
	site := siteURL("reload-at-once.localhost")
	c := newClient(t, config(before))
	awaitRule(c, site+"/x/y", "Rule: Disallow: /x/ (line 2)")
	c.expect(site+"/private/secret.html", exampleUA, 403)
	for round := range 3 {
		c = newClient(t, config(after))
		awaitRule(c, site+"/x/y", "Rule: Disallow: /x/ (line 3)")
		c.expect(site+"/private/secret.html", exampleUA, 200, secret)
		c = newClient(t, config(before))
		awaitRule(c, site+"/x/y", "Rule: Disallow: /x/ (line 2)")
		if t.Failed() {
			t.Fatalf("round %d: the previous config's rules applied after the reload", round)
		}
	}
}
