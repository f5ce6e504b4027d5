package integration

// The tls signal, two ways: HTTP libraries that claim a browser (with every
// browser header forged) and a real browser go through a real Caddy over
// HTTPS with robots_fingerprint, which writes its JSON access log with the
// documented log_append lines; `caddy robots audit` replays that log with
// the site's Caddyfile and must reach the server's decision on every
// request, the tls signal's included, in enforce and in log.

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/chromiumtest"
)

// auditTLSStep is a request of TestAuditTLSAgreesWithTheServer: who sends
// it, and what the server and the audit must make of it.
type auditTLSStep struct {
	client   string // go, curl
	ua       string
	headers  [][2]string
	path     string // a query naming the step is added
	signal   string // the signal the audit must name, "" for none
	decision string // the server's decision in enforce ("": not asserted, only compared)
}

// auditTLSSteps are the scripts' requests, in order: Go's handshake claims
// Chrome, Firefox and a bare Mozilla/5.0 from one address, so its strikes
// follow the handshake whatever User-Agent it sends (strikes 3: banned at
// the third refusal); curl claims Chrome; a crawler that names itself is
// judged by its own name.
func auditTLSSteps() []auditTLSStep {
	firefoxHeaders := [][2]string{{"Sec-Fetch-Site", "none"}, {"Sec-Fetch-Mode", "navigate"}, {"Sec-Fetch-Dest", "document"}, {"Sec-Fetch-User", "?1"}}
	const bare = "Mozilla/5.0 (Windows NT 10.0; Win64; x64)"
	return []auditTLSStep{
		{"go", chromeUA, forgedBrowserHeaders, "/private/a", "tls", "block"},
		{"go", chromeUA, forgedBrowserHeaders, "/public", "tls", "allow"},
		{"curl", chromeUA, forgedBrowserHeaders, "/private/b", "tls", "block"},
		{"curl", chromeUA, forgedBrowserHeaders, "/public", "tls", "allow"},
		{"go", firefoxUA, firefoxHeaders, "/private/c", "tls", "block"},
		{"go", bare, forgedBrowserHeaders[1:], "/private/d", "tls", "block"},
		{"go", chromeUA, forgedBrowserHeaders, "/public", "tls", "ban"},
		{"go", "ExampleCrawler/1.0 (+https://example.com/bot)", nil, "/private/e", "", "block"},
		{"curl", "", nil, "/private/f", "", "block"},
	}
}

// auditTLSConfig serves https://localhost:httpsPort with robots_fingerprint
// and the log_append lines the audit reads; signals is the undeclared_signals
// block ("" for the defaults, tls in log).
func auditTLSConfig(ca testCA, logFile, signals string) string {
	robots := "\trobots {\n\t\tsource inline \"User-agent: *\\nDisallow: /private/\\n\"\n\t\tcrawl_delay off\n\t\tstrikes 3 10m 1h\n"
	if signals != "" {
		robots += "\t\tundeclared {\n\t\t\t" + signals + "\n\t\t}\n"
	}
	robots += "\t}\n"
	return fingerprintedSite(ca, fmt.Sprintf("https://localhost:%d", httpsPort), logFile, robots)
}

// fingerprintedSite is a Caddyfile (fingerprintGlobals) with one site block
// at addrs over TLS with ca's certificate. It logs its requests as JSON to
// logFile with the log_append fields of the handshake that the audit
// reads, names each decision and crawler in the X-Robots-Decision and
// X-Robots-Agent response headers, and answers "ok"; robots is its robots
// block.
func fingerprintedSite(ca testCA, addrs, logFile, robots string) string {
	return fingerprintGlobals() + fmt.Sprintf(`%s {
	tls %s %s
	log {
		output file %s
		format json
	}
	log_append tls_fingerprint {http.robots.tls_fingerprint}
	log_append tls_engine {http.robots.tls_engine}
	log_append tls_versions {http.robots.tls_versions}
	header >X-Robots-Decision {http.robots.decision}
	header >X-Robots-Agent {http.robots.agent}
%s	respond "ok"
}
`, addrs, ca.certFile, ca.keyFile, logFile, robots)
}

// auditTLSDecision is what the comparison reads of a line of the audit's
// --format decisions.
type auditTLSDecision struct {
	URI            string `json:"uri"`
	UserAgent      string `json:"user_agent"`
	Crawler        string `json:"crawler"`
	Decision       string `json:"decision"`
	Reason         string `json:"reason"`
	Mode           string `json:"mode"`
	Undeclared     string `json:"undeclared"`
	Why            string `json:"why"`
	TLSFingerprint string `json:"tls_fingerprint"`
	TLSEngine      string `json:"tls_engine"`
}

// TestAuditTLSAgreesWithTheServer: through a real Caddy over HTTPS with
// robots_fingerprint, Go's net/http and curl claim Chrome, Firefox and a
// bare Mozilla/5.0 with forged browser headers, a crawler names itself,
// and headless Chromium (claiming Chrome, as Chrome) reads a disallowed
// page. `caddy robots audit --config` on the access log, with the
// documented log_append lines, agrees with the server on every request
// (decision, signal, mode, crawler), with `undeclared { tls enforce }` and
// with the default (tls in log, where the JSON report lists each library's
// handshake as what enforce would refuse, and never Chromium's).
func TestAuditTLSAgreesWithTheServer(t *testing.T) {
	ca := newTestCA(t, "localhost", "127.0.0.1")
	bin := caddyBinary(t)
	chromium := chromiumtest.Find(t)
	curl := need(t, "curl")
	total, disagree := 0, 0
	for _, mode := range []string{"enforce", "log"} {
		dir := t.TempDir()
		logFile := filepath.Join(dir, "access.log")
		signals := ""
		if mode == "enforce" {
			signals = "tls enforce"
		}
		caddyfile := auditTLSConfig(ca, logFile, signals)
		cfgPath := loadSaved(t, dir, caddyfile)
		steps := auditTLSSteps()
		server := make([]serverSeen, len(steps))
		base := "https://" + hostPort("localhost", httpsPort)
		for i, s := range steps {
			url := fmt.Sprintf("%s%s?step=%d", base, s.path, i)
			if s.client == "curl" {
				server[i] = curlSeen(t, curl, ca, url, s.ua, s.headers)
			} else {
				server[i] = goSeen(t, ca, url, s.ua, s.headers)
			}
		}
		browserURL := base + "/private/page?browser"
		out, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors",
			"--user-agent="+chromeUA, "--user-data-dir="+filepath.Join(dir, "chromium"), "--dump-dom", browserURL).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok") {
			t.Fatalf("Chromium on a disallowed page: %v\n%s", err, out)
		}

		var audit []auditTLSDecision
		eventually(t, 10*time.Second, "the access log to hold every request", func() bool {
			audit = runJSONLines[auditTLSDecision](t, bin, nil, "robots", "audit", "--config", cfgPath, "--site", hostPort("localhost", httpsPort), "--format", "decisions", logFile)
			return len(audit) > len(steps)
		})
		total += len(audit)
		disagree += compareTLSAudit(t, mode, steps, server, audit)
		if mode == "log" {
			checkWouldRefuse(t, bin, cfgPath, logFile, audit)
		}
	}
	t.Logf("[report] audit of the tls signal: %d requests over HTTPS through a real Caddy (Go net/http, curl, headless Chromium), tls in enforce and in log, replayed from its JSON access log with log_append; %d disagreements", total, disagree)
}

// compareTLSAudit checks the server's decisions against the steps'
// expectations and the audit's against the server's, request by request;
// the browser's requests must be a person's for both. It returns the
// number of requests on which the audit and the server disagree.
func compareTLSAudit(t *testing.T, mode string, steps []auditTLSStep, server []serverSeen, audit []auditTLSDecision) int {
	t.Helper()
	seen, disagree := 0, 0
	for _, a := range audit {
		_, q, _ := strings.Cut(a.URI, "?")
		if !strings.HasPrefix(q, "step=") {
			// The browser's: a person's, over Chromium's own handshake.
			if a.Decision != "allow" || a.Undeclared != "" || a.Crawler != "" || a.TLSEngine != "chromium" {
				disagree++
				t.Errorf("%s: the browser's %s: %+v", mode, a.URI, a)
			}
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(q, "step="))
		if err != nil || i >= len(steps) {
			t.Fatalf("%s: audit line for %q", mode, a.URI)
		}
		seen++
		s, sv := steps[i], server[i]
		wantMode := "enforce"
		if s.signal == "tls" && mode == "log" {
			wantMode = "log"
		}
		refusedWant := sv.decision != "allow" && wantMode == "enforce"
		if mode == "enforce" && s.decision != "" && sv.decision != s.decision || (sv.status >= 400) != refusedWant {
			t.Errorf("%s: step %d (%s %s as %q): the server decided %s (%d), the test expects %s", mode, i, s.client, s.path, s.ua, sv.decision, sv.status, s.decision)
		}
		if a.Decision != sv.decision || a.Undeclared != s.signal || a.Mode != wantMode || a.Crawler != sv.agent {
			disagree++
			t.Errorf("%s: step %d (%s %s as %q): server %s %d %q, audit %s/%s %q undeclared %q mode %s (%s)",
				mode, i, s.client, s.path, s.ua, sv.decision, sv.status, sv.agent, a.Decision, a.Reason, a.Crawler, a.Undeclared, a.Mode, a.Why)
		}
		if s.signal == "tls" && (a.TLSEngine != "library" || a.Why == "") {
			t.Errorf("%s: step %d: engine %q, why %q", mode, i, a.TLSEngine, a.Why)
		}
	}
	if seen != len(steps) {
		t.Errorf("%s: %d of %d requests in the audit", mode, seen, len(steps))
	}
	return disagree
}

// checkWouldRefuse runs the audit's JSON report on the log of the run with
// tls in log: it lists, by handshake, the libraries' fingerprints as what
// enforce would refuse, and never the browser's.
func checkWouldRefuse(t *testing.T, bin, cfgPath, logFile string, audit []auditTLSDecision) {
	t.Helper()
	type report struct {
		Undeclared struct {
			Fingerprints []struct {
				Fingerprint string `json:"fingerprint"`
				Engine      string `json:"engine"`
				Claims      string `json:"claims"`
				WouldRefuse int64  `json:"would_refuse"`
				Refused     int64  `json:"refused"`
				Addresses   int    `json:"addresses"`
			} `json:"tls_fingerprints"`
		} `json:"undeclared"`
	}
	rs := runJSONLines[report](t, bin, nil, "robots", "audit", "--config", cfgPath, "--site", hostPort("localhost", httpsPort), "--format", "json", logFile)
	if len(rs) != 1 {
		t.Fatalf("%d reports", len(rs))
	}
	libraries, browser := map[string]bool{}, ""
	for _, a := range audit {
		switch a.TLSEngine {
		case "library":
			if a.Undeclared == "tls" {
				libraries[a.TLSFingerprint] = true
			}
		case "chromium":
			browser = a.TLSFingerprint
		}
	}
	listed := map[string]bool{}
	for _, f := range rs[0].Undeclared.Fingerprints {
		listed[f.Fingerprint] = true
		if f.Fingerprint == browser || f.Engine != "library" || f.WouldRefuse == 0 || f.Refused != 0 || f.Addresses != 1 {
			t.Errorf("tls in log, listed: %+v", f)
		}
	}
	if len(libraries) != 2 || len(listed) != len(libraries) {
		t.Errorf("tls in log: the libraries' handshakes %v, listed %v", libraries, listed)
	}
	for fp := range libraries {
		if !listed[fp] {
			t.Errorf("tls in log: %s not listed", fp)
		}
	}
}

// goSeen sends a GET over Go's crypto/tls with ua and headers, and returns
// what the server said of it.
func goSeen(t *testing.T, ca testCA, url, ua string, headers [][2]string) serverSeen {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: ca.clientTLS(t), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for _, h := range headers {
		req.Header.Set(h[0], h[1])
	}
	req.Header.Set("User-Agent", ua)
	res, err := (&http.Client{Transport: resetRetrier{tr}, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return seenOf(res.StatusCode, res.Header.Get("X-Robots-Decision"), res.Header.Get("X-Robots-Agent"))
}

// curlSeen sends a GET with curl (OpenSSL's handshake) with ua (curl's
// own when "") and headers, and returns what the server said of it.
func curlSeen(t *testing.T, curl string, ca testCA, url, ua string, headers [][2]string) serverSeen {
	t.Helper()
	args := []string{"-sS", "-o", "/dev/null", "-D", "-", "--cacert", ca.caFile, "--resolve", fmt.Sprintf("localhost:%d:127.0.0.1", httpsPort)}
	for _, h := range headers {
		if h[0] != "User-Agent" {
			args = append(args, "-H", h[0]+": "+h[1])
		}
	}
	if ua != "" {
		args = append(args, "-A", ua)
	}
	out, err := exec.Command(curl, append(args, url)...).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", url, err)
	}
	// curl -D - writes the status line ("HTTP/2 403") and the headers.
	lines := strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n")
	fields := strings.Fields(lines[0])
	status := 0
	if len(fields) >= 2 {
		status, _ = strconv.Atoi(fields[1])
	}
	if status == 0 {
		t.Fatalf("curl %s: no status in\n%s", url, out)
	}
	header := http.Header{}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok {
			header.Add(k, strings.TrimSpace(v))
		}
	}
	return seenOf(status, header.Get("X-Robots-Decision"), header.Get("X-Robots-Agent"))
}

// seenOf is what the server said: the decision and agent it published
// (a placeholder left as written publishes nothing), else the status's.
func seenOf(status int, decision, agent string) serverSeen {
	if strings.HasPrefix(decision, "{") {
		decision = ""
	}
	if strings.HasPrefix(agent, "{") {
		agent = ""
	}
	if decision == "" {
		decision = "allow"
		if status == http.StatusForbidden {
			decision = "block"
		}
	}
	return serverSeen{decision: decision, agent: agent, status: status}
}
