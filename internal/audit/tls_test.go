package audit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// JA4 fingerprints of the shape the handler logs.
const (
	ja4Curl     = "t13d3112h2_e8f1e7e78f70_6bebaf5329ac"
	ja4Go       = "t13d1312h2_f57a46bbacb6_e7c285222651"
	ja4Chromium = "t13d1516h2_8daaf6152771_d8a2da3f94cd"
	ja4Draft    = "t00d1312h2_f57a46bbacb6_e7c285222651" // highest offered: a TLS 1.3 draft
)

// tlsFields are the fields log_append adds for a handshake: fingerprint,
// engine, versions ("-" leaves tls_versions out).
func tlsFields(fp, engine, versions string) string {
	s := fmt.Sprintf(`"tls_fingerprint":%q,"tls_engine":%q`, fp, engine)
	if versions != "-" {
		s += fmt.Sprintf(`,"tls_versions":%q`, versions)
	}
	return s
}

// forgedChrome are the headers a script forges to pass the header rule.
var forgedChrome = chromeNav

// TestAuditTLSSignal: a browser claim over a handshake the log's
// tls_engine says is a library's is an undeclared crawler by signal tls,
// judged by "*", whatever headers it forged, in the signal's mode; a
// browser engine's handshake (a User-Agent switcher included), a line
// without a fingerprint, a JA4 from a proxy's header, a library's
// handshake from a trusted proxy (its own, not its client's) and a
// crawler that names itself are not judged by it. Claims the handshake
// makes impossible are caught over an unknown stack, by tls_versions.
func TestAuditTLSSignal(t *testing.T) {
	lib := tlsFields(ja4Curl, "library", "0304,0303,0302,0301")
	const (
		uaChrome60 = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/60.0.3112.113 Safari/537.36"
		uaBare     = "Mozilla/5.0 (Windows NT 10.0; Win64; x64)"
		uaBot      = "ExampleBot/1.0 (+https://example.com/bot)"
	)
	cases := []struct {
		what     string
		req      caddyReq
		decision string
		signal   string
	}{
		{"a library as Chrome, every header forged", caddyReq{ip: "203.0.113.1", uri: "/private/a", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib}, "block", "tls"},
		{"its allowed page", caddyReq{at: 10, ip: "203.0.113.1", uri: "/a", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib}, "allow", "tls"},
		{"Chromium's handshake", caddyReq{ip: "203.0.113.2", uri: "/private/a", ua: uaChrome131, tls: true, headers: chromeNav, fields: tlsFields(ja4Chromium, "chromium", "0304,0303")}, "allow", ""},
		{"Firefox claiming Chrome (a switcher)", caddyReq{ip: "203.0.113.3", uri: "/private/a", ua: uaChrome131, tls: true, headers: firefoxNav, fields: tlsFields(ja4Chromium, "firefox", "0304,0303")}, "allow", ""},
		{"no fingerprint", caddyReq{ip: "203.0.113.4", uri: "/private/a", ua: uaChrome131, tls: true, headers: forgedChrome}, "allow", ""},
		{"a JA4 from a proxy's header", caddyReq{ip: "127.0.0.1", clientIP: "203.0.113.5", uri: "/private/a", ua: uaChrome131, tls: true, headers: forgedChrome, fields: tlsFields(ja4Curl, "", "-")}, "allow", ""},
		{"a trusted proxy's own handshake", caddyReq{ip: "127.0.0.1", clientIP: "203.0.113.6", uri: "/private/a", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib}, "allow", ""},
		{"a crawler that names itself", caddyReq{ip: "203.0.113.7", uri: "/private/a", ua: uaBot, tls: true, fields: lib}, "block", ""},
		{"a bare Mozilla/5.0 over an unknown stack", caddyReq{ip: "203.0.113.8", uri: "/private/a", ua: uaBare, tls: true, fields: tlsFields(ja4Go, "unknown", "0304,0303")}, "block", "tls"},
		{"Chrome 60 offering TLS 1.3 beside a draft", caddyReq{ip: "203.0.113.9", uri: "/private/a", ua: uaChrome60, tls: true, fields: tlsFields(ja4Draft, "unknown", "7f1c,0304,0303")}, "block", "tls"},
		{"Chrome 60 offering drafts only", caddyReq{ip: "203.0.113.10", uri: "/private/a", ua: uaChrome60, tls: true, fields: tlsFields(ja4Draft, "unknown", "7f1c,0303")}, "allow", ""},
		{"Chrome 60, no tls_versions: the JA4's version", caddyReq{ip: "203.0.113.11", uri: "/private/a", ua: uaChrome60, tls: true, fields: tlsFields(ja4Go, "unknown", "-")}, "block", "tls"},
	}
	reqs := make([]caddyReq, len(cases))
	for i, c := range cases {
		reqs[i] = c.req
	}
	enforce := policy.NewUndeclaredModes("", map[string]string{"tls": "enforce"}, false)
	_, ds := feed(t, Config{Undeclared: &enforce}, undeclaredRobots, lines(reqs...)...)
	for i, c := range cases {
		d := ds[i]
		if d.Decision != c.decision || d.Undeclared != c.signal {
			t.Errorf("%s: %s (%s), signal %q; want %s, signal %q", c.what, d.Decision, d.Reason, d.Undeclared, c.decision, c.signal)
		}
		if c.signal == "tls" && (d.Crawler != "Chrome (undeclared)" && d.Crawler != "Mozilla (undeclared)" || d.Mode != "enforce" || d.Why == "" || d.TLSFingerprint == "") {
			t.Errorf("%s: %+v", c.what, d)
		}
	}
	if why := ds[0].Why; !strings.Contains(why, "HTTP library's") {
		t.Errorf("why: %q", why)
	}
	if why := ds[9].Why; !strings.Contains(why, "could not have made") {
		t.Errorf("why of an impossible claim: %q", why)
	}
}

// TestAuditTLSLogMode: with the signal in its default, log, the same
// library is judged and served, counted as what enforce would refuse, and
// listed by handshake in the report with its claim and addresses; a line
// over TLS without a fingerprint gets a note saying how to log one.
func TestAuditTLSLogMode(t *testing.T) {
	lib := tlsFields(ja4Curl, "library", "0304,0303")
	goLib := tlsFields(ja4Go, "library", "0304,0303")
	a, ds := feed(t, Config{}, undeclaredRobots, lines(
		caddyReq{at: 0, ip: "203.0.113.1", uri: "/private/a", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib},
		caddyReq{at: 30, ip: "203.0.113.2", uri: "/private/b", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib},
		caddyReq{at: 60, ip: "203.0.113.2", uri: "/ok", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib},
		caddyReq{at: 90, ip: "203.0.113.3", uri: "/private/c", ua: uaFirefox, tls: true, headers: firefoxNav, fields: goLib},
	)...)
	for i, d := range ds {
		if d.Undeclared != "tls" || d.Mode != "log" {
			t.Errorf("line %d: signal %q mode %s, want tls in log", i+1, d.Undeclared, d.Mode)
		}
	}
	r := a.Report()
	fps := r.UndeclaredSignals.Fingerprints
	if len(fps) != 2 {
		t.Fatalf("fingerprints: %+v", fps)
	}
	if f := fps[0]; f.Fingerprint != ja4Curl || f.Engine != "library" || f.Claims != "Chrome" || f.Requests != 3 || f.Refused != 0 || f.WouldRefuse != 2 || f.Addresses != 2 || f.Host != "example.com" {
		t.Errorf("curl's row: %+v", f)
	}
	if f := fps[1]; f.Fingerprint != ja4Go || f.Claims != "Firefox" || f.WouldRefuse != 1 || f.Addresses != 1 {
		t.Errorf("Go's row: %+v", f)
	}
	var tls *SignalReport
	for i, s := range r.UndeclaredSignals.Signals {
		if s.Signal == "tls" {
			tls = &r.UndeclaredSignals.Signals[i]
		}
	}
	if tls == nil || tls.Mode != "log" || tls.Requests != 4 || tls.WouldRefuse != 3 || r.UndeclaredSignals.TLSLines != 4 {
		t.Errorf("the tls signal: %+v, %d lines", tls, r.UndeclaredSignals.TLSLines)
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tls signal, by handshake", ja4Curl + "  library  Chrome", "2: 203.0.113.2 (2), 203.0.113.1 (1)"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, table.String())
		}
	}
	var html strings.Builder
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "<code>"+ja4Curl+"</code>") {
		t.Error("the HTML report does not list the fingerprint")
	}

	a, _ = feed(t, Config{}, undeclaredRobots, caddyReq{ip: "203.0.113.1", uri: "/", ua: uaChrome131, tls: true, headers: chromeNav}.line())
	r = a.Report()
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "log_append tls_fingerprint {http.robots.tls_fingerprint}") {
		t.Errorf("notes of a log over TLS without fingerprints: %q", r.Notes)
	}
	if u := r.UndeclaredSignals; u != nil {
		t.Errorf("signals reported from a log where none caught anything: %+v", u)
	}
}

// TestAuditTLSMarksFollowTheHandshake: as the handler keys them, a trap
// mark earned over a library's handshake holds for the same handshake
// whatever User-Agent it sends next, and never reaches a browser engine's
// handshake with the very same User-Agent on the same address; an
// undeclared crawler's strikes follow the handshake too.
func TestAuditTLSMarksFollowTheHandshake(t *testing.T) {
	lib := tlsFields(ja4Go, "library", "0304,0303")
	browser := tlsFields(ja4Chromium, "chromium", "0304,0303")
	other := strings.Replace(uaChrome131, "Chrome/131", "Chrome/132", 1)
	off := policy.NewUndeclaredModes("", map[string]string{"tls": "off"}, true)
	_, ds := feed(t, Config{Undeclared: &off, Trap: "/no-robots/"}, undeclaredRobots, lines(
		caddyReq{at: 0, ip: "203.0.113.1", uri: "/no-robots/", ua: uaChrome131, tls: true, headers: forgedChrome, fields: lib},
		caddyReq{at: 1, ip: "203.0.113.1", uri: "/private/x", ua: other, tls: true, headers: forgedChrome, fields: lib},
		caddyReq{at: 2, ip: "203.0.113.1", uri: "/private/x", ua: uaChrome131, tls: true, headers: chromeNav, fields: browser},
	)...)
	if d := ds[0]; d.Trap != "marked" {
		t.Errorf("the trap request: %+v", d)
	}
	if d := ds[1]; d.Undeclared != "trap" || d.Decision != "block" {
		t.Errorf("the same handshake with another User-Agent: %s, signal %q; want block by the trap", d.Decision, d.Undeclared)
	}
	if d := ds[2]; d.Undeclared != "" || d.Decision != "allow" {
		t.Errorf("the browser with the script's User-Agent: %s, signal %q; want allow", d.Decision, d.Undeclared)
	}
}

// TestAuditTLSRowsBounded: a flood of distinct handshakes keeps at most
// maxFingerprints rows, the rest counted in one.
func TestAuditTLSRowsBounded(t *testing.T) {
	var reqs []caddyReq
	for i := range maxFingerprints + 10 {
		fp := fmt.Sprintf("t13d1312h2_%012x_e7c285222651", i)
		reqs = append(reqs, caddyReq{at: float64(i), ip: "203.0.113.1", uri: "/", ua: uaChrome131, tls: true, headers: forgedChrome, fields: tlsFields(fp, "library", "0304")})
	}
	a, _ := feed(t, Config{}, undeclaredRobots, lines(reqs...)...)
	fps := a.Report().UndeclaredSignals.Fingerprints
	if len(fps) != maxFingerprints+1 {
		t.Fatalf("%d rows, want %d", len(fps), maxFingerprints+1)
	}
	if last := fps[len(fps)-1]; last.Fingerprint != OtherFingerprints || last.Requests != 10 {
		t.Errorf("the last row: %+v", last)
	}
}
