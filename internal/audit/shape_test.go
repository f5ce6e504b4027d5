package audit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// shapeLine is a Caddy JSON access-log line of a request with header map
// h over proto, and the given top-level fields (log_append's).
func shapeLine(t testing.TB, remote, client, proto string, h http.Header, top map[string]string) []byte {
	t.Helper()
	line := map[string]any{
		"ts": float64(t0), "status": 200,
		"request": map[string]any{"remote_ip": remote, "client_ip": client, "proto": proto, "method": "GET",
			"host": "example.com", "uri": "/p", "headers": h},
	}
	for k, v := range top {
		line[k] = v
	}
	b, err := json.Marshal(line)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLoggedShapeIsTheServers: the shape the audit reads from a logged
// line is the one the server computed from the request (policy.ClientShape
// of its header map, HTTP version and the fingerprint its judgement rests
// on): escaped values, several values of a header, redacted credentials,
// each HTTP version; a line's fingerprint as the handler's fingerprintOf
// takes it (a trusted proxy's own library handshake is not its client's).
// A line that records no headers has shape 0.
func TestLoggedShapeIsTheServers(t *testing.T) {
	const ja4 = "t13d1516h2_8daaf6152771_02713d6af862"
	wget := http.Header{"User-Agent": {"Wget/1.21.3"}, "Accept": {"*/*"}, "Accept-Encoding": {"identity"},
		"Connection": {"Keep-Alive"}, "Referer": {"http://example.com/"}, "Cookie": {"REDACTED"}, "Authorization": {"REDACTED"}}
	odd := http.Header{"User-Agent": {"Odd/1.0"}, "Accept": {`text/html;q="0.9"`, `a\b <&>`}, "Accept-Language": {"fr-CH, fr;q=0.9, é"},
		"Connection": {"keep-alive, TE"}, "X-Run": {"1"}}
	for _, c := range []struct {
		name           string
		remote, client string
		proto          string
		h              http.Header
		top            map[string]string
		major, minor   int
		fp             string
	}{
		{"wget over HTTP/1.1", "192.0.2.1", "192.0.2.1", "HTTP/1.1", wget, nil, 1, 1, ""},
		{"wget over HTTP/1.0", "192.0.2.1", "192.0.2.1", "HTTP/1.0", wget, nil, 1, 0, ""},
		{"escaped and repeated values over HTTP/2", "192.0.2.1", "192.0.2.1", "HTTP/2.0", odd, nil, 2, 0, ""},
		{"HTTP/3", "192.0.2.1", "192.0.2.1", "HTTP/3.0", odd, nil, 3, 0, ""},
		{"the client's handshake", "192.0.2.1", "192.0.2.1", "HTTP/2.0", odd,
			map[string]string{"tls_fingerprint": ja4, "tls_engine": "library"}, 0, 0, ja4},
		{"a JA4 from a trusted proxy's header", "10.0.0.1", "192.0.2.1", "HTTP/2.0", odd,
			map[string]string{"tls_fingerprint": ja4, "tls_engine": ""}, 0, 0, ja4},
		{"a trusted proxy's own handshake", "10.0.0.1", "192.0.2.1", "HTTP/1.1", wget,
			map[string]string{"tls_fingerprint": ja4, "tls_engine": "library"}, 1, 1, ""},
	} {
		a := &Auditor{}
		if !a.scanner.Parse(shapeLine(t, c.remote, c.client, c.proto, c.h, c.top), &a.entry) {
			t.Fatalf("%s: the line does not parse", c.name)
		}
		want := policy.ClientShape(c.h, c.major, c.minor, c.fp)
		if got := a.loggedShape(); got != want {
			t.Errorf("%s: the audit's shape %#x, the server's %#x", c.name, got, want)
		}
	}
	a := &Auditor{}
	if ok, err := a.parse([]byte(nginxCombined), &a.entry); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got := a.loggedShape(); got != 0 {
		t.Errorf("a Combined line has shape %#x, want 0", got)
	}
}

// TestLoggedHeaderSkipsWhatCaddyNeverWrites: a header whose value is not
// an array of strings is left out, the others are read.
func TestLoggedHeaderSkipsWhatCaddyNeverWrites(t *testing.T) {
	h := http.Header{}
	loggedHeader([]byte(` { "A" : [ "1" , "2\"" ], "B":"x", "C":{"d":[1]}, "D":[1,"2"], "E":[], "F":["3"] } `), h)
	want := http.Header{"A": {"1", `2"`}, "E": {}, "F": {"3"}}
	if _, e := h["E"]; len(h) != len(want) || h["A"][1] != `2"` || h["F"][0] != "3" || !e || len(h["E"]) != 0 {
		t.Errorf("read %q, want %q", h, want)
	}
	for _, bad := range []string{``, `[`, `{"A":["1"`, `{"A":`, `{"A"`, `{"A":["1",]}`} {
		loggedHeader([]byte(bad), http.Header{}) // no panic
	}
}

// TestAuditRotationPoolsByShape: on an address that presents many names,
// two clients of different shapes each spend their own pool in the audit,
// as on the server: neither is throttled for the other's requests, while
// one client alone under as many names is. Lines that record no headers
// (Combined) share one pool per address, and the report says so.
func TestAuditRotationPoolsByShape(t *testing.T) {
	const robots = "User-agent: *\nDisallow: /private/\nCrawl-delay: 600\n"
	// 4 residents, then 12 names of each client, in turn: a pool serves
	// state.DefaultBurst × state.RotationPoolNames = 16 requests at once.
	run := func(accept [2]string) (throttled int64, r *Report) {
		var reqs []req
		for i := range 28 {
			h := map[string]string{"Accept": accept[i%2]}
			reqs = append(reqs, req{ts: t0 + float64(i)/10, ua: fmt.Sprintf("Rnd%02d/1.0", i), uri: fmt.Sprintf("/p%d", i), ip: "198.51.100.7", headers: h})
		}
		a, _ := audit(t, Config{}, robots, reqs)
		r = a.Report()
		for _, c := range r.Crawler {
			throttled += c.Throttled
		}
		return throttled, r
	}
	two, r := run([2]string{"*/*", "text/html"})
	one, _ := run([2]string{"*/*", "*/*"})
	if two != 0 || one != 24-16 {
		t.Errorf("throttled: %d of two clients' 24 unproven requests (want 0), %d of one client's (want 8)", two, one)
	}
	if r.Rotating != 24 || r.RotatingUnshaped != 0 {
		t.Errorf("the report counts %d rotating requests, %d without headers: want 24, 0", r.Rotating, r.RotatingUnshaped)
	}

	// The same requests in the Combined Log Format: one pool.
	a, err := New(Config{Robots: enforce.Parse([]byte(robots))})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(t0, 0).UTC()
	for i := range 28 {
		line := fmt.Sprintf(`198.51.100.7 - - [%s] "GET /p%d HTTP/1.1" 200 1 "-" "Rnd%02d/1.0"`, start.Add(time.Duration(i)*100*time.Millisecond).Format("02/Jan/2006:15:04:05 -0700"), i, i)
		if err := a.Line([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	r = a.Report()
	var throttled int64
	for _, c := range r.Crawler {
		throttled += c.Throttled
	}
	if throttled != 8 || r.Rotating != 24 || r.RotatingUnshaped != 24 {
		t.Errorf("Combined lines: %d throttled (want 8), %d rotating, %d without headers (want 24, 24)", throttled, r.Rotating, r.RotatingUnshaped)
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rotation     24 requests of unverified names", "24 requests of unverified crawler names on addresses that present many names come from lines that record no headers"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the report does not say %q:\n%s", want, table.String())
		}
	}
}

// BenchmarkLoggedShape is what the audit pays for the shape of a line of
// an unproven name on a rotating address (wget's headers, as Caddy logs
// them): the only lines that decode their headers.
func BenchmarkLoggedShape(b *testing.B) {
	h := http.Header{"User-Agent": {"Rnd01/1.0"}, "Accept": {"*/*"}, "Accept-Encoding": {"identity"},
		"Connection": {"Keep-Alive"}, "Referer": {"http://example.com/"}}
	a := &Auditor{}
	if !a.scanner.Parse(shapeLine(b, "192.0.2.1", "192.0.2.1", "HTTP/1.1", h, nil), &a.entry) {
		b.Fatal("the line does not parse")
	}
	b.ReportAllocs()
	for b.Loop() {
		a.loggedShape()
	}
}
