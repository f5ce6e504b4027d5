package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// User-Agents of the browsers the header rule knows, and of a text browser.
const (
	uaChrome131 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaFirefox   = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	uaSafari    = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"
	uaChrome70  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36"
	uaLynx      = "Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"
)

// The headers a browser sends with a navigation to a secure context, as
// Caddy logs them (canonical names).
var (
	chromeNav  = []string{`Sec-Ch-Ua: "Chromium";v="131", "Not_A Brand";v="24"`, "Sec-Ch-Ua-Mobile: ?0", `Sec-Ch-Ua-Platform: "Windows"`, "Upgrade-Insecure-Requests: 1", "Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-User: ?1", "Sec-Fetch-Dest: document", "Priority: u=0, i"}
	firefoxNav = []string{"Upgrade-Insecure-Requests: 1", "Sec-Fetch-Dest: document", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Site: none", "Sec-Fetch-User: ?1", "Priority: u=0, i", "Te: trailers"}
)

// caddyReq is one request written as Caddy 2's JSON access log writes it
// (caddyhttp.LoggableHTTPRequest and Server.logRequest): remote_ip,
// remote_port, client_ip, proto, method, host, uri, headers and, for a
// request over TLS, tls, inside "request"; then bytes_read, user_id,
// duration, size, status and resp_headers.
type caddyReq struct {
	at       float64  // seconds after t0
	ip       string   // remote_ip
	clientIP string   // client_ip, "" for remote_ip's
	host     string   // "" for example.com
	uri, ua  string   // the target and User-Agent
	tls      bool     // over TLS
	headers  []string // "Name: value", canonical names
	status   int      // 0 for 200
	// fields are top-level fields log_append adds (raw JSON members,
	// e.g. `"tls_engine":"library"`), "" for none.
	fields string
}

func (r caddyReq) line() []byte {
	host, client, status := r.host, r.clientIP, r.status
	if host == "" {
		host = "example.com"
	}
	if client == "" {
		client = r.ip
	}
	if status == 0 {
		status = 200
	}
	var b bytes.Buffer
	q := func(s string) string {
		j, _ := json.Marshal(s)
		return string(j)
	}
	proto := "HTTP/1.1"
	if r.tls {
		proto = "HTTP/2.0"
	}
	fmt.Fprintf(&b, `{"level":"info","ts":%.6f,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":%s,"remote_port":"51234","client_ip":%s,"proto":%q,"method":"GET","host":%s,"uri":%s,"headers":{`,
		float64(t0)+r.at, q(r.ip), q(client), proto, q(host), q(r.uri))
	fmt.Fprintf(&b, `"Accept":["text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"],"User-Agent":[%s],"Accept-Encoding":["gzip, deflate, br, zstd"]`, q(r.ua))
	for _, h := range r.headers {
		k, v, _ := strings.Cut(h, ":")
		fmt.Fprintf(&b, `,%s:[%s]`, q(k), q(strings.TrimSpace(v)))
	}
	b.WriteString("}")
	if r.tls {
		fmt.Fprintf(&b, `,"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":%s,"ech":false}`, q(host))
	}
	fmt.Fprintf(&b, `},"bytes_read":0,"user_id":"","duration":0.000412,"size":1234,"status":%d,"resp_headers":{"Server":["Caddy"],"Content-Type":["text/html; charset=utf-8"]}`, status)
	if r.fields != "" {
		b.WriteString("," + r.fields)
	}
	b.WriteString("}")
	return b.Bytes()
}

// feed gives lines to an Auditor for cfg judging by robots and returns it
// with the decisions it wrote, one per line.
func feed(t *testing.T, cfg Config, robots string, lines ...[]byte) (*Auditor, []Decision) {
	t.Helper()
	if cfg.Robots == nil {
		cfg.Robots = enforce.Parse([]byte(robots))
	}
	var out bytes.Buffer
	cfg.Decisions = &out
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		var e Entry
		if l[0] == '{' && !new(Scanner).Parse(l, &e) {
			t.Fatalf("the scanner does not read the test's line:\n%s", l)
		}
		if err := a.Line(l); err != nil {
			t.Fatal(err)
		}
	}
	var ds []Decision
	dec := json.NewDecoder(&out)
	for dec.More() {
		var d Decision
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	if len(ds) != len(lines) {
		t.Fatalf("%d decisions for %d lines", len(ds), len(lines))
	}
	return a, ds
}

// verdict is a decision in short: "block rule fetch_metadata enforce" for
// an undeclared crawler, "person" for a request not judged as one.
func verdict(d Decision) string {
	if d.Undeclared == "" {
		if d.Reason == "not a crawler" {
			return "person"
		}
		return d.Decision + " " + d.Reason
	}
	s := d.Decision + " " + d.Reason + " " + d.Undeclared + " " + d.Mode
	if d.Trap != "" {
		s += " trap " + d.Trap
	}
	return s
}

const undeclaredRobots = "User-agent: *\nDisallow: /private/\nDisallow: /no-robots/\n\nUser-agent: GPTBot\nDisallow: /\n"

func lines(reqs ...caddyReq) [][]byte {
	out := make([][]byte, len(reqs))
	for i, r := range reqs {
		out[i] = r.line()
	}
	return out
}

// TestUndeclaredHeaderRule: a browser's claim over a secure context without
// the headers that browser always sends is an undeclared crawler, judged by
// "*"; with them, or over plain HTTP to a host that is not loopback, it is
// a person's and is not judged.
func TestUndeclaredHeaderRule(t *testing.T) {
	cases := []struct {
		name string
		r    caddyReq
		want string
	}{
		{"Chrome 131 over TLS without Fetch Metadata", caddyReq{ip: "203.0.113.1", uri: "/private/x", ua: uaChrome131, tls: true}, "block rule fetch_metadata enforce"},
		{"the same on an allowed page", caddyReq{ip: "203.0.113.2", uri: "/public", ua: uaChrome131, tls: true}, "allow no rule disallows fetch_metadata enforce"},
		{"Chrome 131 over TLS with its headers", caddyReq{ip: "203.0.113.3", uri: "/private/x", ua: uaChrome131, tls: true, headers: chromeNav}, "person"},
		{"one Fetch Metadata header and Sec-CH-UA are enough", caddyReq{ip: "203.0.113.4", uri: "/private/x", ua: uaChrome131, tls: true, headers: []string{"Sec-Fetch-Dest: image", "Sec-Ch-Ua: x"}}, "person"},
		{"Fetch Metadata without Sec-CH-UA: a person may send that, never judged", caddyReq{ip: "203.0.113.5", uri: "/private/x", ua: uaChrome131, tls: true, headers: chromeNav[3:]}, "person"},
		{"a Chrome WebSocket handshake: Chromium sends no Fetch Metadata there", caddyReq{ip: "203.0.113.16", uri: "/private/ws", ua: uaChrome131, tls: true, headers: []string{"Upgrade: websocket", "Connection: Upgrade"}}, "person"},
		{"a Firefox WebSocket handshake without Fetch Metadata", caddyReq{ip: "203.0.113.17", uri: "/private/ws", ua: uaFirefox, tls: true, headers: []string{"Upgrade: websocket", "Connection: Upgrade"}}, "block rule fetch_metadata enforce"},
		{"over plain HTTP to a host that is not loopback", caddyReq{ip: "203.0.113.6", uri: "/private/x", ua: uaChrome131}, "person"},
		{"over plain HTTP to localhost", caddyReq{ip: "127.0.0.1", host: "localhost:8080", uri: "/private/x", ua: uaChrome131}, "block rule fetch_metadata enforce"},
		{"over plain HTTP to [::1]", caddyReq{ip: "::1", host: "[::1]:8080", uri: "/private/x", ua: uaChrome131}, "block rule fetch_metadata enforce"},
		{"over plain HTTP to a name under .localhost", caddyReq{ip: "127.0.0.1", host: "a.localhost:8080", uri: "/private/x", ua: uaChrome131}, "person"},
		{"Firefox 128 with its headers", caddyReq{ip: "203.0.113.7", uri: "/private/x", ua: uaFirefox, tls: true, headers: firefoxNav}, "person"},
		{"Firefox 128 without", caddyReq{ip: "203.0.113.8", uri: "/private/x", ua: uaFirefox, tls: true}, "block rule fetch_metadata enforce"},
		{"Safari 17 without: fetch_metadata_safari, log", caddyReq{ip: "203.0.113.9", uri: "/private/x", ua: uaSafari, tls: true}, "block rule fetch_metadata_safari log"},
		{"Chrome 70 sends none", caddyReq{ip: "203.0.113.10", uri: "/private/x", ua: uaChrome70, tls: true}, "person"},
		{"a trusted proxy's X-Forwarded-Proto: https", caddyReq{ip: "10.0.0.2", clientIP: "203.0.113.11", uri: "/private/x", ua: uaChrome131, headers: []string{"X-Forwarded-Proto: https", "X-Forwarded-For: 203.0.113.11"}}, "block rule fetch_metadata enforce"},
		{"X-Forwarded-Proto from a client no proxy vouches for", caddyReq{ip: "203.0.113.12", uri: "/private/x", ua: uaChrome131, headers: []string{"X-Forwarded-Proto: https"}}, "person"},
		{"a trusted proxy's X-Forwarded-Proto: http", caddyReq{ip: "10.0.0.2", clientIP: "203.0.113.13", uri: "/private/x", ua: uaChrome131, headers: []string{"X-Forwarded-Proto: http"}}, "person"},
		{"/robots.txt is always served", caddyReq{ip: "203.0.113.14", uri: "/robots.txt", ua: uaChrome131, tls: true}, "person"},
		{"a declared crawler is judged as before", caddyReq{ip: "203.0.113.15", uri: "/private/x", ua: uaBot, tls: true}, "block rule"},
	}
	var reqs []caddyReq
	for i, c := range cases {
		c.r.at = float64(i)
		reqs = append(reqs, c.r)
	}
	a, ds := feed(t, Config{}, undeclaredRobots, lines(reqs...)...)
	for i, c := range cases {
		if got := verdict(ds[i]); got != c.want {
			t.Errorf("%s: %s, want %s (%+v)", c.name, got, c.want, ds[i])
		}
	}
	// Judged by "*", under the claimed browser's name.
	if d := ds[0]; d.Crawler != "Chrome (undeclared)" || d.Token != "*" || d.Rule != "Disallow: /private/ (line 2)" || !d.Strike {
		t.Errorf("Chrome's refusal: %+v", d)
	}
	r := a.Report()
	if r.Undeclared != 8 || r.Browsers != 11 || r.Crawlers != 1 {
		t.Errorf("undeclared %d, browsers %d, crawlers %d", r.Undeclared, r.Browsers, r.Crawlers)
	}
	for _, c := range r.Crawler {
		if c.Category == string(agents.CategoryUndeclared) {
			t.Errorf("undeclared crawler %s among the declared ones", c.Name)
		}
	}
	// example.com's: localhost and [::1] are sites of their own.
	chrome := undeclaredReport(t, r, "Chrome (undeclared)")
	if chrome.Host != "example.com" || chrome.Requests != 3 || chrome.Signals["fetch_metadata"] != 3 || chrome.Signals["client_hints"] != 0 ||
		chrome.Refused != 2 || chrome.RefusedLogMode != 0 || chrome.Category != "undeclared" {
		t.Errorf("Chrome (undeclared): %+v", chrome)
	}
	u := r.UndeclaredSignals
	if u == nil {
		t.Fatal("no undeclared section")
	}
	want := []SignalReport{
		{Signal: "fetch_metadata", Mode: "enforce", Requests: 7, Refused: 6},
		{Signal: "fetch_metadata_safari", Mode: "log", Requests: 1, WouldRefuse: 1},
		{Signal: "client_hints", Mode: "log"},
		{Signal: "trap", Mode: "off"},
	}
	if fmt.Sprint(u.Signals) != fmt.Sprint(want) || u.Requests != 8 || u.HeaderLines != int64(len(cases)) {
		t.Errorf("signals %+v (requests %d, header lines %d)", u.Signals, u.Requests, u.HeaderLines)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"11 by browsers, 1 by crawlers, 8 by undeclared crawlers",
		"undeclared   fetch_metadata enforce: 7 requests, 6 refused; fetch_metadata_safari log: 1 request, 1 enforce would refuse",
		"UNDECLARED CRAWLER",
		"Chrome (undeclared): 2 refused by Disallow: /private/ (line 2)",
	} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
}

func undeclaredReport(t *testing.T, r *Report, name string) CrawlerReport {
	t.Helper()
	for _, c := range r.UndeclaredCrawlers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no undeclared crawler %s in the report: %+v", name, r.UndeclaredCrawlers)
	return CrawlerReport{}
}

// TestUndeclaredState: an undeclared crawler collects strikes and pays its
// Crawl-delay under its own identity, as any unnamed bot; in log mode, in
// log mode's state.
func TestUndeclaredState(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nCrawl-delay: 10\n"
	var reqs []caddyReq
	for i := range 6 {
		reqs = append(reqs, caddyReq{at: float64(i) * 0.1, ip: "198.51.100.1", uri: fmt.Sprintf("/p%d", i), ua: uaChrome131, tls: true})
	}
	_, ds := feed(t, Config{}, robots, lines(reqs...)...)
	var got []string
	for _, d := range ds {
		got = append(got, d.Decision)
	}
	// crawl_burst 4: the fifth back to back is throttled.
	if s := strings.Join(got, " "); s != "allow allow allow allow throttle throttle" {
		t.Errorf("decisions %s", s)
	}
	// The same requests with fetch_metadata in log mode: judged in log
	// mode, with their own state, served.
	for i := range reqs {
		reqs[i].at += 100
	}
	logModes := policy.NewUndeclaredModes("", map[string]string{"fetch_metadata": "log"}, false)
	_, ds = feed(t, Config{Undeclared: &logModes}, robots, lines(reqs...)...)
	for i, d := range ds {
		if d.Mode != "log" || d.Undeclared != "fetch_metadata" || (i >= 4) != (d.Decision == "throttle") {
			t.Errorf("request %d in log mode: %+v", i, d)
		}
	}
}

// TestUndeclaredCombinedLogFormat: the Common and Combined Log Formats
// record no request headers: the header rule does not apply to their lines
// (the trap does), and the report says so.
func TestUndeclaredCombinedLogFormat(t *testing.T) {
	combined := []byte(`203.0.113.1 - - [11/May/2026:11:46:40 +0000] "GET /private/x HTTP/2.0" 200 512 "-" "` + uaChrome131 + `"`)
	a, ds := feed(t, Config{Trap: "/no-robots/"}, undeclaredRobots, combined, caddyReq{at: 1, ip: "203.0.113.2", uri: "/private/x", ua: uaChrome131, tls: true}.line())
	if got := verdict(ds[0]); got != "person" {
		t.Errorf("Combined line: %s, want person (the header rule does not apply)", got)
	}
	if got := verdict(ds[1]); got != "block rule fetch_metadata enforce" {
		t.Errorf("Caddy JSON line: %s", got)
	}
	u := a.Report().UndeclaredSignals
	if u == nil || u.HeaderLines != 1 || u.NoHeaderLines != 1 || u.Trap != "/no-robots/" {
		t.Fatalf("undeclared section %+v", u)
	}
	var table bytes.Buffer
	if err := a.Report().WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "1 line of the Combined or Common Log Format record none: only the trap applies to them") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestUndeclaredTrap: a client that takes the trap is refused there and is
// judged by "*" afterwards, under the pair (address, whole User-Agent):
// another browser on the same address, the same browser elsewhere, and the
// same client after the hold are people again. The trap applies to every
// format that records the User-Agent, over plain HTTP too.
func TestUndeclaredTrap(t *testing.T) {
	clf := func(at int, ip, uri, ua string) []byte {
		ts := time.Unix(t0+int64(at), 0).UTC().Format("02/Jan/2006:15:04:05 -0700")
		return []byte(fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" 200 512 "-" "%s"`, ip, ts, uri, ua))
	}
	steps := []struct {
		line []byte
		want string
	}{
		{caddyReq{at: 0, ip: "192.0.2.1", uri: "/no-robots/", ua: uaChrome131, headers: chromeNav}.line(), "block rule trap enforce trap marked"},
		{caddyReq{at: 1, ip: "192.0.2.1", uri: "/private/a", ua: uaChrome131, headers: chromeNav}.line(), "block rule trap enforce"},
		{caddyReq{at: 2, ip: "192.0.2.1", uri: "/public", ua: uaChrome131, headers: chromeNav}.line(), "allow no rule disallows trap enforce"},
		{caddyReq{at: 3, ip: "192.0.2.1", uri: "/private/a", ua: uaFirefox, headers: firefoxNav}.line(), "person"},
		{caddyReq{at: 4, ip: "192.0.2.2", uri: "/private/a", ua: uaChrome131, headers: chromeNav}.line(), "person"},
		{caddyReq{at: 5, ip: "192.0.2.1", uri: "/robots.txt", ua: uaChrome131}.line(), "person"},
		// IPv6: the mark holds for the /64.
		{caddyReq{at: 6, ip: "2001:db8:1:2::7", uri: "/no-robots/x.html", ua: uaFirefox}.line(), "block rule trap enforce trap marked"},
		{caddyReq{at: 7, ip: "2001:db8:1:2:ffff::1", uri: "/private/b", ua: uaFirefox}.line(), "block rule trap enforce"},
		{caddyReq{at: 8, ip: "2001:db8:1:3::7", uri: "/private/b", ua: uaFirefox}.line(), "person"},
		// The Combined Log Format: the trap applies.
		{clf(9, "192.0.2.3", "/no-robots/", "Wget/1.21.4"), "block rule"},
		{clf(10, "192.0.2.3", "/no-robots/", uaChrome131), "block rule trap enforce trap marked"},
		{clf(11, "192.0.2.3", "/private/c", uaChrome131), "block rule trap enforce"},
		// The hold is over.
		{caddyReq{at: 12 + 24*3600, ip: "192.0.2.1", uri: "/private/a", ua: uaChrome131, headers: chromeNav}.line(), "person"},
	}
	var ls [][]byte
	for _, s := range steps {
		ls = append(ls, s.line)
	}
	a, ds := feed(t, Config{Trap: "/no-robots/"}, undeclaredRobots, ls...)
	for i, s := range steps {
		if got := verdict(ds[i]); got != s.want {
			t.Errorf("step %d (%s): %s, want %s", i, ds[i].URI, got, s.want)
		}
	}
	if d := ds[0]; d.Crawler != "Chrome (undeclared)" || d.Rule != "Disallow: /no-robots/ (line 3)" || d.Line != 3 || d.Strike {
		t.Errorf("the trap request: %+v", d)
	}
	r := a.Report()
	u := r.UndeclaredSignals
	if u == nil || u.Signals[policy.SignalTrap] != (SignalReport{Signal: "trap", Mode: "enforce", Requests: 7, Refused: 6, TrapRequests: 3}) {
		t.Errorf("undeclared section %+v", u)
	}
	// example.com's Chrome: its trap request, a refused and an allowed
	// page; the Combined lines, which record no Host, are another site's.
	if c := undeclaredReport(t, r, "Chrome (undeclared)"); c.Host != "example.com" || c.Requests != 3 || c.TrapRequests != 1 || c.RefusedRule != 2 ||
		len(c.Rules) != 2 || c.Signals["trap"] != 3 {
		t.Errorf("Chrome (undeclared): %+v", c)
	}
}

// TestUndeclaredTrapTextBrowser: a text browser's single trap request only
// puts it on probation: a person's pace afterwards is not judged; a
// crawler's pace, or a second trap request, confirms a crawler.
func TestUndeclaredTrapTextBrowser(t *testing.T) {
	steps := []struct {
		r    caddyReq
		want string
	}{
		{caddyReq{at: 0, ip: "192.0.2.10", uri: "/no-robots/", ua: uaLynx}, "block rule trap enforce trap probation"},
		{caddyReq{at: 1.5, ip: "192.0.2.10", uri: "/private/a", ua: uaLynx}, "person"},
		{caddyReq{at: 3, ip: "192.0.2.10", uri: "/private/b", ua: uaLynx}, "person"},
		// A crawler's pace: less than a second after the previous request.
		{caddyReq{at: 10, ip: "192.0.2.11", uri: "/no-robots/", ua: uaLynx}, "block rule trap enforce trap probation"},
		{caddyReq{at: 10.3, ip: "192.0.2.11", uri: "/private/a", ua: uaLynx}, "block rule trap enforce"},
		{caddyReq{at: 20, ip: "192.0.2.11", uri: "/private/b", ua: uaLynx}, "block rule trap enforce"},
		// Twice the trap.
		{caddyReq{at: 30, ip: "192.0.2.12", uri: "/no-robots/", ua: uaLynx}, "block rule trap enforce trap probation"},
		{caddyReq{at: 35, ip: "192.0.2.12", uri: "/no-robots/other", ua: uaLynx}, "block rule trap enforce trap marked"},
		{caddyReq{at: 40, ip: "192.0.2.12", uri: "/private/a", ua: uaLynx}, "block rule trap enforce"},
	}
	var reqs []caddyReq
	for _, s := range steps {
		reqs = append(reqs, s.r)
	}
	a, ds := feed(t, Config{Trap: "/no-robots/"}, undeclaredRobots, lines(reqs...)...)
	for i, s := range steps {
		if got := verdict(ds[i]); got != s.want {
			t.Errorf("step %d (%s at %gs): %s, want %s", i, s.r.uri, s.r.at, got, s.want)
		}
	}
	if u := a.Report().UndeclaredSignals; u.Signals[policy.SignalTrap].Probation != 3 || u.Signals[policy.SignalTrap].TrapRequests != 4 {
		t.Errorf("trap %+v", u.Signals[policy.SignalTrap])
	}
}

// TestUndeclaredTrapNotDisallowed: a trap the robots.txt in force does not
// disallow for "*" marks nobody, and its request passes as a person's.
func TestUndeclaredTrapNotDisallowed(t *testing.T) {
	_, ds := feed(t, Config{Trap: "/no-robots/"}, "User-agent: *\nDisallow: /private/\n\nUser-agent: GPTBot\nDisallow: /no-robots/\n",
		lines(caddyReq{ip: "192.0.2.1", uri: "/no-robots/", ua: uaChrome131},
			caddyReq{at: 1, ip: "192.0.2.1", uri: "/private/", ua: uaChrome131})...)
	if a, b := verdict(ds[0]), verdict(ds[1]); a != "person" || b != "person" {
		t.Errorf("%s, %s; want person twice", a, b)
	}
}

// TestUndeclaredModes: the signals' modes as the handler reads them: all
// off; the trap in log mode (nothing refused, log mode's state); the
// handler's mode log over a signal's enforce.
func TestUndeclaredModes(t *testing.T) {
	script := caddyReq{ip: "192.0.2.1", uri: "/private/", ua: uaChrome131, tls: true}
	off := policy.NewUndeclaredModes("off", nil, true)
	_, ds := feed(t, Config{Undeclared: &off, Trap: "/no-robots/"}, undeclaredRobots,
		caddyReq{ip: "192.0.2.1", uri: "/no-robots/", ua: uaChrome131}.line(), script.line())
	if a, b := verdict(ds[0]), verdict(ds[1]); a != "person" || b != "person" {
		t.Errorf("undeclared off: %s, %s", a, b)
	}

	trapLog := policy.NewUndeclaredModes("", map[string]string{"trap": "log"}, true)
	a, ds := feed(t, Config{Undeclared: &trapLog, Trap: "/no-robots/"}, undeclaredRobots,
		caddyReq{ip: "192.0.2.2", uri: "/no-robots/", ua: uaChrome131, headers: chromeNav}.line(),
		caddyReq{at: 1, ip: "192.0.2.2", uri: "/private/", ua: uaChrome131, headers: chromeNav}.line())
	if a, b := verdict(ds[0]), verdict(ds[1]); a != "block rule trap log trap marked" || b != "block rule trap log" {
		t.Errorf("trap log: %s, %s", a, b)
	}
	if s := a.Report().UndeclaredSignals.Signals[policy.SignalTrap]; s.Refused != 0 || s.WouldRefuse != 2 {
		t.Errorf("trap log counts %+v", s)
	}

	_, ds = feed(t, Config{LogMode: true, Trap: "/no-robots/"}, undeclaredRobots, script.line(),
		caddyReq{at: 1, ip: "192.0.2.3", uri: "/no-robots/", ua: uaChrome131, headers: chromeNav}.line(),
		caddyReq{at: 2, ip: "192.0.2.3", uri: "/private/", ua: uaChrome131, headers: chromeNav}.line())
	for _, d := range ds {
		if d.Mode != "log" || d.Decision != "block" || d.Undeclared == "" {
			t.Errorf("handler in mode log: %+v", d)
		}
	}
}

// TestUndeclaredExempt: an exempt network is never judged, undeclared or
// not; its trap request is refused all the same, as the handler refuses it.
func TestUndeclaredExempt(t *testing.T) {
	cfg := Config{Trap: "/no-robots/", Exempt: []netip.Prefix{mustPrefix(t, "198.51.100.0/24")}}
	a, ds := feed(t, cfg, undeclaredRobots,
		caddyReq{ip: "198.51.100.1", uri: "/private/", ua: uaChrome131, tls: true}.line(),
		caddyReq{at: 1, ip: "198.51.100.2", uri: "/no-robots/", ua: uaChrome131, headers: chromeNav}.line())
	if a, b := verdict(ds[0]), verdict(ds[1]); a != "allow exempt network fetch_metadata enforce" || b != "block rule trap enforce trap marked" {
		t.Errorf("%s, %s", a, b)
	}
	if s := a.Report().UndeclaredSignals.Signals[policy.SignalFetchMetadata]; s.Requests != 0 {
		t.Errorf("an exempt request counted for its signal: %+v", s)
	}
}

// TestUndeclaredHTML: the HTML report shows the undeclared crawlers and
// the signals apart.
func TestUndeclaredHTML(t *testing.T) {
	a, _ := feed(t, Config{Trap: "/no-robots/"}, undeclaredRobots, lines(
		caddyReq{ip: "192.0.2.1", uri: "/private/", ua: uaChrome131, tls: true},
		caddyReq{at: 1, ip: "192.0.2.2", uri: "/no-robots/", ua: uaFirefox},
		caddyReq{at: 2, ip: "192.0.2.3", uri: "/x", ua: "GPTBot/1.2"})...)
	var b bytes.Buffer
	if err := a.Report().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<h2>Undeclared crawlers</h2>", "<td>Chrome (undeclared)</td>", "<td>Firefox (undeclared)</td>",
		"<h2>Signals of undeclared crawlers</h2>", "<td>fetch_metadata</td><td>enforce</td><td>1</td>", "Trap <code>/no-robots/</code>, hold 24h",
		"<h3>Chrome (undeclared)</h3>"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("HTML lacks %q", s)
		}
	}
	if i, j := strings.Index(b.String(), "<td>GPTBot</td>"), strings.Index(b.String(), "<h2>Undeclared crawlers</h2>"); i < 0 || i > j {
		t.Errorf("the declared crawlers' table does not come first")
	}
}

// TestScannerReadsSignals: the scanner records the presence of the
// browser's own headers (whatever their case and value), X-Forwarded-Proto
// and request.tls, as policy.HeaderSignals reads a header map.
func TestScannerReadsSignals(t *testing.T) {
	var s Scanner
	var e Entry
	for _, c := range []struct {
		headers string
		tls     string
		want    agents.Signals
		xfp     string
	}{
		{`"User-Agent":["x"]`, ``, 0, ""},
		{`"Sec-Fetch-Site":["none"],"User-Agent":["x"]`, `,"tls":{"resumed":false}`, agents.FetchMetadata, ""},
		{`"sec-fetch-mode":[""],"Sec-Ch-Ua":["\"Chromium\";v=\"131\""]`, `,"tls":{}`, agents.FetchMetadata | agents.ClientHints, ""},
		{`"Sec-Fetch-Dest":["document"]`, ``, agents.FetchMetadata, ""},
		{`"Sec-Fetch-User":["?1"],"Sec-Ch-Ua-Mobile":["?0"],"Sec-Fetch-Sitex":["a"],"Sec-Fetch":["a"]`, `,"tls":null`, 0, ""},
		{`"X-Forwarded-Proto":[" HTTPS ","http"],"SEC-CH-UA":["x"]`, ``, agents.ClientHints, " HTTPS "},
	} {
		line := `{"ts":1778500000,"request":{"remote_ip":"192.0.2.1","host":"x","uri":"/","headers":{` + c.headers + `}` + c.tls + `}}`
		if !s.Parse([]byte(line), &e) {
			t.Fatalf("not read: %s", line)
		}
		var h map[string][]string
		if err := json.Unmarshal([]byte("{"+c.headers+"}"), &h); err != nil {
			t.Fatal(err)
		}
		canon := map[string][]string{}
		for k, v := range h {
			canon[canonicalKey(k)] = v
		}
		if e.Signals != c.want || e.Signals != policy.HeaderSignals(canon) || !e.HasHeaders {
			t.Errorf("%s: signals %b, want %b (policy.HeaderSignals %b)", c.headers, e.Signals, c.want, policy.HeaderSignals(canon))
		}
		if e.TLS != strings.HasPrefix(c.tls, `,"tls":{`) {
			t.Errorf("%s: TLS %v", c.tls, e.TLS)
		}
		if string(e.ForwardedProto) != c.xfp {
			t.Errorf("%s: X-Forwarded-Proto %q", c.headers, e.ForwardedProto)
		}
	}
	if !s.Parse([]byte(`{"request":{"uri":"/"}}`), &e) || e.HasHeaders {
		t.Error("a line without request.headers")
	}
}

// canonicalKey is http.CanonicalHeaderKey for the test's names.
func canonicalKey(k string) string {
	parts := strings.Split(strings.ToLower(k), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

// TestRequestPath: the path of a target as Go's server reads it, decoded
// and as sent.
func TestRequestPath(t *testing.T) {
	for _, target := range []string{"/", "/no-robots/", "/a/b?c=d", "//x/y", "/%6eo-robots/", "/a%2Fb", "/é", "/a b", "/a#b",
		"http://example.com/no-robots/x?q", "*", "/a;b=c/d", "/~u/(x)", "/[x]", ""} {
		path, escaped := requestPath([]byte(target))
		u, err := url.ParseRequestURI(target)
		wp, we := "", ""
		if err == nil {
			wp, we = u.Path, u.EscapedPath()
		}
		if path != wp || escaped != we {
			t.Errorf("requestPath(%q) = %q, %q; want %q, %q", target, path, escaped, wp, we)
		}
	}
}
