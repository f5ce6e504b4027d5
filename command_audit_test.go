package caddyrobots

// The tests of caddy robots audit run the command as Caddy registers it:
// the audit judges with the handler's options (command.go), and several
// tests compare it with a live handler, so they live in the root package.
// internal/cli tests what needs no handler.

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddyrobots/caddy-robots/agents/ja4"
	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
	"github.com/caddyrobots/caddy-robots/internal/cli"
	"github.com/caddyrobots/caddy-robots/internal/sites"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	accessLog           = "testdata/cli/access.log"
	nginxLog            = "testdata/cli/nginx-combined.log"
	apacheLog           = "testdata/cli/apache-common.log"
	multiHostLog        = "testdata/cli/multihost.log"
	auditPrefsRobots    = "testdata/cli/prefs.robots.txt"
	auditPrefsRobotsNew = "testdata/cli/prefs.new.robots.txt"
)

func TestAuditGolden(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"audit-table", []string{"--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt", accessLog}},
		{"audit-json", []string{"--robots", siteRobots, "--format", "json", accessLog}},
		{"audit-html", []string{"--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt", "--format", "html", accessLog}},
		// AI usage preferences: GPTBot and Googlebot fetch paths whose
		// preferences refuse their purposes (ai-training, search).
		{"audit-prefs-table", []string{"--robots", auditPrefsRobots, "--robots-new", auditPrefsRobotsNew, accessLog}},
		{"audit-prefs-json", []string{"--robots", auditPrefsRobots, "--robots-new", auditPrefsRobotsNew, "--format", "json", accessLog}},
		{"audit-prefs-html", []string{"--robots", auditPrefsRobots, "--robots-new", auditPrefsRobotsNew, "--format", "html", accessLog}},
		// One JSON line per request, in the admin check's vocabulary.
		{"audit-decisions", []string{"--robots", siteRobots, "--format", "decisions", accessLog}},
		// nginx's combined format: Googlebot verified from its list, the
		// GPTBot claim from 198.51.100.7 spoofed, ExampleCrawler's 5th
		// request in a second throttled and "//private/x" refused as
		// /private/x, "-" judged as no User-Agent, a TLS handshake not a
		// request, this plugin's CLI counted apart.
		{"audit-nginx-table", []string{"--robots", siteRobots, nginxLog}},
		{"audit-nginx-decisions", []string{"--robots", siteRobots, "--format", "decisions", nginxLog}},
		// Apache's common format: no User-Agent, nothing judged.
		{"audit-common-table", []string{"--robots", siteRobots, apacheLog}},
		// Two sites: state kept and reported per site; the loader apart.
		// The log's two Chrome 131 lines over TLS carry no Fetch Metadata:
		// the handler judges them as undeclared crawlers (see
		// TestAuditUndeclaredMultiHost); here the signals are off, the
		// subject is the per-site state.
		{"audit-multihost-table", []string{"--robots", siteRobots, "--strikes", "2 10m 1h", "--undeclared", "off", multiHostLog}},
		{"audit-multihost-json", []string{"--robots", siteRobots, "--strikes", "2 10m 1h", "--undeclared", "off", "--format", "json", multiHostLog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _, err := runCLI(t, append([]string{"audit"}, tc.args...)...)
			if code != cli.ExitOK || err != nil {
				t.Fatalf("code %d err %v", code, err)
			}
			golden(t, tc.name, out)

			// The same log gzip-compressed (and named without .gz: the
			// magic bytes decide) gives the same report.
			args := append([]string{"audit"}, tc.args...)
			log := args[len(args)-1]
			gz := filepath.Join(dir, tc.name+".log.1")
			gzipFile(t, log, gz)
			args[len(args)-1] = gz
			_, outGz, _, err := runCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.ReplaceAll(outGz, gz, log) != out {
				t.Errorf("gzip log gives another report:\n%s", outGz)
			}
		})
	}
}

func TestAuditUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"audit", accessLog},
		{"audit", "--robots", siteRobots, "--format", "xml", accessLog},
		{"audit", "--robots", siteRobots, "testdata/cli/no-such.log"},
		{"audit", "--robots", siteRobots, "--robots-new", "testdata/cli/no-such.txt", accessLog},
	} {
		if code, _, _, err := runCLI(t, args...); code != cli.ExitFailure || err == nil {
			t.Errorf("%v: code %d err %v, want 1", args, code, err)
		}
	}
}

func TestAuditOutFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr, err := runCLI(t, "audit", "--robots", siteRobots, "--format", "json", "--out", out, accessLog)
	if code != cli.ExitOK || err != nil || stdout != "" || !strings.Contains(stderr, "report written to") {
		t.Fatalf("code %d err %v stdout %q stderr %q", code, err, stdout, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Contains(b, []byte(`"name": "GPTBot"`)) {
		t.Errorf("report file: %v\n%s", err, b)
	}
}

// TestAuditHTMLInChromium renders the HTML report in a real headless
// Chromium at a phone's size and checks the screenshot is not blank.
// Without chromium it skips, except under CI=true, where it fails
// (scripts/need-chromium.sh installs it).
func TestAuditHTMLInChromium(t *testing.T) {
	chromium := chromiumtest.Find(t)
	dir := t.TempDir()
	for i, args := range [][]string{
		{"--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt", accessLog},
		// Undeclared crawlers, in tables of their own.
		{"--config", undeclaredCaddyfile, "--site", "example.com", undeclaredLog},
		// The tls signal, with its table by handshake.
		{"--config", undeclaredCaddyfile, "--site", "example.com", tlsLog},
	} {
		report := filepath.Join(dir, fmt.Sprintf("report%d.html", i))
		code, _, _, err := runCLI(t, append([]string{"audit", "--format", "html", "--out", report}, args...)...)
		if code != cli.ExitOK || err != nil {
			t.Fatalf("%v: code %d err %v", args, code, err)
		}
		keep := os.Getenv("ROBOTS_SCREENSHOT")
		if keep != "" && i > 0 {
			keep = strings.TrimSuffix(keep, ".png") + fmt.Sprintf("-%d.png", i)
		}
		img := chromiumtest.Screenshot(t, chromium, "file://"+report, 412, 915, keep)
		colours, red := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r > 180 && g < 90 && b < 90 })
		if colours < 8 {
			t.Errorf("%v: screenshot looks blank: %d distinct colours", args, colours)
		}
		if red == 0 {
			t.Errorf("%v: no red pixels: the violation figures and bars should show", args)
		}
		// On a laptop's screen nothing is cut off: the page does not
		// scroll sideways, nor does any table inside its box.
		for _, w := range []int{1280, 1366} {
			if over := overflowAt(t, chromium, report, w, 768); over != "" {
				t.Errorf("%v at %d px: %s", args, w, over)
			}
		}
		if keep := os.Getenv("ROBOTS_SCREENSHOT"); keep != "" {
			chromiumtest.Screenshot(t, chromium, "file://"+report, 1280, 768, strings.TrimSuffix(keep, ".png")+fmt.Sprintf("-1280-%d.png", i))
		}
	}
}

// overflowAt loads the HTML report at path in chromium with a window of
// width × height and returns what overflows sideways ("" for nothing): the
// page wider than the window, or an element (a table in its scrolling box)
// wider than its box. A script appended to a copy of the report measures
// the laid-out page and writes the answer into the DOM that chromium
// dumps.
func overflowAt(t *testing.T, chromium, path string, width, height int) string {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const probe = `<script>
window.addEventListener("load", () => {
  const out = [];
  const de = document.documentElement;
  if (de.scrollWidth > window.innerWidth) out.push("page " + de.scrollWidth + " px wide in a " + window.innerWidth + " px window");
  document.querySelectorAll("main *").forEach(el => {
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible") {
      out.push((el.firstElementChild ? el.firstElementChild.tagName + " in " : "") + el.tagName + "." + el.className + " " + el.scrollWidth + " px in " + el.clientWidth);
    }
  });
  const p = document.createElement("pre");
  p.id = "overflow";
  p.textContent = "OVERFLOW[" + out.join("; ") + "]";
  document.body.appendChild(p);
});
</script>`
	probed := filepath.Join(t.TempDir(), "probe.html")
	writeFile(t, probed, strings.Replace(string(page), "</body>", probe+"</body>", 1))
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), fmt.Sprintf("--window-size=%d,%d", width, height),
		"--virtual-time-budget=2000", "--dump-dom", "file://"+probed)
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	_, rest, ok := strings.Cut(string(dom), `<pre id="overflow">OVERFLOW[`)
	if !ok {
		t.Fatalf("the probe did not run:\n%.500s", dom)
	}
	got, _, _ := strings.Cut(rest, "]")
	return got
}

// TestAuditNothingReadable: a log with no request in a format the audit
// reads is an error (exit 1) that names the formats expected and shows the
// first unreadable line, truncated.
func TestAuditNothingReadable(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.log")
	writeFile(t, empty, "")
	for _, tc := range []struct {
		log  string
		want []string
	}{
		{"testdata/cli/nginx-error.log", []string{
			"nothing readable in testdata/cli/nginx-error.log: 4 lines, none a request in the formats expected: Caddy's JSON access log",
			"Combined or Common Log Format of nginx and Apache",
			`the first unreadable line, testdata/cli/nginx-error.log:1: "2026/05/11 13:46:40 [error] 1234#1234: *1 open() \"/srv/www/favicon.ico\" failed (2: No such file or directory), client: 2"…`,
		}},
		{"testdata/cli/caddy-runtime.log", []string{
			"3 are JSON lines without request.uri: Caddy's runtime log, not an access log",
			`the first line, testdata/cli/caddy-runtime.log:1: "{\"level\":\"info\"`,
		}},
		{empty, []string{"empty.log: no lines to read"}},
	} {
		for _, format := range []string{"table", "decisions"} {
			code, out, _, err := runCLI(t, "audit", "--robots", siteRobots, "--format", format, tc.log)
			if code != cli.ExitFailure || err == nil || out != "" {
				t.Errorf("%s (%s): code %d, err %v, output %q; want 1, an error, no output", tc.log, format, code, err, out)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error lacks %q:\n%v", tc.log, w, err)
				}
			}
		}
	}
	// A readable log next to an unreadable one: the report, with the
	// first unreadable line as a note.
	code, out, _, err := runCLI(t, "audit", "--robots", siteRobots, "testdata/cli/nginx-error.log", nginxLog)
	if code != cli.ExitOK || err != nil || !strings.Contains(out, `note: the first unreadable line, testdata/cli/nginx-error.log:1: "2026/05/11`) {
		t.Errorf("code %d err %v:\n%s", code, err, out)
	}
}

// TestAuditHost: --host keeps the requests of the sites named; a host that
// matches nothing, and --host on a log that records no Host, are errors.
func TestAuditHost(t *testing.T) {
	code, out, _, err := runCLI(t, "audit", "--robots", siteRobots, "--host", "SHOP.example.com", "--format", "json", multiHostLog)
	if code != cli.ExitOK || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Lines != 5 || r.OtherHosts != 5 || len(r.Hosts) != 1 || r.Hosts[0].Host != "shop.example.com" || r.Own != 1 {
		t.Errorf("lines %d, other hosts %d, own %d, hosts %+v", r.Lines, r.OtherHosts, r.Own, r.Hosts)
	}
	for _, c := range r.Crawler {
		if c.Host != "shop.example.com" {
			t.Errorf("crawler of %s reported", c.Host)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--host", "nope.example", multiHostLog}, "no request in testdata/cli/multihost.log is for the hosts asked for (10 lines are for other hosts, such as example.com, shop.example.com)"},
		{[]string{"--host", "example.com", nginxLog}, "testdata/cli/nginx-combined.log:1: the Combined Log Format records no Host, so --host cannot select its lines"},
		{[]string{"--host", "example.com", apacheLog}, "testdata/cli/apache-common.log:1: the Common Log Format records no Host"},
	} {
		code, _, _, err := runCLI(t, append([]string{"audit", "--robots", siteRobots}, tc.args...)...)
		if code != cli.ExitFailure || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d, err %v; want 1 and %q", tc.args, code, err, tc.want)
		}
	}
}

// decisionsOf runs the audit with --format decisions and decodes its lines.
func decisionsOf(t *testing.T, args ...string) []audit.Decision {
	t.Helper()
	code, out, _, err := runCLI(t, append([]string{"audit", "--format", "decisions"}, args...)...)
	if code != cli.ExitOK || err != nil {
		t.Fatalf("%v: code %d err %v", args, code, err)
	}
	var ds []audit.Decision
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var d audit.Decision
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

// TestAuditOptions: the audit judges with the handler's options, from the
// flags caddy robots check takes or from the config's handler.
func TestAuditOptions(t *testing.T) {
	count := func(ds []audit.Decision, decision, reason string) int {
		n := 0
		for _, d := range ds {
			if d.Decision == decision && d.Reason == reason {
				n++
			}
		}
		return n
	}
	// The defaults: spoofed block, preferences not enforced, crawl_burst 4.
	ds := decisionsOf(t, "--robots", auditPrefsRobots, nginxLog)
	if count(ds, "block", "spoofed") != 1 || count(ds, "block", "preference") != 0 || count(ds, "throttle", "rate") != 1 {
		t.Errorf("defaults: %d spoofed, %d by preference, %d throttled", count(ds, "block", "spoofed"), count(ds, "block", "preference"), count(ds, "throttle", "rate"))
	}
	// The flags.
	ds = decisionsOf(t, "--robots", auditPrefsRobots, "--spoofed", "wildcard", "--preferences", "enforce", "--crawl-delay", "off", nginxLog)
	if count(ds, "block", "spoofed") != 0 || count(ds, "block", "preference") == 0 || count(ds, "throttle", "rate") != 0 {
		t.Errorf("flags: %d spoofed, %d by preference, %d throttled", count(ds, "block", "spoofed"), count(ds, "block", "preference"), count(ds, "throttle", "rate"))
	}
	ds = decisionsOf(t, "--robots", siteRobots, "--crawl-burst", "1", nginxLog)
	if n := count(ds, "throttle", "rate"); n != 4 {
		t.Errorf("--crawl-burst 1: %d throttled, want 4 (every request but the first in that second)", n)
	}
	// The config: preferences enforce, crawl_burst 2, strikes 2 10m 1h,
	// the CLI's address exempt; its source file judges.
	ds = decisionsOf(t, "--config", "testdata/cli/audit.Caddyfile", "--site", "example.com", nginxLog)
	if count(ds, "block", "preference") == 0 || count(ds, "throttle", "rate") != 3 {
		t.Errorf("config: %d by preference, %d throttled (want 3 with crawl_burst 2)", count(ds, "block", "preference"), count(ds, "throttle", "rate"))
	}
	ds = decisionsOf(t, "--config", "testdata/cli/audit.Caddyfile", "--site", "example.com", multiHostLog)
	if got := count(ds, "ban", "ban"); got != 1 {
		t.Errorf("config strikes 2: %d banned, want 1 (example.com's third request)", got)
	}
	code, _, _, err := runCLI(t, "audit", "--config", "testdata/cli/audit.Caddyfile", "--site", "example.com", "--preferences", "expose", nginxLog)
	if code != cli.ExitFailure || err == nil || !strings.Contains(err.Error(), "--preferences: with --config the options are those of the site's robots handler") {
		t.Errorf("an option flag with --config: code %d err %v", code, err)
	}
	code, _, _, err = runCLI(t, "audit", "--robots", siteRobots, "--crawl-burst", "1000", nginxLog)
	if code != cli.ExitFailure || err == nil || !strings.Contains(err.Error(), "crawl_burst") {
		t.Errorf("--crawl-burst 1000: code %d err %v", code, err)
	}
}

// TestAuditAgreesWithTheHandler pins the audit's copies of the handler's
// readings: the default options and this plugin's own User-Agents (the
// site's host is policy.HostOf, shared).
func TestAuditAgreesWithTheHandler(t *testing.T) {
	h := &Handler{}
	h.applyDefaults()
	if got, want := audit.DefaultOptions(), h.decisionOptions(); got != want {
		t.Errorf("audit.DefaultOptions() = %+v, the handler's defaults %+v", got, want)
	}
	// The loader and the CLI send these User-Agents (loader.go,
	// internal/cli); the audit must know them.
	if sites.LoaderUserAgent != audit.OwnLoaderUserAgent || !audit.IsOwn(cli.UserAgent) {
		t.Errorf("the loader's User-Agent %q or the CLI's %q is not the audit's own: update audit.IsOwn", sites.LoaderUserAgent, cli.UserAgent)
	}
	if !audit.IsOwn(audit.OwnLoaderUserAgent) || !audit.IsOwn("caddy-robots-cli (+https://github.com/caddyrobots/caddy-robots)") || audit.IsOwn("caddy-robots-clifake/1") {
		t.Error("audit.IsOwn")
	}
}

// TestAuditReplaysTheServersDecisions sends requests through a live
// handler (a fake clock), writes the access log Caddy would write for
// them, and replays it with caddy robots audit and the same options: the
// audit reaches the handler's decision, reason and rule on every request,
// throttles, strikes and bans included, in both modes.
func TestAuditReplaysTheServersDecisions(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nUser-agent: GPTBot\nDisallow: /\n"
	robotsFile := filepath.Join(t.TempDir(), "robots.txt")
	writeFile(t, robotsFile, robots)
	reqs := serversDecisionsRequests()
	for _, mode := range []string{"enforce", "log"} {
		t.Run(mode, func(t *testing.T) {
			// A store of its own (its key includes max_entries): no other
			// test's state.
			h, done := newTestHandler(t, &Handler{Source: "inline", Inline: robots, Mode: mode,
				Strikes: &StrikesConfig{Count: 3, Window: caddy.Duration(10 * time.Minute), Ban: caddy.Duration(time.Hour)},
				Store:   &StoreConfig{MaxEntries: 4242 + len(mode)}})
			defer done()
			start := time.Now().Truncate(time.Second)
			var now time.Time
			h.now = func() time.Time { return now }
			var log bytes.Buffer
			var server []serverOutcome
			for _, rq := range reqs {
				now = start.Add(time.Duration(rq.at * float64(time.Second)))
				o, line := serveServerRequest(t, h, rq, now)
				server = append(server, o)
				log.Write(append(line, '\n'))
			}
			logFile := filepath.Join(t.TempDir(), "access.log")
			writeFile(t, logFile, log.String())

			ds := decisionsOf(t, "--robots", robotsFile, "--mode", mode, "--strikes", "3 10m 1h", logFile)
			checkServersDecisions(t, mode, reqs, server, ds)
		})
	}
}

// serverRequest is one request TestAuditReplaysTheServersDecisions sends.
type serverRequest struct {
	at      float64 // seconds after the start
	ua, ip  string
	target  string
	headers map[string]string
}

// serverOutcome is what the handler published for a serverRequest.
type serverOutcome struct{ decision, reason, rule string }

// serversDecisionsRequests are the requests of
// TestAuditReplaysTheServersDecisions, in the order they are sent.
func serversDecisionsRequests() []serverRequest {
	const (
		gptbot  = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot"
		other   = "OtherBot/2.0 (+https://other.example/bot)"
		browser = benchBrowserUA
		bot     = benchBotUA
	)
	return []serverRequest{
		{0, browser, "203.0.113.9", "/private/", nil},
		{1, bot, "192.0.2.1", "/robots.txt", nil},
		{2, bot, "192.0.2.1", "/a", nil},
		{2.1, bot, "192.0.2.1", "/b", nil},
		{2.2, bot, "192.0.2.1", "/c", nil},
		{2.3, bot, "192.0.2.1", "/d", nil},
		{2.4, bot, "192.0.2.1", "/e", nil}, // the 5th back to back: throttled
		{30, bot, "192.0.2.1", "//private/x", nil},
		{31, bot, "192.0.2.1", "/public/..%2fprivate/y", nil},
		{32, bot, "192.0.2.4", "/public/", map[string]string{"X-Original-Url": "/private/q"}},
		{33, bot, "192.0.2.1", "/private/z", nil}, // the third strike from .1: banned
		{40, bot, "192.0.2.1", "/", nil},
		{41, other, "192.0.2.1", "/", nil}, // another token, the same address
		{42, bot, "192.0.2.1", "/robots.txt", nil},
		{43, bot, "192.0.2.2", "/", nil},
		{44, gptbot, "4.227.36.5", "/x", nil},
		{45, gptbot, "198.51.100.7", "/x", nil},
		{46, "curl/8.5.0", "192.0.2.3", "/private/", nil},
		{47, "", "192.0.2.5", "/private/", nil},
		{48, bot, "192.0.2.6", "http://example.com/private/abs", nil},
		{33 + 3601, bot, "192.0.2.1", "/", nil}, // the ban is over
	}
}

// serveServerRequest sends rq through h at now and returns the decision
// the handler published and the line Caddy's access log writes for it.
func serveServerRequest(t *testing.T, h *Handler, rq serverRequest, now time.Time) (serverOutcome, []byte) {
	t.Helper()
	raw, clientIP := rawRequest("/", rq.ua, rq.ip+":40000")
	raw.RequestURI = rq.target
	if u, err := url.ParseRequestURI(rq.target); err == nil {
		raw.URL = u
	}
	if rq.ua == "" {
		raw.Header.Del("User-Agent")
	}
	for k, v := range rq.headers {
		raw.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r := prepare(raw, clientIP, w, &caddyhttp.Server{})
	if err := h.ServeHTTP(w, r, okNext); err != nil {
		t.Fatal(err)
	}
	repl := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	o := serverOutcome{repl.ReplaceAll("{http.robots.decision}", ""), repl.ReplaceAll("{http.robots.reason}", ""), repl.ReplaceAll("{http.robots.rule}", "")}
	if o.decision == "" {
		o.decision = "allow" // not judged
	}
	// The line Caddy's access log writes for it.
	hs := map[string][]string{}
	for k, v := range raw.Header {
		hs[k] = v
	}
	line, err := json.Marshal(map[string]any{
		"level": "info", "ts": float64(now.UnixNano()) / 1e9, "logger": "http.log.access.log0", "msg": "handled request",
		"request": map[string]any{"remote_ip": rq.ip, "remote_port": "40000", "client_ip": clientIP, "proto": "HTTP/1.1",
			"method": raw.Method, "host": raw.Host, "uri": rq.target, "headers": hs},
		"status": w.Code,
	})
	if err != nil {
		t.Fatal(err)
	}
	return o, line
}

// checkServersDecisions checks that the audit's decisions ds match the
// server's, request by request, and that they cover every kind.
func checkServersDecisions(t *testing.T, mode string, reqs []serverRequest, server []serverOutcome, ds []audit.Decision) {
	t.Helper()
	if len(ds) != len(reqs) {
		t.Fatalf("%d decisions for %d requests", len(ds), len(reqs))
	}
	kinds := map[string]bool{}
	for i, d := range ds {
		s := server[i]
		kinds[s.decision] = true
		reason := d.Reason
		if d.Decision == "allow" {
			reason = "" // the handler names no reason for an allowed request
		}
		if d.Decision != s.decision || reason != s.reason || d.Rule != s.rule || d.Mode != mode {
			t.Errorf("request %d (%s %s from %s): server %s/%s %q, audit %s/%s %q", i, reqs[i].ua, reqs[i].target, reqs[i].ip,
				s.decision, s.reason, s.rule, d.Decision, d.Reason, d.Rule)
		}
	}
	// The log covers every kind of decision.
	for _, k := range []string{"allow", "block", "throttle", "ban"} {
		if !kinds[k] {
			t.Errorf("no %s among the server's decisions", k)
		}
	}
}

// undeclaredLog and undeclaredCaddyfile are a site with a trap and
// client_hints enforced, and its access log: people in Chrome and Firefox
// with their headers, a script as Chrome 131 over TLS without them, a
// claim with Fetch Metadata but no Sec-CH-UA, a Chrome claim over plain
// HTTP, one that takes the trap, a person in Lynx who follows it once, a
// Safari claim without its headers, GPTBot and the loader.
const (
	undeclaredLog       = "internal/audit/testdata/undeclared.log"
	undeclaredCaddyfile = "internal/audit/testdata/undeclared.Caddyfile"
	// tlsLog carries the fields log_append adds for the tls signal.
	tlsLog = "internal/audit/testdata/tls.log"
)

// TestAuditUndeclared: with a config's handler, the audit judges the
// undeclared crawlers as the handler does, with its modes and its trap,
// by the rules it enforces (the trap's Disallow line added to the inline
// rules: the line numbers are the served file's).
func TestAuditUndeclared(t *testing.T) {
	ds := decisionsOf(t, "--config", undeclaredCaddyfile, "--site", "example.com", undeclaredLog)
	var got []string
	for _, d := range ds {
		s := d.Decision
		if d.Crawler != "" {
			s = d.Crawler + " " + s
		}
		if d.Undeclared != "" {
			s += " " + d.Undeclared + " " + d.Mode
		}
		if d.Trap != "" {
			s += " " + d.Trap
		}
		if d.Rule != "" {
			s += " (" + d.Rule + ")"
		}
		got = append(got, s)
	}
	want := []string{
		"caddy-robots allow",
		"allow", // Chrome with its headers
		"allow",
		"Chrome (undeclared) allow fetch_metadata enforce", // a script as Chrome over TLS
		"Chrome (undeclared) block fetch_metadata enforce (Disallow: /private/ (line 3))",
		"Chrome (undeclared) allow fetch_metadata enforce",
		"Chrome (undeclared) allow fetch_metadata enforce",
		"Chrome (undeclared) allow fetch_metadata enforce",
		"Chrome (undeclared) throttle fetch_metadata enforce", // its Crawl-delay, back to back
		"allow", // Firefox with its headers
		"allow", // Chrome's Fetch Metadata without Sec-CH-UA: a person may send that (client_hints never judges it)
		"GPTBot block (Disallow: / (line 9))",
		"allow", // a Chrome claim over plain HTTP: not judged by headers
		"Chrome (undeclared) block trap enforce marked (Disallow: /no-robots/ (line 2))",
		"Chrome (undeclared) block trap enforce (Disallow: /private/ (line 3))",
		"Chrome (undeclared) allow trap enforce",
		"Lynx (undeclared) block trap enforce probation (Disallow: /no-robots/ (line 2))",
		"allow", // the person in Lynx, at a person's pace
		"Safari (undeclared) block fetch_metadata_safari log (Disallow: /private/ (line 3))",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decisions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	code, out, _, err := runCLI(t, "audit", "--config", undeclaredCaddyfile, "--site", "example.com", "--format", "json", undeclaredLog)
	if code != cli.ExitOK || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	var r audit.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	u := r.UndeclaredSignals
	if r.Undeclared != 11 || r.Browsers != 6 || r.Crawlers != 1 || len(r.Crawler) != 1 || len(r.UndeclaredCrawlers) != 3 || u == nil || u.Trap != "/no-robots/" {
		t.Fatalf("undeclared %d, browsers %d, crawlers %d, declared %d, undeclared crawlers %d, section %+v",
			r.Undeclared, r.Browsers, r.Crawlers, len(r.Crawler), len(r.UndeclaredCrawlers), u)
	}
	if s := fmt.Sprint(u.Signals); s != "[{fetch_metadata enforce 6 2 0 0 0 0} {fetch_metadata_safari log 1 0 1 0 0 0} {client_hints enforce 0 0 0 0 0 0} {trap enforce 4 3 0 2 1 0}]" {
		t.Errorf("signals %s", s)
	}
	if !strings.Contains(r.Robots, "with Disallow: /no-robots/ in every group") {
		t.Errorf("robots %q", r.Robots)
	}
	// A robots.txt given with --robots is taken as served: it must
	// disallow the trap itself, and the report says when it does not.
	code, table, _, err := runCLI(t, "audit", "--robots", siteRobots, "--trap", "/no-robots/", undeclaredLog)
	if code != cli.ExitOK || err != nil || !strings.Contains(table, `does not disallow the trap /no-robots/ for "*"`) || strings.Contains(table, "Lynx (undeclared)") {
		t.Errorf("--robots without the trap's line: code %d err %v\n%s", code, err, table)
	}

	// The table shows them apart.
	_, table, _, _ = runCLI(t, "audit", "--config", undeclaredCaddyfile, "--site", "example.com", undeclaredLog)
	for _, s := range []string{"11 by undeclared crawlers", "UNDECLARED CRAWLER", "trap /no-robots/, hold 24h",
		"undeclared   fetch_metadata enforce: 6 requests, 2 refused;"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
}

// TestAuditUndeclaredFlags: without a config, --undeclared and --trap set
// the handler's options as the Caddyfile's undeclared and trap do; the trap
// applies to the Combined Log Format (its robots.txt must disallow it, as
// with source site), the header rule does not.
func TestAuditUndeclaredFlags(t *testing.T) {
	dir := t.TempDir()
	robots := filepath.Join(dir, "robots.txt")
	writeFile(t, robots, "User-agent: *\nDisallow: /private/\nDisallow: /no-robots/\n")
	log := filepath.Join(dir, "access.log")
	chrome := benchBrowserUA
	writeFile(t, log, strings.Join([]string{
		`192.0.2.60 - - [11/May/2026:11:46:40 +0000] "GET /private/a HTTP/1.1" 200 512 "-" "` + chrome + `"`,
		`192.0.2.60 - - [11/May/2026:11:46:41 +0000] "GET /no-robots/ HTTP/1.1" 403 512 "-" "` + chrome + `"`,
		`192.0.2.60 - - [11/May/2026:11:46:42 +0000] "GET /private/b HTTP/1.1" 403 512 "-" "` + chrome + `"`,
		`192.0.2.61 - - [11/May/2026:11:46:43 +0000] "GET /private/b HTTP/1.1" 200 512 "-" "` + chrome + `"`,
	}, "\n")+"\n")
	summary := func(ds []audit.Decision) string {
		var s []string
		for _, d := range ds {
			s = append(s, d.Decision+"/"+d.Undeclared+"/"+d.Mode)
		}
		return strings.Join(s, " ")
	}
	if got := summary(decisionsOf(t, "--robots", robots, log)); got != "allow//enforce allow//enforce allow//enforce allow//enforce" {
		t.Errorf("no trap: %s", got)
	}
	if got := summary(decisionsOf(t, "--robots", robots, "--trap", "/no-robots/", log)); got != "allow//enforce block/trap/enforce block/trap/enforce allow//enforce" {
		t.Errorf("--trap: %s", got)
	}
	if got := summary(decisionsOf(t, "--robots", robots, "--trap", "/no-robots/", "--undeclared", "log", log)); got != "allow//enforce block/trap/log block/trap/log allow//enforce" {
		t.Errorf("--trap --undeclared log: %s", got)
	}
	// The hold ends: 1m, and a request 2 minutes later.
	writeFile(t, log, strings.Join([]string{
		`192.0.2.60 - - [11/May/2026:11:46:41 +0000] "GET /no-robots/ HTTP/1.1" 403 512 "-" "` + chrome + `"`,
		`192.0.2.60 - - [11/May/2026:11:48:42 +0000] "GET /private/b HTTP/1.1" 200 512 "-" "` + chrome + `"`,
	}, "\n")+"\n")
	if got := summary(decisionsOf(t, "--robots", robots, "--trap", "/no-robots/", "--trap-hold", "1m", log)); got != "block/trap/enforce allow//enforce" {
		t.Errorf("--trap-hold 1m: %s", got)
	}
	// The multi-site fixture's two Chrome 131 lines over TLS carry no Fetch
	// Metadata: undeclared by default, people with --undeclared off.
	for _, c := range []struct {
		args       []string
		undeclared int64
	}{{nil, 2}, {[]string{"--undeclared", "off"}, 0}} {
		_, out, _, err := runCLI(t, append(append([]string{"audit", "--robots", siteRobots, "--format", "json"}, c.args...), multiHostLog)...)
		var r audit.Report
		if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Undeclared != c.undeclared || r.Browsers != 2-c.undeclared {
			t.Errorf("%v: err %v, undeclared %d, browsers %d", c.args, err, r.Undeclared, r.Browsers)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--robots", robots, "--undeclared", "maybe", log}, "undeclared: unknown value"},
		{[]string{"--robots", robots, "--trap", "no-slash", log}, "not a path"},
		{[]string{"--robots", robots, "--trap-hold", "1h", log}, "--trap-hold: give the trap with --trap"},
		{[]string{"--robots", robots, "--trap", "/t/", "--trap-hold", "10s", log}, "outside"},
		{[]string{"--config", undeclaredCaddyfile, "--site", "example.com", "--trap", "/t/", log}, "--trap: with --config the options are those of the site's robots handler"},
	} {
		code, _, _, err := runCLI(t, append([]string{"audit"}, c.args...)...)
		if code != cli.ExitFailure || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: code %d err %v, want %q", c.args, code, err, c.want)
		}
	}
}

// TestAuditReplaysUndeclared sends browsers, scripts that wear their
// User-Agents and clients that take the trap through a live handler (a
// fake clock), writes the access log Caddy would write for them (headers,
// and request.tls over TLS), and replays it with caddy robots audit and
// the same options: the audit reaches the handler's decision on every
// request, and names the undeclared crawlers as the handler does.
func TestAuditReplaysUndeclared(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n"
	robotsFile := filepath.Join(t.TempDir(), "robots.txt")
	writeFile(t, robotsFile, robots)
	reqs := undeclaredRequests()
	for _, mode := range []string{"enforce", "log"} {
		t.Run(mode, func(t *testing.T) {
			h, done := newTestHandler(t, &Handler{Source: "file", File: robotsFile, Mode: mode, Trap: "/trap/",
				Store: &StoreConfig{MaxEntries: 5151 + len(mode)}})
			defer done()
			h.logger = zap.NewNop()
			start := time.Now().Truncate(time.Second)
			var now time.Time
			h.now = func() time.Time { return now }
			var log bytes.Buffer
			var server []undeclaredOutcome
			for _, rq := range reqs {
				now = start.Add(time.Duration(rq.at * float64(time.Second)))
				o, line := serveUndeclaredRequest(t, h, rq, now)
				server = append(server, o)
				log.Write(append(line, '\n'))
			}
			logFile := filepath.Join(t.TempDir(), "access.log")
			writeFile(t, logFile, log.String())
			// The same handler in a Caddyfile: its file source gets the
			// trap's line, as the handler's does.
			cfgFile := filepath.Join(t.TempDir(), "Caddyfile")
			writeFile(t, cfgFile, "example.com {\n\trobots {\n\t\tsource file "+robotsFile+"\n\t\tmode "+mode+"\n\t\ttrap /trap/\n\t}\n}\n")
			ds := decisionsOf(t, "--config", cfgFile, "--site", "example.com", logFile)
			checkUndeclaredDecisions(t, mode, reqs, server, ds)
		})
	}
}

// undeclaredRequest is one request TestAuditReplaysUndeclared sends.
type undeclaredRequest struct {
	at      float64
	ua, ip  string
	target  string
	https   bool
	host    string
	headers []string
}

// undeclaredOutcome is what the handler published for an
// undeclaredRequest, and the status it answered.
type undeclaredOutcome struct {
	decision, agent string
	status          int
}

// undeclaredRequests are the requests of TestAuditReplaysUndeclared, in
// the order they are sent.
func undeclaredRequests() []undeclaredRequest {
	chrome, fetchOnly := benchBrowserUA, chromeHeaders[:3]
	return []undeclaredRequest{
		{0, chrome, "198.18.7.1", "/private/a", true, "", nil},                       // fetch_metadata: 403
		{1, chrome, "198.18.7.2", "/private/a", true, "", chromeHeaders},             // a person
		{2, chrome, "198.18.7.3", "/private/a", true, "", fetchOnly},                 // client_hints, log: 200
		{3, chrome, "198.18.7.4", "/private/a", false, "", nil},                      // plain HTTP: a person
		{4, chrome, "198.18.7.5", "/private/a", false, "localhost:8080", nil},        // loopback: 403
		{5, safariUA, "198.18.7.6", "/private/a", true, "", nil},                     // Safari, log
		{6, firefoxUA, "198.18.7.7", "/private/a", true, "", firefoxHeaders},         // a person
		{7, chrome, "198.18.7.8", "/trap/", false, "", chromeHeaders},                // the trap
		{8, chrome, "198.18.7.8", "/private/x", false, "", chromeHeaders},            // judged by "*"
		{9, chrome, "198.18.7.8", "/public", false, "", chromeHeaders},               // allowed
		{9.1, chrome, "198.18.7.8", "/a", false, "", chromeHeaders},                  // back to back
		{9.2, chrome, "198.18.7.8", "/b", false, "", chromeHeaders},                  //
		{9.3, chrome, "198.18.7.8", "/c", false, "", chromeHeaders},                  //
		{9.4, chrome, "198.18.7.8", "/d", false, "", chromeHeaders},                  // throttled
		{10, firefoxUA, "198.18.7.8", "/private/x", false, "", firefoxHeaders},       // another browser on the address
		{11, lynxUA, "198.18.7.9", "/trap/", false, "", nil},                         // probation
		{12.5, lynxUA, "198.18.7.9", "/private/p", false, "", nil},                   // a person's pace
		{12.8, lynxUA, "198.18.7.9", "/private/q", false, "", nil},                   // a crawler's
		{13, benchBotUA, "198.18.7.10", "/trap/", false, "", nil},                    // a declared crawler on the trap
		{24*3600 + 30, chrome, "198.18.7.8", "/private/y", false, "", chromeHeaders}, // the hold is over
	}
}

// serveUndeclaredRequest sends rq through h at now and returns what the
// handler published and answered, and the line Caddy's access log writes
// for it (with request.tls over TLS).
func serveUndeclaredRequest(t *testing.T, h *Handler, rq undeclaredRequest, now time.Time) (undeclaredOutcome, []byte) {
	t.Helper()
	raw, clientIP := rawRequest(rq.target, rq.ua, rq.ip+":40000")
	if rq.https {
		raw.TLS = &tls.ConnectionState{}
	}
	if rq.host != "" {
		raw.Host = rq.host
	}
	for _, hd := range rq.headers {
		k, v, _ := strings.Cut(hd, ":")
		raw.Header.Set(k, strings.TrimSpace(v))
	}
	w := httptest.NewRecorder()
	r := prepare(raw, clientIP, w, &caddyhttp.Server{})
	if err := h.ServeHTTP(w, r, okNext); err != nil {
		t.Fatal(err)
	}
	repl := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	o := undeclaredOutcome{repl.ReplaceAll("{http.robots.decision}", ""), repl.ReplaceAll("{http.robots.agent}", ""), w.Code}
	if o.decision == "" {
		// Not judged, or the trap request (no placeholders).
		o.decision = "allow"
		if w.Code == 403 {
			o.decision = "block"
		}
	}
	hs := map[string][]string{}
	for k, v := range raw.Header {
		hs[k] = v
	}
	request := map[string]any{"remote_ip": rq.ip, "remote_port": "40000", "client_ip": clientIP, "proto": "HTTP/1.1",
		"method": raw.Method, "host": raw.Host, "uri": rq.target, "headers": hs}
	if rq.https {
		request["proto"] = "HTTP/2.0"
		request["tls"] = map[string]any{"resumed": false, "version": 772, "cipher_suite": 4865, "proto": "h2", "server_name": "example.com", "ech": false}
	}
	line, err := json.Marshal(map[string]any{"level": "info", "ts": float64(now.UnixNano()) / 1e9, "logger": "http.log.access.log0",
		"msg": "handled request", "request": request, "status": w.Code})
	if err != nil {
		t.Fatal(err)
	}
	return o, line
}

// checkUndeclaredDecisions checks that the audit's decisions ds match
// the server's, request by request, and that the requests exercise the
// signals.
func checkUndeclaredDecisions(t *testing.T, mode string, reqs []undeclaredRequest, server []undeclaredOutcome, ds []audit.Decision) {
	t.Helper()
	if len(ds) != len(reqs) {
		t.Fatalf("%d decisions for %d requests", len(ds), len(reqs))
	}
	undeclared, refused := 0, 0
	for i, d := range ds {
		s := server[i]
		if d.Trap != "" {
			// The handler publishes no decision for the trap
			// request itself: its status says it.
			s.decision, s.agent = d.Decision, d.Crawler
		}
		// The handler refuses what it decides not to allow, unless
		// it (or the signal that caught the client) is in log mode.
		if d.Decision != s.decision || d.Crawler != s.agent || (s.status >= 400) != (d.Decision != "allow" && d.Mode == "enforce") {
			t.Errorf("request %d (%s %s from %s): server %s %q %d, audit %s %q mode %s undeclared %q", i, reqs[i].ua, reqs[i].target, reqs[i].ip,
				s.decision, s.agent, s.status, d.Decision, d.Crawler, d.Mode, d.Undeclared)
		}
		if d.Undeclared != "" {
			undeclared++
		}
		if s.status >= 400 {
			refused++
		}
	}
	if undeclared < 10 || mode == "enforce" && refused < 6 {
		t.Errorf("%d undeclared, %d refused: the requests do not exercise the signals", undeclared, refused)
	}
}

// TestAuditSiteBlockSharesStrikes: the handler keeps strikes and bans per
// site block, so with --config the audit counts a crawler's strikes on
// every host of the block together, as the server does; without a config
// each host is a block of its own.
func TestAuditSiteBlockSharesStrikes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(`a.example, b.example {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
		crawl_delay off
	}
	respond "ok"
}
c.example {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		strikes 2 10m 1h
		crawl_delay off
	}
	respond "ok"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	robots := filepath.Join(dir, "robots.txt")
	if err := os.WriteFile(robots, []byte("User-agent: *\nDisallow: /private/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	line := func(ts int, host, uri string) string {
		return fmt.Sprintf(`{"level":"info","ts":%d.5,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"192.0.2.7","remote_port":"41000","client_ip":"192.0.2.7","proto":"HTTP/1.1","method":"GET","host":%q,"uri":%q,"headers":{"User-Agent":["ExampleCrawler/1.0 (+https://example.com/bot)"]}},"status":200}`, ts, host, uri)
	}
	log := filepath.Join(dir, "access.log")
	lines := []string{
		line(1778500000, "a.example", "/private/1"), // strike 1
		line(1778500001, "b.example", "/private/2"), // strike 2, on the same site block: banned
		line(1778500002, "a.example", "/"),
		line(1778500003, "c.example", "/private/3"), // another site block: its first strike
		line(1778500004, "c.example", "/"),
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	decisions := func(ds []audit.Decision) string {
		var s []string
		for _, d := range ds {
			s = append(s, d.Decision)
		}
		return strings.Join(s, " ")
	}
	ds := decisionsOf(t, "--config", cfg, "--site", "a.example", log)
	if got, want := decisions(ds), "block block ban block allow"; got != want {
		t.Errorf("--config (a.example and b.example one block): %s, want %s", got, want)
	}
	ds = decisionsOf(t, "--robots", robots, "--strikes", "2 10m 1h", "--crawl-delay", "off", log)
	if got, want := decisions(ds), "block block allow block allow"; got != want {
		t.Errorf("--robots (each host its own block): %s, want %s", got, want)
	}
}

// TestAuditLogFormats: a vhost_combined log read as the default format is
// refused with the line, the field and the fix; with --log-format
// vhost_combined, or the nginx log_format string the server uses, the
// client is the address and the Host the line's.
func TestAuditLogFormats(t *testing.T) {
	const vhostLog, timedLog = "testdata/cli/apache-vhost.log", "testdata/cli/nginx-timed.log"
	code, out, _, err := runCLI(t, "audit", "--robots", siteRobots, vhostLog)
	if code != cli.ExitFailure || err == nil || out != "" {
		t.Fatalf("vhost_combined read as combined: code %d, err %v:\n%s", code, err, out)
	}
	for _, w := range []string{vhostLog + ":1:", `the first field is not the client's address: "example.com:443"`, "--log-format vhost_combined"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	const nginxFormat = `$time_iso8601 $host $remote_addr "$request" $status $body_bytes_sent $request_time "$http_user_agent"`
	for _, tc := range []struct {
		log    string
		format string
		hosts  []string
	}{
		{vhostLog, "vhost_combined", []string{"example.com", "shop.example.com"}},
		{timedLog, nginxFormat, []string{"example.com"}},
	} {
		code, out, _, err := runCLI(t, "audit", "--robots", siteRobots, "--log-format", tc.format, "--format", "json", tc.log)
		if code != cli.ExitOK || err != nil {
			t.Fatalf("%s: code %d err %v", tc.format, code, err)
		}
		var r audit.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		var hosts []string
		for _, h := range r.Hosts {
			hosts = append(hosts, h.Host)
		}
		if strings.Join(hosts, " ") != strings.Join(tc.hosts, " ") || r.Browsers != 1 || r.Unreadable != 0 {
			t.Errorf("%s: hosts %q, %d browser requests, %d unreadable", tc.format, hosts, r.Browsers, r.Unreadable)
		}
		for _, c := range r.Crawler {
			if c.Name == "ExampleCrawler" && (c.RefusedRule == 0 || c.Claims[0].RefusedBy[0].Addr != "192.0.2.10") {
				t.Errorf("%s: ExampleCrawler %+v", tc.format, c)
			}
		}
	}
	// The Host read from the line lets --host select.
	code, out, _, err = runCLI(t, "audit", "--robots", siteRobots, "--log-format", "vhost_combined", "--host", "shop.example.com", vhostLog)
	if code != cli.ExitOK || err != nil || !strings.Contains(out, "host         shop.example.com") || !strings.Contains(out, "vhost-combined 4") {
		t.Errorf("--host with vhost_combined: code %d err %v:\n%s", code, err, out)
	}
	if code, _, _, err := runCLI(t, "audit", "--robots", siteRobots, "--log-format", "apache", vhostLog); code != cli.ExitFailure || err == nil ||
		!strings.Contains(err.Error(), "vhost_combined") {
		t.Errorf("--log-format apache: code %d err %v", code, err)
	}
}

// TestTLSVersionsPlaceholder: {http.robots.tls_versions} is what the
// recorded hello offers in supported_versions, GREASE left out, in the
// order sent: what the tls signal reads of a handshake beside its engine,
// for caddy robots audit (Chromium GREASEs the list); a connection without
// a readable hello has an empty value (ReplaceKnown writes it "-").
func TestTLSVersionsPlaceholder(t *testing.T) {
	for name, want := range map[string]string{"chromium-headed": "0304,0303", "curl": "0304,0303,0302,0301", "go-nethttp": "0304,0303", "": "-"} {
		r, _, _ := fingerprintedRequest(t, name, benchBrowserUA)
		offerTLSFingerprint(r)
		if got := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer).ReplaceKnown("{http.robots.tls_versions}", "-"); got != want {
			t.Errorf("%q: {http.robots.tls_versions} %q, want %q", name, got, want)
		}
	}
	for _, tc := range []struct {
		versions []uint16
		want     string
	}{
		{[]uint16{0x1a1a, 0x0304, 0x7f1c, 0x0303}, "0304,7f1c,0303"},
		{nil, ""},
	} {
		if got := offeredVersions(&ja4.Hello{SupportedVersions: tc.versions}); got != tc.want {
			t.Errorf("%04x: %q, want %q", tc.versions, got, tc.want)
		}
	}
}
