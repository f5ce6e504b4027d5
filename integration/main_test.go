// Package integration runs caddy-robots inside a real Caddy (caddytest), in
// front of a real backend on loopback, with a real DNS server and a real
// redis-server. All caddytest tests live in this one package: caddytest runs
// one in-process Caddy per test binary. Its admin port and every port a
// site listens on are picked free when the tests start (see TestMain), so
// two checkouts can run the tests at the same time.
package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	_ "github.com/caddyrobots/caddy-robots"
	"github.com/caddyrobots/caddy-robots/internal/freeport"
)

const (
	chromeUA  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	exampleUA = "ExampleCrawler/1.0 (+https://example.com/bot)"
	gptbotUA  = "GPTBot/1.2"
	googleUA  = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	bingUA    = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
)

// The ports of this run, picked in TestMain by freeport.Take: free when
// picked, below the kernel's ephemeral range, and reserved against other
// test processes until this one exits.
var (
	adminPort  int // the in-process Caddy's admin endpoint (caddytest's AdminPort)
	httpPort   int // http_port: the port of nearly every site
	httpsPort  int // https_port (no test serves HTTPS, but Caddy's default 443 is not ours)
	altPort    int // a second HTTP port: one host on two ports; the second Caddy of the Redis test
	alt2Port   int // a third HTTP port: a catch-all beside a named site
	crawlPort  int // the site of the real-crawler tests
	admin2Port int // the admin endpoint of the Redis test's second Caddy
)

// globals is the global options block every test config starts with; it
// names this run's ports. TestMain sets it.
var globals string

// globalsWith returns the global options block with extra (whole lines,
// tab-indented) added at its end.
func globalsWith(extra string) string {
	return fmt.Sprintf(`{
	admin localhost:%d
	http_port %d
	https_port %d
	grace_period 3s
	persist_config off
	skip_install_trust
	auto_https off
	storage file_system {$CADDY_ROBOTS_IT_STORAGE}
%s}
`, adminPort, httpPort, httpsPort, extra)
}

// hostPort joins host and port: hostPort("a.localhost", 41234) is
// "a.localhost:41234".
func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// at returns host on this run's HTTP port, the Host of a request to a site
// on it: at("a.localhost") is "a.localhost:<httpPort>".
func at(host string) string { return hostPort(host, httpPort) }

// siteURL returns the URL of host's site on this run's HTTP port without a
// path, "http://a.localhost:<httpPort>": a site address in a Caddyfile, and
// the start of a request URL.
func siteURL(host string) string { return "http://" + at(host) }

// httpAddr returns the address to dial for this run's HTTP port.
func httpAddr() string { return hostPort("127.0.0.1", httpPort) }

// adminURL returns the URL of the in-process Caddy's admin endpoint.
func adminURL() string { return "http://" + hostPort("localhost", adminPort) }

// pickPorts sets the port variables and globals.
func pickPorts() error {
	ports, err := freeport.Take(7)
	if err != nil {
		return err
	}
	adminPort, httpPort, httpsPort, altPort, alt2Port, crawlPort, admin2Port =
		ports[0], ports[1], ports[2], ports[3], ports[4], ports[5], ports[6]
	globals = globalsWith("")
	// caddytest.AssertLoadError takes its Tester from Default, with no way
	// to override the admin port: the config it loads goes to this run's
	// Caddy, not to port 2999.
	caddytest.Default.AdminPort = adminPort
	return nil
}

var backend *testBackend

func TestMain(m *testing.M) {
	// No test reaches the operators' published IP lists: only loopback.
	_ = os.Setenv("CADDY_ROBOTS_RANGES_OPERATORS", "off")
	if err := pickPorts(); err != nil {
		fmt.Fprintln(os.Stderr, "ports:", err)
		os.Exit(1)
	}
	// In the package's output, for when a failure looks like a clash.
	fmt.Printf("integration ports: admin %d, http %d, https %d, alt %d and %d, crawl %d, second admin %d\n",
		adminPort, httpPort, httpsPort, altPort, alt2Port, crawlPort, admin2Port)
	dir, err := os.MkdirTemp("", "caddy-robots-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "tempdir:", err)
		os.Exit(1)
	}
	// The go command finds its caches from HOME: pin them first, so the
	// tests that build cmd/caddy use the caches that are already warm.
	if out, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output(); err == nil {
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); len(lines) == 2 {
			_ = os.Setenv("GOMODCACHE", lines[0])
			_ = os.Setenv("GOCACHE", lines[1])
		}
	}
	for _, v := range []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME", "HOME"} {
		_ = os.Setenv(v, filepath.Join(dir, strings.ToLower(v)))
	}
	// Caddy's default storage path is fixed when its package loads, before
	// this runs: every test config names this run's own storage instead, so
	// no robots.txt history leaks from one run into the next.
	_ = os.Setenv("CADDY_ROBOTS_IT_STORAGE", filepath.Join(dir, "storage"))
	backend, err = startBackend()
	if err != nil {
		fmt.Fprintln(os.Stderr, "backend:", err)
		os.Exit(1)
	}
	// caddytest posts every config to the admin endpoint with a client of
	// Go's default transport, whose pool keeps the connection open; a
	// config load may close it on the server's side, and the next POST
	// /load on that stale connection failed with EOF (POST is not
	// retried). Two checkouts testing at once on 2 cores made that race
	// common enough to fail a run: no keep-alive for those clients.
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr.DisableKeepAlives = true
	}
	code := m.Run()
	if builtCaddy.path != "" {
		_ = os.RemoveAll(filepath.Dir(builtCaddy.path))
	}
	backend.close()
	stopRedis()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// testBackend is a real HTTP server on loopback standing in for the app
// behind reverse_proxy. It answers per Host name.
type testBackend struct {
	srv      *http.Server
	addr     string
	mu       sync.Mutex
	robots   map[string]robotsAnswer // by host
	requests atomic.Int64
}

type robotsAnswer struct {
	status int
	body   string
	delay  time.Duration
}

func startBackend() (*testBackend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	b := &testBackend{addr: ln.Addr().String(), robots: map[string]robotsAnswer{}}
	b.srv = &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

func (b *testBackend) close() { _ = b.srv.Close() }

// set makes host answer /robots.txt with status and body.
func (b *testBackend) set(host string, status int, body string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.robots[host] = robotsAnswer{status: status, body: body}
}

func (b *testBackend) setSlow(host string, delay time.Duration, body string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.robots[host] = robotsAnswer{status: 200, body: body, delay: delay}
}

func (b *testBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.requests.Add(1)
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	switch {
	case strings.HasPrefix(host, "redirect.") && r.URL.Path == "/robots.txt":
		http.Redirect(w, r, "/r1", http.StatusMovedPermanently)
		return
	case strings.HasPrefix(host, "redirect.") && r.URL.Path == "/r1":
		http.Redirect(w, r, "/r2", http.StatusFound)
		return
	case strings.HasPrefix(host, "redirect.") && r.URL.Path == "/r2":
		http.Redirect(w, r, "/robots-real.txt", http.StatusTemporaryRedirect)
		return
	case strings.HasPrefix(host, "redirect.") && r.URL.Path == "/robots-real.txt":
		_, _ = io.WriteString(w, "User-agent: *\nDisallow: /via-redirect/\n")
		return
	case strings.HasPrefix(host, "loop.") && (r.URL.Path == "/robots.txt" || strings.HasPrefix(r.URL.Path, "/loop")):
		http.Redirect(w, r, fmt.Sprintf("/loop%d", time.Now().UnixNano()), http.StatusFound)
		return
	case strings.HasPrefix(host, "huge.") && r.URL.Path == "/robots.txt":
		writeHuge(w)
		return
	}
	if r.URL.Path == "/robots.txt" {
		b.mu.Lock()
		ans, ok := b.robots[host]
		b.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if ans.delay > 0 {
			select {
			case <-time.After(ans.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(ans.status)
		_, _ = io.WriteString(w, ans.body)
		return
	}
	_, _ = io.WriteString(w, "app:"+r.URL.Path)
}

// writeHuge sends a 10 MiB robots.txt: a rule at the start, then comment
// lines past the 500 KiB cap, then a rule that must never be seen.
func writeHuge(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "User-agent: *\nDisallow: /early/\n")
	line := "# " + strings.Repeat("x", 1021) + "\n"
	written := 0
	for written < 600<<10 {
		n, err := io.WriteString(w, line)
		if err != nil {
			return
		}
		written += n
	}
	_, _ = io.WriteString(w, "Disallow: /late/\n")
	for written < 10<<20 {
		n, err := io.WriteString(w, line)
		if err != nil {
			return
		}
		written += n
	}
}

// client wraps the caddytest tester with request helpers.
type client struct {
	t  *testing.T
	tc *caddytest.Tester
}

func newClient(t *testing.T, config string) client {
	t.Helper()
	return newClientOf(t, config, "caddyfile")
}

func newJSONClient(t *testing.T, config string) client {
	t.Helper()
	return newClientOf(t, config, "json")
}

func newClientOf(t *testing.T, config, adapter string) client {
	t.Helper()
	if testing.Short() && os.Getenv("CI") == "true" {
		t.Fatal("integration tests must not run with -short in CI")
	}
	// caddytest's 5 s for a config load or a request is tight for a
	// 2-core runner under the race detector; a hang still fails, later.
	tc := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          adminPort,
		TestRequestTimeout: 20 * time.Second,
		LoadRequestTimeout: 20 * time.Second,
	})
	// Fresh connections for every request: a keep-alive connection to a
	// server that a config reload is shutting down could fail.
	tc.Client.Transport.(*http.Transport).DisableKeepAlives = true
	tc.Client.Transport = resetRetrier{tc.Client.Transport}
	tc.InitServer(config, adapter)
	if t.Failed() {
		t.FailNow()
	}
	return client{t: t, tc: tc}
}

// resetRetrier resends a request whose connection the server reset or
// closed before answering. On Linux, Caddy binds a reloaded server's port
// with SO_REUSEPORT: a connection the kernel queued on the old server's
// socket in the moment before that socket closes is reset unread, and one
// the old server accepted as it shut down is closed unread (EOF). Either
// way the request was never served, so sending it again changes nothing
// the test counts. Requests through this client are GETs and HEADs, and a
// handler that aborts a response does so after its header, which
// RoundTrip has returned by then.
type resetRetrier struct{ next http.RoundTripper }

func (r resetRetrier) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		res, err := r.next.RoundTrip(req)
		if err == nil || attempt == 3 || !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
			return res, err
		}
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return res, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return res, err
			}
			req.Body = body
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type response struct {
	status int
	body   string
	header http.Header
}

// get sends GET url with the User-Agent and extra "Key: value" headers.
func (c client) get(url, ua string, headers ...string) response {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		c.t.Fatalf("building request: %v", err)
	}
	req.Header.Set("User-Agent", ua)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := c.tc.Client.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("reading %s: %v", url, err)
	}
	return response{status: res.StatusCode, body: string(body), header: res.Header}
}

// expect asserts the status of GET url and that the body contains each of
// contains; it returns the response.
func (c client) expect(url, ua string, status int, contains ...string) response {
	c.t.Helper()
	res := c.get(url, ua)
	if res.status != status {
		c.t.Errorf("GET %s as %q: status %d, want %d; body: %q", url, ua, res.status, status, res.body)
	}
	for _, s := range contains {
		if !strings.Contains(res.body, s) {
			c.t.Errorf("GET %s as %q: body %q does not contain %q", url, ua, res.body, s)
		}
	}
	return res
}

// eventually retries f until it returns true or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if f() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}

// trustLocalProxy is globalsWith a trusted proxy on 127.0.0.1, strictly:
// a test sets each request's client address with X-Forwarded-For.
func trustLocalProxy() string {
	return globalsWith("\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t\ttrusted_proxies_strict\n\t}\n")
}

// auditedSite is a Caddyfile (trustLocalProxy's globals) with one site at
// addr that logs its requests as JSON to logFile, for the audit to replay,
// and names each decision in the X-Robots-Decision, -Reason and -Rule
// response headers; body is the rest of the site block.
func auditedSite(addr, logFile, body string) string {
	return trustLocalProxy() + addr + ` {
	log {
		output file ` + logFile + `
		format json
	}
	header >X-Robots-Decision {http.robots.decision}
	header >X-Robots-Reason {http.robots.reason}
	header >X-Robots-Rule {http.robots.rule}
` + body + "}\n"
}

// repoPath returns a path relative to the repository root.
func repoPath(p string) string {
	abs, err := filepath.Abs(filepath.Join("..", p))
	if err != nil {
		return p
	}
	return abs
}

// caddyBinary builds cmd/caddy once per test process and returns its path:
// for tests that run Caddy or its robots subcommands as a separate process.
func caddyBinary(t *testing.T) string {
	t.Helper()
	builtCaddy.once.Do(func() {
		dir, err := os.MkdirTemp("", "caddy-robots-bin-")
		if err != nil {
			builtCaddy.err = err
			return
		}
		bin := filepath.Join(dir, "caddy")
		build := exec.Command("go", "build", "-o", bin, "./cmd/caddy")
		build.Dir = repoPath(".")
		if out, err := build.CombinedOutput(); err != nil {
			builtCaddy.err = fmt.Errorf("building cmd/caddy: %w\n%s", err, out)
			return
		}
		builtCaddy.path = bin
	})
	if builtCaddy.err != nil {
		t.Fatal(builtCaddy.err)
	}
	return builtCaddy.path
}

var builtCaddy struct {
	once sync.Once
	path string
	err  error
}

// serveLocal serves h on a free loopback port until the test ends, and
// returns its address (host:port): a site's backend behind reverse_proxy.
func serveLocal(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}
