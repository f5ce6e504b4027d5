package integration

// The differential test: one decision, four ways to ask for it. A corpus of
// requests (real crawlers' and browsers' User-Agents, the adversarial
// suite's targets, AI-preference paths, unverified claims, rewrite
// headers) goes through a real Caddy; each is also judged by the admin
// API's check, by `caddy robots check --requests` and by `caddy robots
// audit --format decisions` on the server's own access log. All four must
// agree on every request's rule decision: allowed or refused, by which
// rule (its line) or preference.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/caddyrobots/caddy-robots/agents"
)

// diffRobots is the robots.txt of the differential site: groups for "*",
// GPTBot and Googlebot, Allow inside Disallow, a wildcard, and AI usage
// preferences (enforced).
const diffRobots = `User-agent: *
Disallow: /private/
Allow: /private/public/
Disallow: /*?q=
Disallow: /search
Content-Usage: /articles/ train-ai=n
Content-Signal: ai-input=no

User-agent: GPTBot
Disallow: /gpt-only/
Disallow: /private/
Content-Usage: /articles/ train-ai=n

User-agent: Googlebot
Disallow: /nogoogle/
Allow: /private/
`

// diffRequest is one request of the corpus.
type diffRequest struct {
	UserAgent string            `json:"user_agent"`
	IP        string            `json:"ip"`
	URL       string            `json:"url"`
	Method    string            `json:"method,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	target    string
	kind      string
}

// diffVerdict is what is compared: the decision, the reason for a refusal,
// the rule's line and the preference that refused.
type diffVerdict struct {
	Decision   string
	Reason     string
	Line       int
	Preference string
}

func (v diffVerdict) String() string {
	s := v.Decision
	if v.Reason != "" {
		s += "/" + v.Reason
	}
	if v.Line != 0 {
		s += " line " + strconv.Itoa(v.Line)
	}
	if v.Preference != "" {
		s += " pref " + v.Preference
	}
	return s
}

// normal puts a verdict in the form compared: allowed requests keep only
// their rule's line (their reason is worded differently by each tool).
func (v diffVerdict) normal() diffVerdict {
	if v.Decision == "" {
		v.Decision = "allow"
	}
	if v.Decision == "allow" {
		v.Reason, v.Preference = "", ""
	}
	return v
}

// diffCorpus builds the corpus: at least 2,000 requests, reproducible.
func diffCorpus(t *testing.T, site string) []diffRequest {
	t.Helper()
	rng := rand.New(rand.NewPCG(20, 20))
	crawlers := crawlerUAs(t)
	browsers := browserUAs(t)
	ip := 0
	nextIP := func(private bool) string {
		ip++
		if private {
			return fmt.Sprintf("10.%d.%d.%d", ip>>16&255, ip>>8&255, ip&255)
		}
		return fmt.Sprintf("198.%d.%d.%d", 18+(ip>>16&1), ip>>8&255, ip&255)
	}
	paths := []string{"/", "/index.html", "/private/x", "/private/public/y", "/search?q=1", "/list?q=x&a=1",
		"/searching", "/gpt-only/a", "/nogoogle/b", "/articles/a.html", "/articles/", "/robots.txt", "/public/page",
		"/private/", "/a/b/c?d=e"}
	adversarial := []string{"//private/x", "/./private/x", "/public/../private/x", "/%2e/private/x", "/private%2Fx",
		"/PRIVATE/x", "/private;x=1/y", "/\\private\\x", "//evil.example/private/x", "///x/private/x", "//x/private/x?q=1",
		"/%70rivate/x", "/private/public/../x", "/a/%2e%2e/private/x", "/./articles/a.html", "/public/../articles/a.html",
		"/articles%2Fa.html", "//articles/a.html", "/gpt-only%2Fa", "/nogoogle/./b", "/" + strings.Repeat("a", 9000)}
	ai := []string{"GPTBot/1.2", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)",
		"CCBot/2.0 (https://commoncrawl.org/faq/)", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot",
		"Mozilla/5.0 (compatible; Bytespider; spider-feedback@bytedance.com)", "PerplexityBot/1.0"}
	claims := []string{googleUA, bingUA, "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
		"Mozilla/5.0 (compatible; Applebot/0.1; +http://www.apple.com/go/applebot)", "DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)"}
	// A claim whose operator is verified by reverse DNS (Google, Bing,
	// Apple, ...) comes from a private address: the server and the CLI
	// would ask DNS (here: NXDOMAIN, a spoof), the audit never does (it
	// judges old logs, where today's DNS proves nothing), so only a private
	// address gives all four the same facts (unverified, without DNS).
	// Claims verified by a published list alone keep public addresses.
	rdns := map[string]bool{}
	for _, m := range agents.VerificationMethods() {
		rdns[m.Key] = len(m.RDNSSuffixes) > 0
	}
	addrFor := func(ua string, private bool) string {
		if a := agents.Identify(ua); rdns[a.Profile.Verify] {
			private = true
		}
		return nextIP(private)
	}
	var out []diffRequest
	add := func(ua, ipAddr, target, kind string, headers map[string]string) {
		if ipAddr == "" {
			ipAddr = addrFor(ua, false)
		}
		method := "GET"
		if rng.IntN(10) == 0 {
			method = "HEAD"
		}
		out = append(out, diffRequest{UserAgent: ua, IP: ipAddr, URL: site + target, Method: method, Headers: headers, target: target, kind: kind})
	}
	for i := 0; i < 800; i++ {
		add(crawlers[rng.IntN(len(crawlers))], "", paths[rng.IntN(len(paths))], "crawler", nil)
	}
	for i := 0; i < 400; i++ {
		add(browsers[rng.IntN(len(browsers))], nextIP(false), append(paths, adversarial...)[rng.IntN(len(paths)+len(adversarial))], "browser", nil)
	}
	for i := 0; i < 400; i++ {
		add(crawlers[rng.IntN(len(crawlers))], "", adversarial[rng.IntN(len(adversarial))], "adversarial", nil)
	}
	for i := 0; i < 250; i++ {
		add(ai[rng.IntN(len(ai))], "", []string{"/articles/a.html", "/articles/", "/./articles/a.html", "/articles%2Fa.html", "/public/page"}[rng.IntN(5)], "preference", nil)
	}
	for i := 0; i < 200; i++ {
		ua := claims[rng.IntN(len(claims))]
		add(ua, addrFor(ua, i%2 == 0), paths[rng.IntN(len(paths))], "claim", nil)
	}
	for i := 0; i < 100; i++ {
		h := []string{"X-Original-URL", "X-Rewrite-URL", "X-Forwarded-Prefix"}[rng.IntN(3)]
		v := []string{"/private/x", "/articles/a.html", "/public/y", "/nogoogle/z"}[rng.IntN(4)]
		if h == "X-Forwarded-Prefix" {
			v = []string{"/private", "/articles", "/public"}[rng.IntN(3)]
		}
		add(crawlers[rng.IntN(len(crawlers))], "", paths[rng.IntN(len(paths))], "rewrite-header", map[string]string{h: v})
	}
	return out
}

// crawlerUAs are the real crawler User-Agents of the upstream list the
// catalogue is built from.
func crawlerUAs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(repoPath("agents/data/upstream/crawler-user-agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Instances []string `json:"instances"`
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		for _, ua := range r.Instances {
			if !strings.ContainsAny(ua, "\r\n") {
				out = append(out, ua)
			}
		}
	}
	return out
}

// browserUAs are real browsers' User-Agents (agents/testdata).
func browserUAs(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(repoPath("agents/testdata/browsers/browser-user-agents.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		if ua := strings.TrimSpace(sc.Text()); ua != "" && !strings.HasPrefix(ua, "#") {
			out = append(out, ua)
		}
	}
	return out
}

// nxDNS serves NXDOMAIN for every query on loopback, so verification never
// leaves the machine and gives the same answer every time.
func nxDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// rawDo sends one request with the target exactly as given and returns the
// response (its body read).
func rawDo(t *testing.T, method, target, host string, headers map[string]string, ua, xff string) (*http.Response, string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nX-Forwarded-For: %s\r\nConnection: close\r\n", method, target, host, ua, xff)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	b.WriteString("\r\n")
	for attempt := 0; ; attempt++ {
		conn, err := net.DialTimeout("tcp", httpAddr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		_, _ = io.WriteString(conn, b.String())
		res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
		if err != nil {
			conn.Close()
			if attempt < 3 {
				continue
			}
			t.Fatalf("%s %s: %v", method, target, err)
		}
		body, _ := io.ReadAll(res.Body)
		conn.Close()
		return res, string(body)
	}
}

var (
	ruleLine = regexp.MustCompile(`\(line (\d+)\)`)
	prefLine = regexp.MustCompile(`(?m)^Preference: (.*)$`)
)

// serverVerdict reads what the server decided, from the {http.robots.*}
// placeholders the site puts in response headers and the refusal's body.
func serverVerdict(res *http.Response, body string) diffVerdict {
	// A request the handler does not judge (a person's, /robots.txt)
	// leaves the placeholders unset: Caddy writes them as they are.
	get := func(h string) string {
		if v := res.Header.Get(h); !strings.HasPrefix(v, "{") {
			return v
		}
		return ""
	}
	v := diffVerdict{Decision: get("X-Robots-Decision"), Reason: get("X-Robots-Reason")}
	if m := ruleLine.FindStringSubmatch(get("X-Robots-Rule")); m != nil {
		v.Line, _ = strconv.Atoi(m[1])
	}
	if m := prefLine.FindStringSubmatch(body); m != nil {
		v.Preference = m[1]
	}
	return v.normal()
}

// checkVerdict reads a decision in the JSON of the admin check, the CLI's
// --requests output and the audit's --format decisions.
type checkVerdict struct {
	Decision   string `json:"decision"`
	Reason     string `json:"reason"`
	Line       int    `json:"line"`
	Preference string `json:"preference"`
	URI        string `json:"uri"`
}

func (c checkVerdict) verdict() diffVerdict {
	return diffVerdict{Decision: c.Decision, Reason: c.Reason, Line: c.Line, Preference: c.Preference}.normal()
}

// TestDifferential sends the corpus through a real Caddy and compares the
// four answers request by request.
func TestDifferential(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "access.log")
	resolver := nxDNS(t)
	host := "differential.localhost"
	caddyfile := auditedSite(siteURL(host), logFile, `	robots {
		source inline `+strconv.Quote(diffRobots)+`
		preferences enforce
		crawl_delay off
		strikes off
		verify {
			resolver `+resolver+`
		}
	}
	respond "ok {path}"
`)
	cfgPath := loadSaved(t, dir, caddyfile)
	reqs := diffCorpus(t, siteURL(host))

	server := make([]diffVerdict, len(reqs))
	admin := make([]diffVerdict, len(reqs))
	for i, r := range reqs {
		res, body := rawDo(t, r.Method, r.target, at(host), r.Headers, r.UserAgent, r.IP)
		server[i] = serverVerdict(res, body)
		var cv checkVerdict
		adminJSON(t, http.MethodPost, "/robots/check", r, http.StatusOK, &cv)
		admin[i] = cv.verdict()
		if r.Method == http.MethodHead && server[i].Reason == "preference" {
			// A HEAD answer has no body to name the preference in: the
			// reason is compared, the label cannot be.
			server[i].Preference = admin[i].Preference
		}
	}

	// The CLI judges the same requests with the options of the site's
	// handler, read from the same Caddyfile.
	bin := caddyBinary(t)
	var jsonl bytes.Buffer
	enc := json.NewEncoder(&jsonl)
	for _, r := range reqs {
		_ = enc.Encode(r)
	}
	reqFile := filepath.Join(dir, "requests.jsonl")
	if err := os.WriteFile(reqFile, jsonl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := runDecisions(t, bin, "robots", "check", "--config", cfgPath, "--site", host, "--resolver", resolver, "--requests", reqFile)

	// The audit replays the server's own access log, in time order.
	var audit []checkVerdict
	eventually(t, 10*time.Second, "the access log to hold every request", func() bool {
		audit = runDecisions(t, bin, "robots", "audit", "--config", cfgPath, "--site", host, "--format", "decisions", logFile)
		return len(audit) >= len(reqs)
	})

	if len(cli) != len(reqs) || len(audit) != len(reqs) {
		t.Fatalf("%d requests, %d CLI decisions, %d audit decisions", len(reqs), len(cli), len(audit))
	}
	disagree := 0
	kinds := map[string]int{}
	refused := 0
	for i, r := range reqs {
		kinds[r.kind]++
		s, a, c, au := server[i], admin[i], cli[i].verdict(), audit[i].verdict()
		if s.Decision != "allow" {
			refused++
		}
		if s != a || s != c || s != au {
			disagree++
			if disagree <= 20 {
				t.Errorf("request %d (%s) %s %s as %q from %s %v:\n  server %s\n  admin  %s\n  cli    %s\n  audit  %s (uri %q)",
					i, r.kind, r.Method, r.target, r.UserAgent, r.IP, r.Headers, s, a, c, au, audit[i].URI)
			}
		}
	}
	t.Logf("[report] differential: %d requests (%v) through a real Caddy, the admin check, the CLI and the audit of its access log; %d refused by the server; %d disagreements",
		len(reqs), kinds, refused, disagree)
	if len(reqs) < 2000 {
		t.Errorf("the corpus has %d requests, want at least 2000", len(reqs))
	}
	if refused < len(reqs)/5 {
		t.Errorf("only %d of %d requests refused: the corpus does not exercise the rules", refused, len(reqs))
	}
}

// runJSONLines runs the caddy binary and decodes its output, a stream of
// JSON values. Exit codes other than 0 fail the test unless listed in ok
// (caddy robots check exits 3 when it refuses a request).
func runJSONLines[T any](t *testing.T, bin string, ok []int, args ...string) []T {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CADDY_ROBOTS_RANGES_OPERATORS=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, isExit := err.(*exec.ExitError); err != nil && (!isExit || !slices.Contains(ok, ee.ExitCode())) {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	var out []T
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%v: reading output: %v", args, err)
		}
		out = append(out, v)
	}
	return out
}

// runDecisions runs caddy robots check or audit for their decisions.
func runDecisions(t *testing.T, bin string, args ...string) []checkVerdict {
	t.Helper()
	return runJSONLines[checkVerdict](t, bin, []int{3}, args...)
}

// TestDifferentialState: throttles and bans depend on live state. One
// crawler sends a burst that the site's Crawl-delay throttles and asks for
// disallowed paths until it is banned; before each request the admin check,
// which reads the same state without writing it, says what the request
// will get, and the server must answer that. The audit, replaying the
// server's access log in time order with the handler's options, must reach
// the same decisions.
func TestDifferentialState(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "access.log")
	host := "diffstate.localhost"
	caddyfile := auditedSite(siteURL(host), logFile, `	robots {
		source inline "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n"
		strikes 4 10m 1h
	}
	respond "ok {path}"
`)
	cfgPath := loadSaved(t, dir, caddyfile)
	const ua = "StatefulBot/1.0 (+https://stateful.example/bot)"
	paths := []string{"/a", "/b", "/c", "/d", "/e", "/f", "/private/1", "/private/2", "/private/3", "/private/4", "/private/5", "/g", "/h"}
	var server, predicted []diffVerdict
	for _, p := range paths {
		r := diffRequest{UserAgent: ua, IP: "198.51.100.77", URL: siteURL(host) + p, Method: "GET", target: p}
		var cv checkVerdict
		adminJSON(t, http.MethodPost, "/robots/check", r, http.StatusOK, &cv)
		res, body := rawDo(t, r.Method, p, at(host), nil, ua, r.IP)
		predicted = append(predicted, cv.verdict())
		server = append(server, serverVerdict(res, body))
	}
	bin := caddyBinary(t)
	var audit []checkVerdict
	eventually(t, 10*time.Second, "the access log to hold every request", func() bool {
		audit = runDecisions(t, bin, "robots", "audit", "--config", cfgPath, "--site", host, "--format", "decisions", logFile)
		return len(audit) >= len(paths)
	})
	seen := map[string]int{}
	for i, p := range paths {
		a := audit[i].verdict()
		seen[server[i].Decision]++
		if server[i] != predicted[i] || server[i] != a {
			t.Errorf("%s: server %s, admin check beforehand %s, audit %s", p, server[i], predicted[i], a)
		}
	}
	if seen["throttle"] == 0 || seen["ban"] == 0 || seen["block"] == 0 {
		t.Errorf("the sequence did not reach throttle, refusal and ban: %v", seen)
	}
	t.Logf("[report] differential state: %d requests, decisions %v; server, admin check and audit agree", len(paths), seen)
}

// loadSaved loads caddyfile into the test's Caddy and writes it to
// dir/Caddyfile, whose path it returns: the audit reads the handler's
// options from it (--config).
func loadSaved(t *testing.T, dir, caddyfile string) string {
	t.Helper()
	newClient(t, caddyfile)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
