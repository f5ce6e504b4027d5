package integration

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestDifferentialRotationTLS: over HTTPS with robots_fingerprint, a
// client's shape on an address that rotates names is its TLS handshake's
// JA4, whatever headers it sends. Go's net/http rotates names with two
// header sets (one shape: one handshake) and curl with Go's first header
// set (another shape: OpenSSL's handshake). The audit, replaying the JSON
// access log with the documented log_append lines, must reach the
// server's decision on every request: pooling by headers instead would
// split Go's names in two pools and put curl's in one of them.
func TestDifferentialRotationTLS(t *testing.T) {
	ca := newTestCA(t, "localhost", "127.0.0.1")
	curl := need(t, "curl")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "access.log")
	// The site block has a name of its own (a second host besides
	// localhost): rotation state is the site block's and outlives a
	// config, and the other tests' bots on https://localhost from this
	// address must not have made it rotate already.
	addrs := fmt.Sprintf("https://localhost:%[1]d, https://rotation-tls.localhost:%[1]d", httpsPort)
	caddyfile := fingerprintedSite(ca, addrs, logFile, `	robots {
		source inline "User-agent: *\nDisallow: /private/\nCrawl-delay: 600\n"
		crawl_burst 1
		strikes off
	}
`)
	cfgPath := loadSaved(t, dir, caddyfile)
	headersA := [][2]string{{"Accept", "*/*"}, {"Accept-Language", "en"}}
	headersB := [][2]string{{"Accept", "text/html"}, {"X-Crawl-Run", "3"}}
	type step struct {
		client  string
		headers [][2]string
	}
	// Four residents, then each client's new names in turn: Go with A,
	// curl with A, Go with B.
	var steps []step
	for range 4 {
		steps = append(steps, step{"go", headersA})
	}
	for range 7 {
		steps = append(steps, step{"go", headersA}, step{"curl", headersA}, step{"go", headersB})
	}
	base := "https://" + hostPort("localhost", httpsPort)
	server := make([]serverSeen, len(steps))
	seen := map[string]int{}
	for i, s := range steps {
		url := fmt.Sprintf("%s/p%d.html", base, i)
		ua := fmt.Sprintf("Rnd%06x/1.0", 0xb00000+i)
		if s.client == "curl" {
			server[i] = curlSeen(t, curl, ca, url, ua, s.headers)
		} else {
			server[i] = goSeen(t, ca, url, ua, s.headers)
		}
		seen[s.client+" "+server[i].decision]++
	}
	bin := caddyBinary(t)
	var audit []auditTLSDecision
	eventually(t, 10*time.Second, "the access log to hold every request", func() bool {
		audit = runJSONLines[auditTLSDecision](t, bin, []int{3}, "robots", "audit", "--config", cfgPath, "--site", hostPort("localhost", httpsPort), "--format", "decisions", logFile)
		return len(audit) >= len(steps)
	})
	if len(audit) != len(steps) {
		t.Fatalf("%d requests, %d audit decisions", len(steps), len(audit))
	}
	disagree := 0
	for i, s := range steps {
		if audit[i].TLSFingerprint == "" {
			t.Fatalf("request %d (%s) logged no tls_fingerprint", i, s.client)
		}
		if server[i].decision != audit[i].Decision {
			disagree++
			t.Errorf("request %d %s %v (%s): server %s, audit %s/%s", i, s.client, s.headers, audit[i].TLSFingerprint, server[i].decision, audit[i].Decision, audit[i].Reason)
		}
	}
	t.Logf("[report] differential rotation over TLS: %d requests from one address (Go net/http with two header sets, curl), pooled by handshake; server decisions %v; %d disagreements", len(steps), seen, disagree)
	// Go's 14 unproven requests share one pool (4 served at once), curl's
	// 7 another.
	if seen["go allow"] != 4+4 || seen["curl allow"] != 4 || seen["go throttle"] == 0 || seen["curl throttle"] == 0 {
		t.Errorf("server decisions %v: want Go's residents and 4 of its unproven names served, 4 of curl's, the rest throttled", seen)
	}
}
