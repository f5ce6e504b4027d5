package caddyrobots

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/audit"
	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
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
		{"audit-multihost-table", []string{"--robots", siteRobots, "--strikes", "2 10m 1h", multiHostLog}},
		{"audit-multihost-json", []string{"--robots", siteRobots, "--strikes", "2 10m 1h", "--format", "json", multiHostLog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _, err := runCLI(t, append([]string{"audit"}, tc.args...)...)
			if code != exitOK || err != nil {
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
		if code, _, _, err := runCLI(t, args...); code != exitFailure || err == nil {
			t.Errorf("%v: code %d err %v, want 1", args, code, err)
		}
	}
}

func TestAuditOutFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr, err := runCLI(t, "audit", "--robots", siteRobots, "--format", "json", "--out", out, accessLog)
	if code != exitOK || err != nil || stdout != "" || !strings.Contains(stderr, "report written to") {
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
	report := filepath.Join(dir, "report.html")
	code, _, _, err := runCLI(t, "audit", "--robots", siteRobots, "--robots-new", "testdata/cli/new.robots.txt",
		"--format", "html", "--out", report, accessLog)
	if code != exitOK || err != nil {
		t.Fatalf("code %d err %v", code, err)
	}
	img := chromiumtest.Screenshot(t, chromium, "file://"+report, 412, 915, os.Getenv("ROBOTS_SCREENSHOT"))
	colours, red := chromiumtest.Colours(img, func(r, g, b uint32) bool { return r > 180 && g < 90 && b < 90 })
	if colours < 8 {
		t.Errorf("screenshot looks blank: %d distinct colours", colours)
	}
	if red == 0 {
		t.Errorf("no red pixels: the violation figures and bars should show")
	}
}

func TestAuditProgressBar(t *testing.T) {
	lf, err := audit.Open(accessLog)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	a, err := audit.New(audit.Config{Robots: enforce.Parse(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Feed(accessLog, lf, nil); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	bar := &progressBar{w: &b, start: time.Now().Add(-time.Second)}
	bar.finish(lf, a)
	if got := b.String(); !strings.HasPrefix(got, "\rtestdata/cli/access.log [") || !strings.Contains(got, "100% 17 lines") {
		t.Errorf("progress line %q", got)
	}
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
			if code != exitFailure || err == nil || out != "" {
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
	if code != exitOK || err != nil || !strings.Contains(out, `note: the first unreadable line, testdata/cli/nginx-error.log:1: "2026/05/11`) {
		t.Errorf("code %d err %v:\n%s", code, err, out)
	}
}

// TestAuditHost: --host keeps the requests of the sites named; a host that
// matches nothing, and --host on a log that records no Host, are errors.
func TestAuditHost(t *testing.T) {
	code, out, _, err := runCLI(t, "audit", "--robots", siteRobots, "--host", "SHOP.example.com", "--format", "json", multiHostLog)
	if code != exitOK || err != nil {
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
		if code != exitFailure || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: code %d, err %v; want 1 and %q", tc.args, code, err, tc.want)
		}
	}
}

// decisionsOf runs the audit with --format decisions and decodes its lines.
func decisionsOf(t *testing.T, args ...string) []audit.Decision {
	t.Helper()
	code, out, _, err := runCLI(t, append([]string{"audit", "--format", "decisions"}, args...)...)
	if code != exitOK || err != nil {
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
	if code != exitFailure || err == nil || !strings.Contains(err.Error(), "--preferences: with --config the options are those of the site's robots handler") {
		t.Errorf("an option flag with --config: code %d err %v", code, err)
	}
	code, _, _, err = runCLI(t, "audit", "--robots", siteRobots, "--crawl-burst", "1000", nginxLog)
	if code != exitFailure || err == nil || !strings.Contains(err.Error(), "crawl_burst") {
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
	// command.go); the audit must know them.
	if sites.LoaderUserAgent != audit.OwnLoaderUserAgent || !audit.IsOwn(cliUserAgent) {
		t.Errorf("the loader's User-Agent %q or the CLI's %q is not the audit's own: update audit.IsOwn", sites.LoaderUserAgent, cliUserAgent)
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
	const (
		gptbot  = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot"
		other   = "OtherBot/2.0 (+https://other.example/bot)"
		browser = benchBrowserUA
		bot     = benchBotUA
	)
	type request struct {
		at      float64 // seconds after the start
		ua, ip  string
		target  string
		headers map[string]string
	}
	reqs := []request{
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
			type outcome struct{ decision, reason, rule string }
			var server []outcome
			for _, rq := range reqs {
				now = start.Add(time.Duration(rq.at * float64(time.Second)))
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
				o := outcome{repl.ReplaceAll("{http.robots.decision}", ""), repl.ReplaceAll("{http.robots.reason}", ""), repl.ReplaceAll("{http.robots.rule}", "")}
				if o.decision == "" {
					o.decision = "allow" // not judged
				}
				server = append(server, o)
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
				log.Write(append(line, '\n'))
			}
			logFile := filepath.Join(t.TempDir(), "access.log")
			writeFile(t, logFile, log.String())

			ds := decisionsOf(t, "--robots", robotsFile, "--mode", mode, "--strikes", "3 10m 1h", logFile)
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
		})
	}
}
