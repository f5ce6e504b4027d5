package integration

// Undeclared crawlers, two ways: requests from people's browsers, from
// scripts that wear their User-Agents and from clients that take the trap
// go through a real Caddy, which writes its JSON access log; `caddy robots
// audit` replays that log with the site's Caddyfile, and must reach the
// server's decision on every request, undeclared crawlers included, and
// name them as the server does.
//
// The site is served over plain HTTP to any Host: 127.0.0.1 is a loopback
// host, a secure context where browsers send their headers (so the header
// rule applies, agents.IsSecureHost), as is a request whose trusted proxy
// (127.0.0.1, trusted_proxies) says X-Forwarded-Proto: https; audit.example
// and audit.localhost are not (names under .localhost are left out: not
// every browser treats them as secure). The trap works on any Host.

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// auditUndeclaredRobots: "*" may not read /private/ and waits 5 s between
// requests (crawl_burst 4: the fifth back to back waits); GPTBot nothing.
const auditUndeclaredRobots = `User-agent: *
Disallow: /private/
Crawl-delay: 5

User-agent: GPTBot
Disallow: /
`

// auditDecision is what the comparison reads of a line of the audit's
// --format decisions.
type auditDecision struct {
	URI        string `json:"uri"`
	Crawler    string `json:"crawler"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason"`
	Line       int    `json:"line"`
	Mode       string `json:"mode"`
	Undeclared string `json:"undeclared"`
	Trap       string `json:"trap"`
}

func TestAuditUndeclaredAgreesWithTheServer(t *testing.T) {
	dir := t.TempDir()
	logFile := filepath.Join(dir, "access.log")
	caddyfile := auditedSite(`http://:`+strconv.Itoa(httpPort), logFile, `	header >X-Robots-Agent {http.robots.agent}
	robots {
		source inline `+strconv.Quote(auditUndeclaredRobots)+`
		trap /no-robots/
		strikes 3 10m 1h
	}
	respond "ok {path}"
`)
	cfgPath := loadSaved(t, dir, caddyfile)

	loop := hostPort("127.0.0.1", httpPort)      // a loopback host: a secure context
	plain := hostPort("audit.example", httpPort) // not one
	steps := auditUndeclaredSteps(loop, plain)
	server := askTheServer(t, steps)

	bin := caddyBinary(t)
	var audit []auditDecision
	eventually(t, 10*time.Second, "the access log to hold every request", func() bool {
		audit = runJSONLines[auditDecision](t, bin, nil, "robots", "audit", "--config", cfgPath, "--site", loop, "--format", "decisions", logFile)
		return len(audit) >= len(steps)
	})
	if len(audit) != len(steps) {
		t.Fatalf("%d requests, %d audit decisions", len(steps), len(audit))
	}
	signals, disagree := compareWithTheServer(t, steps, server, audit)
	marked, probation := -1, -1
	for i, a := range audit {
		if a.Trap == "marked" && marked < 0 {
			marked = i
		}
		if a.Trap == "probation" && probation < 0 {
			probation = i
		}
	}
	if marked < 0 || probation < 0 || steps[marked].what != "a client takes the trap" || audit[marked].Line != 2 || probation <= marked {
		t.Errorf("trap requests: marked at step %d, probation at step %d: %+v", marked, probation, audit)
	}
	t.Logf("[report] audit of undeclared crawlers: %d requests through a real Caddy, replayed from its JSON access log; undeclared per signal %v; %d disagreements", len(steps), signals, disagree)
}

// auditStep is a request of TestAuditUndeclaredAgreesWithTheServer and what
// the server and the audit must make of it.
type auditStep struct {
	what     string
	ua, ip   string
	host     string
	target   string
	headers  map[string]string
	pause    time.Duration // before the request
	signal   string        // the signal the audit must name, "" for none
	mode     string        // the audit's mode for it
	decision string        // the server's decision ("": not asserted, only compared)
}

// auditUndeclaredSteps are the requests of
// TestAuditUndeclaredAgreesWithTheServer, in the order they are sent (the
// state of each depends on those before): loop is a loopback host (a
// secure context), plain one that is not.
func auditUndeclaredSteps(loop, plain string) []auditStep {
	nav := map[string]string{}
	for _, h := range browserNav {
		k, v, _ := strings.Cut(h, ":")
		nav[k] = strings.TrimSpace(v)
	}
	fetchOnly := map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
	firefoxNav := map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-User": "?1"}
	const (
		safariUA = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"
		lynxUA   = "Lynx/2.9.0dev.12 libwww-FM/2.14 SSL-MM/1.4.1 GNUTLS/3.7.9"
		botUA    = "ExampleCrawler/1.0 (+https://example.com/bot)"
	)
	return []auditStep{
		{"a person in Chrome, to a loopback host", chromeUA, "203.0.113.201", loop, "/private/a", nav, 0, "", "enforce", "allow"},
		{"a script as Chrome, to a loopback host", chromeUA, "203.0.113.202", loop, "/private/a", nil, 0, "fetch_metadata", "enforce", "block"},
		{"its allowed pages", chromeUA, "203.0.113.202", loop, "/", nil, 0, "fetch_metadata", "enforce", "allow"},
		{"", chromeUA, "203.0.113.202", loop, "/a", nil, 0, "fetch_metadata", "enforce", "allow"},
		{"", chromeUA, "203.0.113.202", loop, "/b", nil, 0, "fetch_metadata", "enforce", "allow"},
		{"", chromeUA, "203.0.113.202", loop, "/c", nil, 0, "fetch_metadata", "enforce", "allow"},
		{"the fifth back to back", chromeUA, "203.0.113.202", loop, "/d", nil, 0, "fetch_metadata", "enforce", "throttle"},
		{"its second strike", chromeUA, "203.0.113.202", loop, "/private/b", nil, 0, "fetch_metadata", "enforce", "block"},
		{"its third, which bans", chromeUA, "203.0.113.202", loop, "/private/c", nil, 0, "fetch_metadata", "enforce", "block"},
		{"banned", chromeUA, "203.0.113.202", loop, "/e", nil, 0, "fetch_metadata", "enforce", "ban"},
		// A person may send that (a worker, a download, a User-Agent
		// switcher): never judged by headers.
		{"Fetch Metadata without Sec-CH-UA", chromeUA, "203.0.113.203", loop, "/private/a", fetchOnly, 0, "", "enforce", "allow"},
		// Chromium sends no Fetch Metadata on a WebSocket handshake.
		{"a Chrome WebSocket handshake", chromeUA, "203.0.113.215", loop, "/private/ws", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}, 0, "", "enforce", "allow"},
		{"a Chrome claim over plain HTTP", chromeUA, "203.0.113.204", plain, "/private/a", nil, 0, "", "enforce", "allow"},
		{"to a name under .localhost", chromeUA, "203.0.113.204", hostPort("audit.localhost", httpPort), "/private/a", nil, 0, "", "enforce", "allow"},
		// A trusted proxy's X-Forwarded-Proto: https is a secure context:
		// the client reached the proxy over HTTPS. (The handler missed it
		// once: Caddy clears the trusted_proxies field it read.)
		{"through a trusted proxy's HTTPS", chromeUA, "203.0.113.205", plain, "/private/a", map[string]string{"X-Forwarded-Proto": "https"}, 0, "fetch_metadata", "enforce", "block"},
		{"through a trusted proxy's plain HTTP", chromeUA, "203.0.113.211", plain, "/private/a", map[string]string{"X-Forwarded-Proto": "http"}, 0, "", "enforce", "allow"},
		{"a script as Firefox", firefoxUA, "203.0.113.206", loop, "/private/a", nil, 0, "fetch_metadata", "enforce", "block"},
		{"a person in Firefox", firefoxUA, "203.0.113.207", loop, "/private/a", firefoxNav, 0, "", "enforce", "allow"},
		{"a script as Safari: log", safariUA, "203.0.113.208", loop, "/private/a", nil, 0, "fetch_metadata_safari", "log", "block"},
		{"a client takes the trap", chromeUA, "203.0.113.209", plain, "/no-robots/", nav, 0, "trap", "enforce", "block"},
		{"then judged by \"*\"", chromeUA, "203.0.113.209", plain, "/private/x", nav, 0, "trap", "enforce", "block"},
		{"its allowed page", chromeUA, "203.0.113.209", plain, "/public", nav, 0, "trap", "enforce", "allow"},
		{"another browser on the address", firefoxUA, "203.0.113.209", plain, "/private/x", firefoxNav, 0, "", "enforce", "allow"},
		{"the same browser elsewhere", chromeUA, "203.0.113.210", plain, "/private/x", nav, 0, "", "enforce", "allow"},
		{"a person in Lynx follows the trap", lynxUA, "203.0.113.211", plain, "/no-robots/", nil, 0, "trap", "enforce", "block"},
		{"then reads at a person's pace", lynxUA, "203.0.113.211", plain, "/private/p", nil, 1500 * time.Millisecond, "", "enforce", "allow"},
		{"then at a crawler's", lynxUA, "203.0.113.211", plain, "/private/q", nil, 0, "trap", "enforce", "block"},
		{"a declared crawler on the trap", botUA, "203.0.113.212", plain, "/no-robots/", nil, 0, "", "enforce", "block"},
		// Another web page, or the browser's own prefetch, makes a person
		// ask for the trap: the trap's 403, nothing else.
		{"an image on another site", chromeUA, "203.0.113.214", loop, "/no-robots/img", withHeaders(nav, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image"), 0, "trap", "enforce", "block"},
		{"a prefetch", chromeUA, "203.0.113.214", loop, "/no-robots/", withHeaders(nav, "Sec-Fetch-Site", "same-origin", "Sec-Purpose", "prefetch"), 0, "trap", "enforce", "block"},
		{"the person is not marked", chromeUA, "203.0.113.214", loop, "/private/x", nav, 0, "", "enforce", "allow"},
		// A script with a person's exact User-Agent takes the trap from
		// the person's address: the person's requests, which carry
		// Chrome's own headers, are judged by the rules alone (no throttle,
		// no strike, no ban); the script's by everything.
		{"a script takes the trap", chromeUA, "203.0.113.216", loop, "/no-robots/", nil, 0, "trap", "enforce", "block"},
		{"the person beside it: the rules", chromeUA, "203.0.113.216", loop, "/private/x", nav, 0, "trap", "enforce", "block"},
		{"its pages, back to back: no throttle", chromeUA, "203.0.113.216", loop, "/p1", nav, 0, "trap", "enforce", "allow"},
		{"", chromeUA, "203.0.113.216", loop, "/p2", nav, 0, "trap", "enforce", "allow"},
		{"", chromeUA, "203.0.113.216", loop, "/p3", nav, 0, "trap", "enforce", "allow"},
		{"", chromeUA, "203.0.113.216", loop, "/p4", nav, 0, "trap", "enforce", "allow"},
		{"", chromeUA, "203.0.113.216", loop, "/p5", nav, 0, "trap", "enforce", "allow"},
		{"the script's strikes", chromeUA, "203.0.113.216", loop, "/private/a", nil, 0, "trap", "enforce", "block"},
		{"", chromeUA, "203.0.113.216", loop, "/private/b", nil, 0, "trap", "enforce", "block"},
		{"", chromeUA, "203.0.113.216", loop, "/private/c", nil, 0, "trap", "enforce", "block"},
		{"the script banned", chromeUA, "203.0.113.216", loop, "/q", nil, 0, "trap", "enforce", "ban"},
		{"the person is not", chromeUA, "203.0.113.216", loop, "/q", nav, 0, "trap", "enforce", "allow"},
	}
}

// serverSeen is what the server said of a request: the decision and agent
// it published, its status.
type serverSeen struct {
	decision, agent string
	status          int
}

// askTheServer sends steps in order and returns what the server said of
// each.
func askTheServer(t *testing.T, steps []auditStep) []serverSeen {
	t.Helper()
	server := make([]serverSeen, len(steps))
	for i, s := range steps {
		time.Sleep(s.pause)
		res, _ := rawDo(t, "GET", s.target, s.host, s.headers, s.ua, s.ip)
		get := func(h string) string {
			if v := res.Header.Get(h); !strings.HasPrefix(v, "{") {
				return v
			}
			return ""
		}
		server[i] = serverSeen{get("X-Robots-Decision"), get("X-Robots-Agent"), res.StatusCode}
		if server[i].decision == "" {
			// Not judged, or the trap request itself, which publishes no
			// decision: its 403 says it.
			server[i].decision = "allow"
			if res.StatusCode == 403 {
				server[i].decision = "block"
			}
		}
	}
	return server
}

// compareWithTheServer checks the server's decisions against the steps'
// expectations and the audit's against the server's, and returns the
// undeclared crawlers per signal and the number of disagreements.
func compareWithTheServer(t *testing.T, steps []auditStep, server []serverSeen, audit []auditDecision) (map[string]int, int) {
	t.Helper()
	signals := map[string]int{}
	disagree := 0
	for i, s := range steps {
		a, sv := audit[i], server[i]
		// The server refuses what it does not allow unless the signal that
		// caught the client is in log mode.
		refusedWant := sv.decision != "allow" && s.mode == "enforce"
		if s.decision != "" && sv.decision != s.decision || (sv.status >= 400) != refusedWant {
			t.Errorf("step %d (%s): the server decided %s (%d), the test expects %s", i, s.what, sv.decision, sv.status, s.decision)
		}
		if a.Decision != sv.decision || a.Undeclared != s.signal || a.Mode != s.mode {
			disagree++
			t.Errorf("step %d (%s) %s %s as %q from %s: server %s %d, audit %s/%s undeclared %q mode %s",
				i, s.what, s.host, s.target, s.ua, s.ip, sv.decision, sv.status, a.Decision, a.Reason, a.Undeclared, a.Mode)
		}
		// The name: what the server published, or for the trap request
		// (which publishes none) the claimed browser's.
		if a.Trap == "" && a.Crawler != sv.agent {
			disagree++
			t.Errorf("step %d (%s): server names %q, audit %q", i, s.what, sv.agent, a.Crawler)
		}
		if a.Undeclared != "" {
			signals[a.Undeclared]++
			if !strings.HasSuffix(a.Crawler, " (undeclared)") {
				t.Errorf("step %d (%s): undeclared crawler named %q", i, s.what, a.Crawler)
			}
		}
	}
	return signals, disagree
}

// withHeaders returns a copy of h with the given key, value pairs set.
func withHeaders(h map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(h)+len(kv)/2)
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
