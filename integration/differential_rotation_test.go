package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rotationShapes are the clients behind the rotating address of
// TestDifferentialRotation: each sends its own header set or Accept values
// (policy.ClientShape), one of them over HTTP/1.0 with another's headers.
// More than state.RotationShapes of them, so that the last ones share the
// address's overflow pool.
var rotationShapes = []struct {
	name    string
	proto   string
	headers [][2]string
}{
	{"curl-like", "HTTP/1.1", [][2]string{{"Accept", "*/*"}, {"Accept-Encoding", "gzip"}}},
	{"browser-like", "HTTP/1.1", [][2]string{{"Accept", "text/html,application/xhtml+xml"}, {"Accept-Language", "en-US,en;q=0.9"}}},
	{"extra header", "HTTP/1.1", [][2]string{{"Accept", "*/*"}, {"Accept-Encoding", "gzip"}, {"X-Crawl-Run", "7"}}},
	{"wget-like", "HTTP/1.1", [][2]string{{"Accept", "*/*"}, {"Accept-Encoding", "identity"}}},
	{"HTTP/1.0", "HTTP/1.0", [][2]string{{"Accept", "*/*"}, {"Accept-Encoding", "gzip"}}},
	{"no Accept", "HTTP/1.1", [][2]string{{"Accept-Encoding", "br"}}},
}

// rotationRequest is one request of TestDifferentialRotation.
type rotationRequest struct {
	ua, target, proto string
	headers           [][2]string
	unproven          bool // an unverified name beyond the address's residents, without /robots.txt
}

// rotationSend sends one request with exactly the given header lines (and
// Host, User-Agent, X-Forwarded-For, Connection: close) and returns the
// response with its body read.
func rotationSend(t *testing.T, host, xff string, r rotationRequest) (*http.Response, string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s %s\r\nHost: %s\r\nUser-Agent: %s\r\nX-Forwarded-For: %s\r\nConnection: close\r\n", r.target, r.proto, host, r.ua, xff)
	for _, h := range r.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	b.WriteString("\r\n")
	conn, err := net.DialTimeout("tcp", httpAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("GET %s: %v", r.target, err)
	}
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// TestDifferentialRotation: several clients behind one address present
// many crawler names (state.Rotations), each client with its own shape
// (headers, Accept values, HTTP version). An unproven name spends a
// Crawl-delay pool of its client's shape, so the server throttles one
// client's names without throttling another's. The admin check (asked
// before each request, reading the same state) must predict the server's
// answer, and the audit, replaying the server's access log, must reach the
// same decisions: it reads each line's shape from the headers and version
// Caddy logged. With one pool for every shape of the address, the audit
// would throttle the second client's names, which the server served.
func TestDifferentialRotation(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "access.log")
	host := "diffrotation.localhost"
	caddyfile := auditedSite(siteURL(host), logFile, `	robots {
		source inline "User-agent: *\nDisallow: /private/\nCrawl-delay: 600\n"
		crawl_burst 1
		strikes off
	}
	respond "ok {path}"
`)
	cfgPath := loadSaved(t, dir, caddyfile)
	const ip = "198.51.100.90"

	reqs := rotationSequence()

	server := make([]diffVerdict, len(reqs))
	predicted := make([]diffVerdict, len(reqs))
	for i, r := range reqs {
		if r.proto == "HTTP/1.1" {
			// The admin check builds an HTTP/1.1 request: it predicts
			// only those.
			h := map[string]string{"Connection": "close"}
			for _, kv := range r.headers {
				h[kv[0]] = kv[1]
			}
			var cv checkVerdict
			adminJSON(t, http.MethodPost, "/robots/check", diffRequest{UserAgent: r.ua, IP: ip, URL: siteURL(host) + r.target, Method: http.MethodGet, Headers: h}, http.StatusOK, &cv)
			predicted[i] = cv.verdict()
		}
		res, body := rotationSend(t, at(host), ip, r)
		server[i] = serverVerdict(res, body)
		if r.proto != "HTTP/1.1" {
			predicted[i] = server[i]
		}
	}

	bin := caddyBinary(t)
	var audit []checkVerdict
	eventually(t, 10*time.Second, "the access log to hold every request", func() bool {
		audit = runDecisions(t, bin, "robots", "audit", "--config", cfgPath, "--site", host, "--format", "decisions", logFile)
		return len(audit) >= len(reqs)
	})
	if len(audit) != len(reqs) {
		t.Fatalf("%d requests, %d audit decisions", len(reqs), len(audit))
	}
	reports := runJSONLines[struct {
		Rotating int64 `json:"rotating_requests"`
	}](t, bin, []int{3}, "robots", "audit", "--config", cfgPath, "--site", host, "--format", "json", logFile)

	counted := int64(-1)
	if len(reports) == 1 {
		counted = reports[0].Rotating
	}
	disagree, unproven, unprovenServed := 0, 0, 0
	seen := map[string]int{}
	for i, r := range reqs {
		s, p, a := server[i], predicted[i], audit[i].verdict()
		seen[s.Decision]++
		if r.unproven {
			unproven++
			if s.Decision == "allow" {
				unprovenServed++
			}
		}
		if s != p || s != a {
			disagree++
			t.Errorf("request %d %s %s as %q (%v): server %s, admin check beforehand %s, audit %s", i, r.proto, r.target, r.ua, r.headers, s, p, a)
		}
	}
	t.Logf("[report] differential rotation: %d requests from one address, %d of them by unproven names of %d client shapes; decisions %v; the server served %d of the unproven; the audit's report counted %d rotating requests; %d disagreements",
		len(reqs), unproven, len(rotationShapes), seen, unprovenServed, counted, disagree)
	// One pool for the whole address would serve at most its burst
	// (crawl_burst 1 × state.RotationPoolNames) of the unproven names'
	// requests within a Crawl-delay; a pool per shape serves that per shape.
	if unprovenServed <= 2*4 || seen["throttle"] == 0 || seen["block"] == 0 {
		t.Errorf("the server served %d requests of unproven names, decisions %v: the sequence does not tell pools per shape from one pool", unprovenServed, seen)
	}
	if counted != int64(unproven) {
		t.Errorf("the audit's report counts %d rotating requests, want %d (every unproven name's)", counted, unproven)
	}
}

// rotationSequence is TestDifferentialRotation's requests from one address:
// four residents (the first names of the address keep budgets of their
// own), a compliant crawler that fetches /robots.txt first (a graduate),
// then rounds in which every client shape sends a new name: allowed
// pages, and a /private/ page now and then.
func rotationSequence() []rotationRequest {
	var reqs []rotationRequest
	for i := range 4 {
		s := rotationShapes[i%len(rotationShapes)]
		reqs = append(reqs, rotationRequest{ua: fmt.Sprintf("Resident%d/1.0", i), target: "/home", proto: s.proto, headers: s.headers})
	}
	for i := range 2 {
		s := rotationShapes[0]
		reqs = append(reqs, rotationRequest{ua: fmt.Sprintf("Rnd%06x/1.0", 0xa00000+i), target: "/early", proto: s.proto, headers: s.headers, unproven: true})
	}
	polite := rotationRequest{ua: "PoliteBot/2.0", proto: "HTTP/1.1", headers: rotationShapes[1].headers}
	polite.target = "/robots.txt"
	reqs = append(reqs, polite)
	polite.target = "/polite"
	reqs = append(reqs, polite)
	for round := range 6 {
		for k, s := range rotationShapes {
			target := fmt.Sprintf("/p%d-%d.html", round, k)
			if (round+k)%5 == 0 {
				target = fmt.Sprintf("/private/p%d-%d.html", round, k)
			}
			reqs = append(reqs, rotationRequest{ua: fmt.Sprintf("Rnd%06x/1.0", round<<8|k), target: target, proto: s.proto, headers: s.headers, unproven: true})
		}
	}
	return reqs
}
