package integration

import (
	"bufio"
	"fmt"
	"image/png"
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

	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// Real browsers are never judged: a headed Chromium and a headed Firefox
// ESR (Debian's, under Xvfb, each with a throwaway profile that trusts a
// throwaway CA) load a page over HTTPS through a real Caddy whose robots.txt
// disallows everything for "*", with the default undeclared signals
// (fetch_metadata and trap enforce, client_hints log) and
// fetch_metadata_safari enforced too. The page's
// script loads styles, an image, a script, a fetch, an XHR, a form post
// answered by a redirect, a fetch that is redirected, a download and a
// navigation, then reports. Any request judged as an undeclared crawler's
// would be refused (403); the backend must see every one of them, and the
// counters no undeclared crawler in enforce mode.
//
// Chromium 156 sends its download request (a.download,
// Content-Disposition: attachment) with the Fetch Metadata headers but
// without Sec-CH-UA: that is one of the kinds of request for which
// client_hints never judges a request that carries Fetch Metadata
// (browsers_people_test.go goes through every kind, client_hints enforced).

// The page every browser loads; its script does the rest.
const browserIndex = `<!doctype html>
<html><head><title>caddy-robots: a real browser</title>
<link rel="stylesheet" href="/style.css">
<script src="/app.js" defer></script></head>
<body>
<a href="/no-robots/" rel="nofollow" hidden aria-hidden="true" tabindex="-1">Do not follow this link: it is a trap for crawlers that ignore robots.txt.</a>
<h1>A person's browser</h1>
<p><img src="/img.svg" width="120" height="60" alt="image"> <span id="status">running…</span></p>
<ul id="results"></ul>
<iframe name="formframe" style="display:none"></iframe>
<form id="form" method="post" action="/form" target="formframe"><input name="q" value="hello"></form>
</body></html>
`

const browserScript = `
const results = {};
function note(k, v) {
	results[k] = v;
	const li = document.createElement("li");
	li.textContent = k + ": " + v;
	document.getElementById("results").appendChild(li);
}
async function run() {
	let r = await fetch("/api/data"); note("fetch", r.status);
	r = await fetch("/redirect"); note("fetch redirected", r.status + " " + new URL(r.url).pathname);
	await new Promise(ok => { const x = new XMLHttpRequest(); x.open("GET", "/api/xhr"); x.onload = () => { note("xhr", x.status); ok(); }; x.onerror = () => { note("xhr", "error"); ok(); }; x.send(); });
	await new Promise(ok => {
		const f = document.querySelector("iframe[name=formframe]");
		f.onload = () => { note("form post", "loaded " + (f.contentDocument ? f.contentDocument.body.textContent.trim() : "?")); ok(); };
		document.getElementById("form").submit();
	});
	const a = document.createElement("a"); a.href = "/download.bin"; a.download = "download.bin";
	document.body.appendChild(a); a.click(); note("download", "clicked");
	await new Promise(ok => setTimeout(ok, 1500));
	const img = document.querySelector("img"); note("image", img.complete && img.naturalWidth > 0 ? "loaded" : "broken");
	note("style", getComputedStyle(document.body).backgroundColor);
	await fetch("/report", {method: "POST", body: JSON.stringify(results)});
	document.getElementById("status").textContent = "done";
	setTimeout(() => { location.href = "/done.html"; }, 300);
}
run().catch(e => { note("error", String(e)); fetch("/report", {method: "POST", body: JSON.stringify(results)}); });
`

// browserBackend serves the page and records every request it is sent.
type browserBackend struct {
	mu   sync.Mutex
	seen []string // "METHOD /path sec-fetch-mode/dest ch-ua"
	done chan struct{}
	once sync.Once
}

func (b *browserBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.seen = append(b.seen, fmt.Sprintf("%s %s [%s/%s/%s ch-ua:%t]", r.Method, r.URL.Path,
		r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest"), r.Header.Get("Sec-Ch-Ua") != ""))
	b.mu.Unlock()
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, browserIndex)
	case "/style.css":
		w.Header().Set("Content-Type", "text/css")
		io.WriteString(w, "body { background: rgb(230, 240, 255); font: 20px sans-serif; } h1 { color: rgb(20, 90, 40); }")
	case "/app.js":
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, browserScript)
	case "/img.svg":
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect width="120" height="60" fill="rgb(200,60,60)"/></svg>`)
	case "/api/data", "/api/xhr":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	case "/redirect":
		http.Redirect(w, r, "/redirected", http.StatusFound)
	case "/redirected":
		io.WriteString(w, "redirected")
	case "/form":
		http.Redirect(w, r, "/after-form", http.StatusSeeOther)
	case "/after-form":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<body>form accepted</body>")
	case "/download.bin":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="download.bin"`)
		w.Write(make([]byte, 4096))
	case "/report":
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.seen = append(b.seen, "report "+string(body))
		b.mu.Unlock()
	case "/done.html":
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><html><head><link rel="stylesheet" href="/style.css"></head><body><h1>All done</h1><p>Every request was served.</p></body></html>`)
		b.once.Do(func() { close(b.done) })
	default:
		http.NotFound(w, r)
	}
}

func (b *browserBackend) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// startXvfb starts a virtual X display and returns its name (":N").
func startXvfb(t *testing.T) string {
	t.Helper()
	xvfb := need(t, "Xvfb")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1280x900x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{pw}
	if err := cmd.Start(); err != nil {
		t.Fatalf("Xvfb: %v", err)
	}
	pw.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(pr).ReadString('\n')
	pr.Close()
	if err != nil {
		t.Fatalf("Xvfb did not tell its display: %v", err)
	}
	return ":" + strings.TrimSpace(line)
}

// trustCA makes an NSS database in dir (a Firefox profile, or Chromium's
// $HOME/.pki/nssdb) that trusts ca.
func trustCA(t *testing.T, dir string, ca testCA) {
	t.Helper()
	certutil := need(t, "certutil")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-N", "-d", "sql:" + dir, "--empty-password"},
		{"-A", "-n", "caddy-robots test CA", "-t", "C,,", "-i", ca.caFile, "-d", "sql:" + dir},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %v: %v\n%s", args, err, out)
		}
	}
}

type browserRun struct {
	name   string
	launch func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd
}

var realBrowsers = []browserRun{
	{"chromium", func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd {
		return launchChromium(t, display, url, home, ca, "")
	}},
	{"firefox-esr", func(t *testing.T, display, url, home string, ca testCA) *exec.Cmd {
		return launchFirefox(t, display, url, home, ca, "")
	}},
}

// launchChromium returns the command that starts Debian's Chromium, headed
// on display, at url, with a throwaway profile in home that trusts ca, and
// with ua as its User-Agent when set (as a command-line override does).
func launchChromium(t *testing.T, display, url, home string, ca testCA, ua string) *exec.Cmd {
	chromium := chromiumtest.Find(t)
	trustCA(t, filepath.Join(home, ".pki", "nssdb"), ca)
	args := []string{"--no-sandbox", "--no-first-run", "--no-default-browser-check",
		"--user-data-dir=" + filepath.Join(home, "profile"), "--password-store=basic",
		"--disable-background-networking", "--disable-component-update", "--disable-popup-blocking",
		"--window-position=0,0", "--window-size=1280,900"}
	if ua != "" {
		args = append(args, "--user-agent="+ua)
	}
	cmd := exec.Command(chromium, append(args, url)...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "HOME="+home, "XDG_DOWNLOAD_DIR="+filepath.Join(home, "Downloads"))
	return cmd
}

// launchFirefox returns the command that starts Firefox ESR, headed on
// display, at url, with a throwaway profile in home that trusts ca, and
// with ua as its User-Agent when set (as a User-Agent switcher does).
func launchFirefox(t *testing.T, display, url, home string, ca testCA, ua string) *exec.Cmd {
	firefox := need(t, "firefox-esr")
	profile := filepath.Join(home, "profile")
	trustCA(t, profile, ca)
	prefs := []string{
		`user_pref("browser.shell.checkDefaultBrowser", false);`,
		`user_pref("browser.startup.homepage_override.mstone", "ignore");`,
		`user_pref("browser.aboutwelcome.enabled", false);`,
		`user_pref("datareporting.policy.dataSubmissionEnabled", false);`,
		`user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);`,
		`user_pref("app.update.disabledForTesting", true);`,
		`user_pref("browser.download.folderList", 2);`,
		`user_pref("browser.download.dir", "` + filepath.Join(home, "Downloads") + `");`,
		`user_pref("browser.download.useDownloadDir", true);`,
		`user_pref("browser.download.always_ask_before_handling_new_types", false);`,
		`user_pref("browser.download.alwaysOpenPanel", false);`,
		`user_pref("network.captive-portal-service.enabled", false);`,
		`user_pref("network.connectivity-service.enabled", false);`,
		`user_pref("dom.disable_open_during_load", false);`,
	}
	if ua != "" {
		prefs = append(prefs, `user_pref("general.useragent.override", "`+ua+`");`)
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(strings.Join(prefs, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(firefox, "--no-remote", "--new-instance", "--profile", profile, "--width", "1280", "--height", "900", url)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "HOME="+home, "MOZ_CRASHREPORTER_DISABLE=1")
	return cmd
}

// startBrowser starts cmd (a browser: launchChromium, launchFirefox, openDevtools) in a
// process group of its own, its output in home/browser.log, and when the
// test ends kills the group and removes home once every process that
// writes it (Chromium's zygote and renderers keep writing the profile) is
// gone: t.TempDir's cleanup would race them.
func startBrowser(t *testing.T, cmd *exec.Cmd, home string) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, _ := os.Create(filepath.Join(home, "browser.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole process group
		_ = cmd.Wait()
		logf.Close()
		for range 20 {
			if os.RemoveAll(home) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// browserWants are the requests every browser must have made.
var browserWants = []string{
	"GET / ", "GET /style.css ", "GET /app.js ", "GET /img.svg ", "GET /api/data ", "GET /redirect ",
	"GET /redirected ", "GET /api/xhr ", "POST /form ", "GET /after-form ", "GET /download.bin ",
	"POST /report ", "GET /done.html ",
}

func TestRealBrowsersNeverJudged(t *testing.T) {
	ca := newTestCA(t, "127.0.0.1")
	backend := &browserBackend{done: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: backend, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	newClient(t, tlsGlobals()+fmt.Sprintf(`
https://127.0.0.1:%d {
	tls %s %s
	robots {
		source inline "User-agent: *\nDisallow: /\n"
		undeclared {
			fetch_metadata_safari enforce
		}
		trap /no-robots/
		crawl_delay off
	}
	reverse_proxy %s
}
http://localhost:%d {
	robots {
		source inline "User-agent: *\nDisallow: /\n"
		undeclared {
			fetch_metadata_safari enforce
		}
		trap /no-robots/
		crawl_delay off
	}
	reverse_proxy %s
}
`, httpsPort, ca.certFile, ca.keyFile, ln.Addr().String(), crawlPort, ln.Addr().String()))
	display := startXvfb(t)
	// HTTPS, and plain HTTP to localhost: a secure context too, where the
	// browsers send the same headers and are held to them.
	urls := []struct{ name, url string }{
		{"https", "https://" + hostPort("127.0.0.1", httpsPort) + "/"},
		{"http-localhost", "http://" + hostPort("localhost", crawlPort) + "/"},
	}
	shots := os.Getenv("CADDY_ROBOTS_SCREENSHOTS")
	for _, run := range browserURLs(realBrowsers, urls) {
		br, url, name := run.br, run.url, run.br.name+"-"+run.scheme
		t.Run(name, func(t *testing.T) {
			backend.mu.Lock()
			backend.seen, backend.done, backend.once = nil, make(chan struct{}), sync.Once{}
			done := backend.done
			backend.mu.Unlock()
			judged := func() float64 {
				return undeclaredMetric(t, "caddy_robots_undeclared_total", `mode="enforce"`) +
					undeclaredMetric(t, "caddy_robots_decisions_total", `category="undeclared",mode="enforce"`)
			}
			logged := func() float64 {
				return undeclaredMetric(t, "caddy_robots_undeclared_total", `mode="log"`)
			}
			before, loggedBefore := judged(), logged()
			// The browser's home is removed once the browser and every
			// process it started (Chromium's zygote and renderers keep
			// writing the profile) are gone: t.TempDir's cleanup would race
			// them.
			home, err := os.MkdirTemp("", "robots-browser-")
			if err != nil {
				t.Fatal(err)
			}
			cmd := br.launch(t, display, url, home, ca)
			startBrowser(t, cmd, home)
			select {
			case <-done:
			case <-time.After(90 * time.Second):
				log, _ := os.ReadFile(filepath.Join(home, "browser.log"))
				t.Fatalf("%s did not finish the page in 90 s; requests: %q\nbrowser log tail: %s", br.name, backend.requests(), lastLines(string(log), 20))
			}
			time.Sleep(1500 * time.Millisecond) // the final page's style, the favicon, the paint
			checkFinalPageShot(t, br.name, name, display, home, shots)
			reqs := backend.requests()
			sort.Strings(reqs)
			t.Logf("%s made %d requests, all served:\n  %s", br.name, len(reqs), strings.Join(reqs, "\n  "))
			checkBrowserRequests(t, br.name, name, reqs)
			if d := judged() - before; d != 0 {
				t.Errorf("%s: %v requests judged as an undeclared crawler's, want 0", br.name, d)
			}
			if d := logged() - loggedBefore; d != 0 {
				t.Errorf("%s: %v requests judged by a signal in log mode, want 0", br.name, d)
			}
		})
	}
}

// checkFinalPageShot takes a screenshot of display (into shots, when set,
// else into home) and checks that it shows the final page, styled, of the
// browser brName in the run name.
func checkFinalPageShot(t *testing.T, brName, name, display, home, shots string) {
	t.Helper()
	shot := filepath.Join(home, "screenshot.png")
	if shots != "" {
		_ = os.MkdirAll(shots, 0o755)
		shot = filepath.Join(shots, name+".png")
	}
	if out, err := exec.Command(need(t, "import"), "-display", display, "-window", "root", shot).CombinedOutput(); err != nil {
		t.Errorf("screenshot: %v\n%s", err, out)
	} else if f, err := os.Open(shot); err != nil {
		t.Errorf("screenshot: %v", err)
	} else {
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		// The final page, styled: its background fills most of
		// the window.
		_, styled := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r == 230 && g == 240 && b == 255 })
		if styled < 200_000 {
			t.Errorf("%s: screenshot %s shows %d pixels of the page's background, want the styled final page", brName, shot, styled)
		}
		t.Logf("%s: screenshot %s (%d pixels of the page's background)", brName, shot, styled)
	}
}

// checkBrowserRequests checks the requests the backend got from the
// browser brName in the run name: every one of browserWants, a navigation
// with Fetch Metadata, no trap, a report without error.
func checkBrowserRequests(t *testing.T, brName, name string, reqs []string) {
	t.Helper()
	for _, want := range browserWants {
		found := false
		for _, r := range reqs {
			found = found || strings.HasPrefix(r, want)
		}
		if !found {
			t.Errorf("%s: the backend never got %q", brName, want)
		}
	}
	for _, r := range reqs {
		if strings.HasPrefix(r, "GET / ") && !strings.Contains(r, "/navigate/document") {
			t.Errorf("%s: the navigation came without Fetch Metadata: %s", name, r)
		}
		if strings.Contains(r, "/no-robots/") {
			t.Errorf("%s followed the hidden trap link: %s", brName, r)
		}
		if strings.HasPrefix(r, "report ") && (strings.Contains(r, `"error"`) || !strings.Contains(r, `"fetch":200`) || !strings.Contains(r, `"image":"loaded"`)) {
			t.Errorf("%s: the page's report: %s", brName, r)
		}
	}
}

type browserURL struct {
	br          browserRun
	scheme, url string
}

// browserURLs pairs every browser with every URL.
func browserURLs(brs []browserRun, urls []struct{ name, url string }) []browserURL {
	var out []browserURL
	for _, br := range brs {
		for _, u := range urls {
			out = append(out, browserURL{br: br, scheme: u.name, url: u.url})
		}
	}
	return out
}
