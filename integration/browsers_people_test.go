package integration

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// People first, request kind by request kind: real, headed Chromium and
// Firefox ESR under Xvfb, with every undeclared signal enforced (client_hints
// included) and the trap on, against a real Caddy over HTTPS whose
// robots.txt disallows everything for "*" (so that any request judged as an
// undeclared crawler's is refused, and seen to be).
//
// Each browser first opens a page on another site (https://localhost, a
// different site from https://127.0.0.1 for the browsers) that makes it ask
// for the trap of 127.0.0.1 the ways another web page can: an <img>, a
// new Image(), a <link rel=prefetch>, and a top-level navigation redirected
// to it. Then it loads 127.0.0.1's page, served with Permissions-Policy:
// ch-ua=() (so Chromium sends no Sec-CH-UA on its subresources), which:
// opens six WebSockets, starts a dedicated worker (which fetches), registers
// a service worker (whose install fetches), sends a CORS preflight, a
// beacon and an EventSource, downloads a file, prefetches every link of the
// page the way prefetch-all scripts do (the hidden trap link included) and
// one by speculation rules, then reports. Every request but the trap's must
// reach the backend, no request may be judged as an undeclared crawler's,
// and no trap request may mark the browser.
//
// The same runs for Firefox whose User-Agent is switched to Chrome's (a
// person with a User-Agent switcher: Fetch Metadata, never Sec-CH-UA) and
// for Chromium with a User-Agent of its own set on the command line (as
// DevTools' override does).

const peopleEvil = `<!doctype html>
<html><head><title>another site</title>
<link rel="prefetch" href="%[1]s/no-robots/prefetched-by-another-site">
</head><body><h1>Another site</h1>
<img src="%[1]s/no-robots/img-by-another-site" width="10" height="10" alt="">
<script>
new Image().src = "%[1]s/no-robots/new-image-by-another-site";
setTimeout(() => { window.open("/hop"); }, 800);
setTimeout(() => { location.href = "%[1]s/start.html"; }, 2500);
</script></body></html>
`

const peopleStart = `<!doctype html>
<html><head><title>caddy-robots: people first</title>
<link rel="stylesheet" href="/style.css">
<script type="speculationrules">{"prefetch": [{"source": "list", "urls": ["/speculated.html", "/no-robots/speculated"]}]}</script>
<script src="/people.js" defer></script></head>
<body>
<a href="/no-robots/" rel="nofollow" hidden aria-hidden="true" tabindex="-1">Do not follow this link: it is a trap for crawlers that ignore robots.txt.</a>
<a href="/about.html">About</a>
<h1>Request kinds</h1>
<p><img src="/img.svg" width="120" height="60" alt="image"> <span id="status">running…</span></p>
<ul id="results"></ul>
</body></html>
`

const peopleScript = `
const results = {};
function note(k, v) {
	results[k] = v;
	const li = document.createElement("li");
	li.textContent = k + ": " + v;
	document.getElementById("results").appendChild(li);
}
function socket(i) {
	return new Promise(ok => {
		const ws = new WebSocket("wss://" + location.host + "/ws/" + i);
		const t = setTimeout(() => { ok("timeout"); }, 5000);
		ws.onmessage = e => { clearTimeout(t); ws.close(); ok(String(e.data)); };
		ws.onerror = () => { clearTimeout(t); ok("error"); };
	});
}
async function run() {
	// Prefetch every link, as prefetch-all scripts do.
	for (const a of document.querySelectorAll("a[href]")) {
		const l = document.createElement("link"); l.rel = "prefetch"; l.href = a.href;
		document.head.appendChild(l);
	}
	for (let i = 1; i <= 6; i++) { note("websocket " + i, await socket(i)); }
	note("worker", await new Promise(ok => {
		const w = new Worker("/worker.js");
		w.onmessage = e => ok(String(e.data));
		w.onerror = () => ok("error");
		setTimeout(() => ok("timeout"), 5000);
	}));
	if (navigator.serviceWorker) {
		try {
			const reg = await navigator.serviceWorker.register("/sw.js");
			await Promise.race([navigator.serviceWorker.ready, new Promise(ok => setTimeout(ok, 5000))]);
			note("service worker", reg.active ? "active" : (reg.installing || reg.waiting ? "installing" : "none"));
		} catch (e) { note("service worker", "error " + e); }
	} else { note("service worker", "unsupported"); }
	try {
		const r = await fetch("https://localhost:" + location.port + "/api/cors", {method: "PUT", headers: {"X-Robots-Test": "1"}, body: "x"});
		note("preflight", r.status);
	} catch (e) { note("preflight", "error " + e); }
	note("beacon", navigator.sendBeacon("/api/beacon", "hello") ? "queued" : "refused");
	note("eventsource", await new Promise(ok => {
		const es = new EventSource("/events");
		es.onmessage = e => { es.close(); ok(String(e.data)); };
		es.onerror = () => { es.close(); ok("error"); };
		setTimeout(() => { es.close(); ok("timeout"); }, 5000);
	}));
	let r = await fetch("/api/data"); note("fetch", r.status);
	const a = document.createElement("a"); a.href = "/download.bin"; a.download = "download.bin";
	document.body.appendChild(a); a.click(); note("download", "clicked");
	await new Promise(ok => setTimeout(ok, 2000));
	const img = document.querySelector("img"); note("image", img.complete && img.naturalWidth > 0 ? "loaded" : "broken");
	await fetch("/report", {method: "POST", body: JSON.stringify(results)});
	document.getElementById("status").textContent = "done";
	setTimeout(() => { location.href = "/done.html"; }, 300);
}
run().catch(e => { note("error", String(e)); fetch("/report", {method: "POST", body: JSON.stringify(results)}); });
`

// peopleBackend serves both sites' pages and records every request it is
// sent, with the headers that tell its kind.
type peopleBackend struct {
	a    string // the origin of the site under test: https://127.0.0.1:port
	mu   sync.Mutex
	seen []string
	done chan struct{}
	once sync.Once
}

func (b *peopleBackend) record(s string) {
	b.mu.Lock()
	b.seen = append(b.seen, s)
	b.mu.Unlock()
}

func (b *peopleBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.record(fmt.Sprintf("%s %s%s [site=%s mode=%s dest=%s ch-ua=%t purpose=%q upgrade=%q]", r.Method, r.Host, r.URL.Path,
		r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest"), r.Header.Get("Sec-Ch-Ua") != "",
		r.Header.Get("Sec-Purpose")+r.Header.Get("Purpose")+r.Header.Get("X-Moz"), r.Header.Get("Upgrade")))
	html := func(s string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, s)
	}
	switch p := r.URL.Path; {
	case p == "/evil.html":
		html(fmt.Sprintf(peopleEvil, b.a))
	case p == "/hop":
		http.Redirect(w, r, b.a+"/no-robots/top-level-redirect", http.StatusFound)
	case p == "/start.html":
		w.Header().Set("Permissions-Policy", "ch-ua=()")
		html(peopleStart)
	case p == "/about.html", p == "/speculated.html":
		html("<!doctype html><p>about</p>")
	case p == "/style.css":
		w.Header().Set("Content-Type", "text/css")
		io.WriteString(w, "body { background: rgb(230, 240, 255); font: 20px sans-serif; }")
	case p == "/people.js":
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, peopleScript)
	case p == "/worker.js":
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, `fetch("/api/from-worker").then(r => postMessage("fetched " + r.status), e => postMessage("error " + e));`)
	case p == "/sw.js":
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, `self.addEventListener("install", e => { e.waitUntil(fetch("/api/from-service-worker").then(() => self.skipWaiting())); });
self.addEventListener("activate", e => { e.waitUntil(self.clients.claim()); });`)
	case p == "/img.svg":
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="rgb(200,60,60)"/></svg>`)
	case p == "/api/cors":
		w.Header().Set("Access-Control-Allow-Origin", b.a)
		w.Header().Set("Access-Control-Allow-Methods", "PUT")
		w.Header().Set("Access-Control-Allow-Headers", "X-Robots-Test")
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		io.WriteString(w, "cors ok")
	case p == "/events":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: hello\n\n")
	case strings.HasPrefix(p, "/ws/"):
		serveWebSocket(w, r)
	case p == "/download.bin":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="download.bin"`)
		w.Write(make([]byte, 4096))
	case p == "/report":
		body, _ := io.ReadAll(r.Body)
		b.record("report " + string(body))
	case p == "/done.html":
		html(`<!doctype html><html><head><link rel="stylesheet" href="/style.css"></head><body><h1>All done</h1></body></html>`)
		b.once.Do(func() { close(b.done) })
	case strings.HasPrefix(p, "/api/"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	default:
		http.NotFound(w, r)
	}
}

// serveWebSocket answers a WebSocket handshake (RFC 6455) and sends one
// text message, "hello".
func serveWebSocket(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if key == "" || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		http.Error(w, "not a websocket handshake", http.StatusBadRequest)
		return
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	rw.Write([]byte{0x81, 5, 'h', 'e', 'l', 'l', 'o'})
	rw.Flush()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = bufio.NewReader(conn).ReadByte() // the client's close
}

func (b *peopleBackend) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// peopleWants are the requests (method and path on the site under test,
// or host and path on the other one) every browser must have had served.
var peopleWants = []string{
	"GET /start.html", "GET /style.css", "GET /people.js", "GET /img.svg", "GET /ws/1", "GET /ws/6",
	"GET /worker.js", "GET /api/from-worker", "GET /sw.js", "GET /api/from-service-worker",
	"OPTIONS localhost/api/cors", "PUT localhost/api/cors", "POST /api/beacon", "GET /events", "GET /api/data",
	"GET /download.bin", "POST /report", "GET /done.html",
}

const chromeUA156 = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"

func TestRealBrowsersPeopleFirst(t *testing.T) {
	realBrowsersPeopleFirst(t, tlsGlobals())
}

// realBrowsersPeopleFirst is TestRealBrowsersPeopleFirst under the global
// options globals (with or without robots_fingerprint).
func realBrowsersPeopleFirst(t *testing.T, globals string) {
	ca := newTestCA(t, "127.0.0.1", "localhost")
	a := "https://" + hostPort("127.0.0.1", httpsPort)
	backend := &peopleBackend{a: a, done: make(chan struct{})}
	backendAddr := serveLocal(t, backend)
	site := func(host string) string {
		return fmt.Sprintf(`
https://%s {
	tls %s %s
	robots {
		source inline "User-agent: *\nDisallow: /\nCrawl-delay: 5\n"
		undeclared enforce
		trap /no-robots/
	}
	reverse_proxy %s
}
`, hostPort(host, httpsPort), ca.certFile, ca.keyFile, backendAddr)
	}
	newClient(t, globals+site("127.0.0.1")+site("localhost"))
	display := startXvfb(t)

	runs := []struct {
		name   string
		launch func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd
	}{
		{"chromium", func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd {
			return launchChromium(t, display, url, home, ca, "")
		}},
		{"chromium-ua-override", func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd {
			return launchChromium(t, display, url, home, ca, chromeUA)
		}},
		{"firefox-esr", func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd {
			return launchFirefox(t, display, url, home, ca, "")
		}},
		{"firefox-esr-as-chrome", func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd {
			return launchFirefox(t, display, url, home, ca, chromeUA156)
		}},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			backend.mu.Lock()
			backend.seen, backend.done, backend.once = nil, make(chan struct{}), sync.Once{}
			done := backend.done
			backend.mu.Unlock()
			judged := func() float64 {
				return undeclaredMetric(t, "caddy_robots_undeclared_total", `mode="enforce"`) -
					undeclaredMetric(t, "caddy_robots_undeclared_total", `action="trap_unmarked"`) +
					undeclaredMetric(t, "caddy_robots_decisions_total", `category="undeclared"`)
			}
			unmarked := func() float64 {
				return undeclaredMetric(t, "caddy_robots_undeclared_total", `action="trap_unmarked"`)
			}
			before, unmarkedBefore := judged(), unmarked()
			home, err := os.MkdirTemp("", "robots-people-")
			if err != nil {
				t.Fatal(err)
			}
			cmd := run.launch(t, display, "https://"+hostPort("localhost", httpsPort)+"/evil.html", home, ca)
			startBrowser(t, cmd, home)
			select {
			case <-done:
			case <-time.After(120 * time.Second):
				log, _ := os.ReadFile(filepath.Join(home, "browser.log"))
				t.Fatalf("%s did not finish the page in 120 s; requests: %q\nbrowser log tail: %s", run.name, backend.requests(), lastLines(string(log), 20))
			}
			time.Sleep(time.Second)
			reqs := backend.requests()
			sort.Strings(reqs)
			t.Logf("%s: the backend was sent %d requests:\n  %s", run.name, len(reqs), strings.Join(reqs, "\n  "))
			checkPeopleServed(t, run.name, reqs)
			if d := judged() - before; d != 0 {
				t.Errorf("%s: %v requests judged as an undeclared crawler's or marked by the trap, want 0", run.name, d)
			}
			// The other site's image, new Image() and redirected
			// navigation did reach the trap (and its 403), marking nobody.
			if d := unmarked() - unmarkedBefore; d < 3 {
				t.Errorf("%s: %v trap requests caused by another site or a prefetch, want at least 3: the test did not attack", run.name, d)
			} else {
				t.Logf("%s: %v trap requests caused by another site or by prefetching, none marked the browser", run.name, d)
			}
		})
	}
}

// checkPeopleServed checks that the backend got every request of
// peopleWants from the browser named name (reqs are what it got), and that
// the page's report has no error.
func checkPeopleServed(t *testing.T, name string, reqs []string) {
	t.Helper()
	for _, want := range peopleWants {
		method, path, _ := strings.Cut(want, " ")
		host := "127.0.0.1"
		if h, p, ok := strings.Cut(path, "/"); ok && h != "" {
			host, path = h, "/"+p
		}
		found := false
		for _, r := range reqs {
			found = found || strings.HasPrefix(r, method+" "+hostPort(host, httpsPort)+path+" ")
		}
		if !found {
			t.Errorf("%s: the backend never got %s (refused, or never sent)", name, want)
		}
	}
	for _, r := range reqs {
		if strings.HasPrefix(r, "report ") {
			for _, bad := range []string{`"error"`, `:"timeout"`, `"broken"`} {
				if strings.Contains(r, bad) {
					t.Errorf("%s: the page's report has %s: %s", name, bad, r)
				}
			}
		}
	}
}

// galleryBackend is the site of the tests where a person's browser shares
// its address with a trapped script: a first page that waits until goCh is
// closed, then a gallery (galleryPage), then done.html, which closes done.
// It records every request, and the User-Agent and forwarded address of
// the first request for /.
type galleryBackend struct {
	mu      sync.Mutex
	seen    []string
	ua      string
	ip      string // the browser's address, as a proxy in front forwards it
	gallery string
	goCh    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// newGalleryBackend returns the site serving gallery, its first page
// waiting.
func newGalleryBackend(gallery string) *galleryBackend {
	return &galleryBackend{gallery: gallery, goCh: make(chan struct{}), done: make(chan struct{})}
}

// galleryPage is a page with a style sheet and n images whose script
// fetches each of paths in turn once loaded, then moves on to done.html.
func galleryPage(n int, paths ...string) string {
	gallery := "<!doctype html><html><head><link rel=stylesheet href=/style.css></head><body><h1>Gallery</h1>"
	for i := range n {
		gallery += fmt.Sprintf(`<img src="/img/%d.svg" width="40" height="40" alt="">`, i)
	}
	gallery += `<script>window.onload = async () => { let title = "fetch";`
	for _, p := range paths {
		gallery += fmt.Sprintf(` title += " " + (await fetch(%q)).status;`, p)
	}
	return gallery + ` document.title = title; setTimeout(() => { location.href = "/done.html"; }, 300); };</script></body></html>`
}

// record notes r, and the User-Agent and forwarded address of the first
// request for /.
func (b *galleryBackend) record(r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = append(b.seen, r.Method+" "+r.URL.Path)
	if r.URL.Path == "/" && b.ua == "" {
		b.ua, b.ip = r.UserAgent(), r.Header.Get("X-Forwarded-For")
	}
}

// browser returns the browser's User-Agent and forwarded address ("" until
// its first page).
func (b *galleryBackend) browser() (ua, ip string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ua, b.ip
}

func (b *galleryBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.record(r)
	switch p := r.URL.Path; {
	case p == "/":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><p>waiting</p><script>
async function wait() { const r = await fetch("/api/wait"); if ((await r.text()) == "go") { location.href = "/gallery.html"; } else { setTimeout(wait, 300); } }
wait();</script>`)
	case p == "/api/wait":
		select {
		case <-b.goCh:
			io.WriteString(w, "go")
		default:
			io.WriteString(w, "wait")
		}
	case p == "/gallery.html":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, b.gallery)
	case p == "/style.css":
		w.Header().Set("Content-Type", "text/css")
		io.WriteString(w, "body { background: rgb(230, 240, 255); }")
	case strings.HasPrefix(p, "/img/"):
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" fill="rgb(200,60,60)"/></svg>`)
	case p == "/done.html":
		io.WriteString(w, "done")
		b.once.Do(func() { close(b.done) })
	default:
		io.WriteString(w, "ok")
	}
}

// scriptGetter returns a GET of base's paths from 127.0.0.1 with the
// User-Agent ua and no other header, which returns the status and body.
func scriptGetter(t *testing.T, ca testCA, base, ua string) func(path string) (int, string) {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: ca.clientTLS(t),
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp4", hostPort("127.0.0.1", httpsPort))
		}}, Timeout: 10 * time.Second}
	return func(path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("User-Agent", ua)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
}

// The neighbour's mark. A script on the browser's own address, with the
// browser's exact User-Agent, takes the trap, is refused a disallowed page
// three times and is banned. Then the person in headed Chromium on that
// address loads a page with nine images, a style and a fetch, all on
// allowed paths, within one Crawl-delay window: every request is served
// (its requests carry Chromium's own headers, so they are judged by
// robots.txt's rules alone: no throttle, no strike, no ban), while the
// script stays banned.
func TestRealBrowserBesideATrappedScript(t *testing.T) {
	// A site block of its own (neighbour.localhost, which Chromium
	// resolves to loopback by itself): the script's trap mark and ban,
	// kept process-wide per site block, reach no other test's browser.
	const host = "neighbour.localhost"
	ca := newTestCA(t, host)
	backend := newGalleryBackend(galleryPage(9, "/api/data"))
	backendAddr := serveLocal(t, backend)
	newClient(t, tlsGlobals()+fmt.Sprintf(`
https://%s {
	tls %s %s
	robots {
		source inline "User-agent: *\nDisallow: /private/\nCrawl-delay: 30\n"
		trap /no-robots/
		strikes 3 10m 1h
	}
	reverse_proxy %s
}
`, hostPort(host, httpsPort), ca.certFile, ca.keyFile, backendAddr))
	display := startXvfb(t)
	home, err := os.MkdirTemp("", "robots-neighbour-")
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + hostPort(host, httpsPort)
	cmd := launchChromium(t, display, base+"/", home, ca, "")
	startBrowser(t, cmd, home)
	eventually(t, 60*time.Second, "Chromium to load the first page", func() bool {
		ua, _ := backend.browser()
		return ua != ""
	})
	browserUA, _ := backend.browser()
	t.Logf("Chromium's User-Agent: %s", browserUA)

	// The script: Chromium's exact User-Agent, the same address, none of
	// its headers.
	get := scriptGetter(t, ca, base, browserUA)
	if s, _ := get("/no-robots/"); s != 403 {
		t.Fatalf("the script's trap request: %d", s)
	}
	for i := range 3 {
		if s, _ := get(fmt.Sprintf("/private/%d", i)); s != 403 {
			t.Fatalf("the script's disallowed request %d: %d", i, s)
		}
	}
	if s, body := get("/public"); s != 403 || !strings.Contains(body, "banned") {
		t.Fatalf("the script is not banned: %d %q", s, body)
	}
	close(backend.goCh)
	select {
	case <-backend.done:
	case <-time.After(60 * time.Second):
		backend.mu.Lock()
		t.Fatalf("Chromium did not finish the gallery; the backend got %q", backend.seen)
		backend.mu.Unlock()
	}
	backend.mu.Lock()
	got := strings.Join(backend.seen, "\n")
	backend.mu.Unlock()
	for _, want := range []string{"GET /gallery.html", "GET /style.css", "GET /api/data", "GET /done.html"} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("the person's %s was refused; the backend got:\n%s", want, got)
		}
	}
	for i := range 9 {
		if !strings.Contains(got, fmt.Sprintf("GET /img/%d.svg", i)) {
			t.Errorf("the person's image %d was refused; the backend got:\n%s", i, got)
		}
	}
	if s, body := get("/public"); s != 403 || !strings.Contains(body, "banned") {
		t.Errorf("the script is no longer banned: %d %q", s, body)
	}
}

// A person in Links in graphics mode (links2 -g, which shows the hidden
// trap link) follows it once by hand, then opens a page whose image it
// fetches right after the page, then a page robots.txt disallows, at a
// person's pace: the probation measures the pace between documents, so the
// image does not confirm the person as a crawler and the last page is
// served.
func TestTrapLinksGraphicsPerson(t *testing.T) {
	links := need(t, "links2")
	var (
		mu   sync.Mutex
		seen []string
	)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" accept="+r.Header.Get("Accept"))
		mu.Unlock()
		switch r.URL.Path {
		case "/page.html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html><body><h1>A page</h1><img src="/picture.gif" width="1" height="1"></body></html>`)
		case "/picture.gif":
			w.Header().Set("Content-Type", "image/gif")
			w.Write([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"))
		default:
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body><p>private page</p></body></html>")
		}
	})
	backendAddr := serveLocal(t, backend)
	newClient(t, globals+fmt.Sprintf(`
http://links.example:%d {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		trap /no-robots/
		crawl_delay off
	}
	reverse_proxy %s
}
`, crawlPort, backendAddr))
	display := startXvfb(t)
	home := t.TempDir()
	base := "http://" + hostPort("links.example", crawlPort)
	got := func(path string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range seen {
			if strings.HasPrefix(s, path+" ") {
				return true
			}
		}
		return false
	}
	// open runs links2 -g on url until until() holds, then closes it.
	open := func(url, what string, until func() bool) {
		// links.example reaches this machine through a proxy setting:
		// Links asks Caddy's port on loopback for the whole URL.
		cmd := exec.Command(links, "-g", "-http-proxy", hostPort("127.0.0.1", crawlPort), url)
		cmd.Env = append(os.Environ(), "DISPLAY="+display, "HOME="+home)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}()
		eventually(t, 30*time.Second, what, until)
	}
	trapsBefore := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="trap"`)
	open(base+"/no-robots/", "links -g to ask for the trap", func() bool {
		return undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="trap"`) > trapsBefore
	})
	time.Sleep(1500 * time.Millisecond)
	open(base+"/page.html", "links -g to load the page and its image", func() bool { return got("/picture.gif") })
	time.Sleep(1500 * time.Millisecond)
	blockedBefore := undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="block"`)
	open(base+"/private/p.html", "links -g to load a disallowed page at a person's pace", func() bool {
		return got("/private/p.html") || undeclaredMetric(t, "caddy_robots_undeclared_total", `signal="trap",action="block"`) > blockedBefore
	})
	t.Logf("the backend got: %q", seen)
	if !got("/private/p.html") {
		t.Errorf("the person in links -g was refused a page after following the trap once and loading a page with its image")
	}
}

// An extension's fetch: a Manifest V3 extension with host permission for
// the site fetches from its background service worker as soon as it
// starts, in headed Chromium with every undeclared signal enforced and a
// robots.txt that disallows everything for "*". Its request must be served.
func TestRealBrowserExtensionFetch(t *testing.T) {
	ca := newTestCA(t, "127.0.0.1")
	origin := "https://" + hostPort("127.0.0.1", httpsPort)
	var (
		mu   sync.Mutex
		seen []string
		done = make(chan struct{})
		once sync.Once
	)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s?%s [site=%s mode=%s dest=%s ch-ua=%t]", r.Method, r.URL.Path, r.URL.RawQuery,
			r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest"), r.Header.Get("Sec-Ch-Ua") != ""))
		mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		io.WriteString(w, "ok")
		if r.URL.Path == "/api/extension-done" {
			once.Do(func() { close(done) })
		}
	})
	backendAddr := serveLocal(t, backend)
	newClient(t, tlsGlobals()+fmt.Sprintf(`
https://%s {
	tls %s %s
	robots {
		source inline "User-agent: *\nDisallow: /\n"
		undeclared enforce
		trap /no-robots/
	}
	reverse_proxy %s
}
`, hostPort("extension.localhost", httpsPort)+", "+hostPort("127.0.0.1", httpsPort), ca.certFile, ca.keyFile, backendAddr))
	ext := t.TempDir()
	manifest := `{"manifest_version": 3, "name": "caddy-robots test", "version": "1.0",
"host_permissions": ["` + origin + `/*"], "background": {"service_worker": "bg.js"}}`
	bg := `(async () => {
	let status = "error";
	try { const r = await fetch("` + origin + `/api/from-extension"); status = String(r.status); } catch (e) { status = "error " + e; }
	await fetch("` + origin + `/api/extension-done?status=" + encodeURIComponent(status));
})();`
	if err := os.WriteFile(filepath.Join(ext, "manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ext, "bg.js"), []byte(bg), 0o644); err != nil {
		t.Fatal(err)
	}
	display := startXvfb(t)
	home, err := os.MkdirTemp("", "robots-extension-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := launchChromium(t, display, "about:blank", home, ca, "")
	// Chromium builds since 137 ignore --load-extension unless this
	// feature is turned off.
	cmd.Args = append(cmd.Args[:len(cmd.Args)-1], "--load-extension="+ext, "--disable-extensions-except="+ext,
		"--disable-features=DisableLoadExtensionCommandLineSwitch", "about:blank")
	startBrowser(t, cmd, home)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		mu.Lock()
		t.Fatalf("the extension never reported; the backend got %q", seen)
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the backend got: %q", seen)
	got := strings.Join(seen, "\n")
	if !strings.Contains(got, "GET /api/from-extension?") || !strings.Contains(got, "status=200") {
		t.Errorf("the extension's fetch was refused or failed; the backend got:\n%s", got)
	}
}
