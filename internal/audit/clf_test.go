package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// Lines as nginx (log_format combined, the default) and Apache (LogFormat
// "%h %l %u %t \"%r\" %>s %b" common, and combined) write them.
const (
	nginxCombined = `66.249.66.1 - - [11/May/2026:13:46:40 +0200] "GET /search?q=caddy HTTP/1.1" 200 5120 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"`
	// nginx escapes '"' in a field as \x22 and bytes outside ASCII as \xHH.
	nginxEscaped = `192.0.2.10 - - [11/May/2026:11:46:45 +0000] "GET /private/\xC3\xA9t\xC3\xA9 HTTP/2.0" 404 153 "https://example.com/" "Odd\x22Bot/1.0 (+https://odd.example/bot)"`
	nginxNoUA    = `203.0.113.77 - - [11/May/2026:11:46:46 +0000] "GET /private/ HTTP/1.1" 200 12 "-" "-"`
	// A TLS handshake sent to the plain-HTTP port: nginx logs its bytes.
	nginxTLS        = `198.51.100.3 - - [11/May/2026:11:46:47 +0000] "\x16\x03\x01\x02\x00\x01\x00\x01\xFC\x03\x03" 400 157 "-" "-"`
	apacheCommon    = `203.0.113.9 - frank [10/Oct/2025:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`
	apacheCombined  = `2001:db8::7 - - [10/Oct/2025:13:55:37 -0700] "GET /a\"b HTTP/1.1" 304 - "http://www.example.com/start.html" "ExampleCrawler/1.0 (+https://example.com/bot)"`
	apacheCombinedO = `192.0.2.1 - - [10/Oct/2025:13:55:38 -0700] "HEAD / HTTP/1.1" 200 - "-" "curl/8.5.0" 512 0`
	apacheTimeout   = `192.0.2.1 - - [10/Oct/2025:13:55:39 -0700] "-" 408 -`
)

func TestCLFParser(t *testing.T) {
	var p CLFParser
	var e Entry
	for _, c := range []struct {
		line                      string
		format                    Format
		method, uri, ua, ip, time string
		status                    int
		hasURI, hasUA             bool
	}{
		{nginxCombined, FormatCombined, "GET", "/search?q=caddy", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "66.249.66.1", "2026-05-11T11:46:40Z", 200, true, true},
		{nginxEscaped, FormatCombined, "GET", "/private/été", `Odd"Bot/1.0 (+https://odd.example/bot)`, "192.0.2.10", "2026-05-11T11:46:45Z", 404, true, true},
		{nginxNoUA, FormatCombined, "GET", "/private/", "", "203.0.113.77", "2026-05-11T11:46:46Z", 200, true, true},
		{nginxTLS, FormatCombined, "", "", "", "198.51.100.3", "2026-05-11T11:46:47Z", 400, false, true},
		{apacheCommon, FormatCommon, "GET", "/apache_pb.gif", "", "203.0.113.9", "2025-10-10T20:55:36Z", 200, true, false},
		{apacheCombined, FormatCombined, "GET", `/a"b`, "ExampleCrawler/1.0 (+https://example.com/bot)", "2001:db8::7", "2025-10-10T20:55:37Z", 304, true, true},
		{apacheCombinedO, FormatCombined, "HEAD", "/", "curl/8.5.0", "192.0.2.1", "2025-10-10T20:55:38Z", 200, true, true},
		{apacheTimeout, FormatCommon, "", "", "", "192.0.2.1", "2025-10-10T20:55:39Z", 408, false, false},
	} {
		if !p.Parse([]byte(c.line), &e) {
			t.Errorf("not read: %s", c.line)
			continue
		}
		got := []string{e.Format.String(), string(e.Method), string(e.URI), string(e.UserAgent), string(e.RemoteIP), e.Time.Format(time.RFC3339)}
		want := []string{c.format.String(), c.method, c.uri, c.ua, c.ip, c.time}
		if strings.Join(got, "|") != strings.Join(want, "|") || e.Status != c.status || e.HasURI != c.hasURI || e.HasUA != c.hasUA || e.HasHost {
			t.Errorf("%s\n got %q status %d uri %v ua %v\nwant %q status %d uri %v ua %v", c.line, got, e.Status, e.HasURI, e.HasUA, want, c.status, c.hasURI, c.hasUA)
		}
	}
	for _, bad := range []string{
		"",
		"not a log line",
		`2026/05/11 11:46:40 [error] 1234#1234: *1 open() "/srv/www/favicon.ico" failed (2: No such file or directory)`,
		`203.0.113.9 - - [11/May/2026:11:46:40] "GET / HTTP/1.1" 200 5`,         // no zone
		`203.0.113.9 - - [11/Foo/2026:11:46:40 +0000] "GET / HTTP/1.1" 200 5`,   // no such month
		`203.0.113.9 - - [11/May/2026:11:46:40 +0000] "GET / HTTP/1.1 200 5`,    // unterminated
		`203.0.113.9 - - [11/May/2026:11:46:40 +0000] "GET / HTTP/1.1" OK 5`,    // no status
		`203.0.113.9 - - [11/May/2026:11:46:40 +0000] "GET / HTTP/1.1" 200 5 -`, // no quoted referer
	} {
		if p.Parse([]byte(bad), &e) {
			t.Errorf("read %q as %s", bad, e.Format)
		}
	}
}

// TestAuditorReadsCLF judges Combined lines as the handler does, counts
// Common lines as without a User-Agent, and reads a mixed file line by line.
func TestAuditorReadsCLF(t *testing.T) {
	robots := enforce.Parse([]byte("User-agent: *\nDisallow: /private/\n\nUser-agent: Googlebot\nDisallow: /search\n"))
	a, err := New(Config{Robots: robots, Site: "Example.com"})
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join([]string{nginxCombined, nginxEscaped, nginxNoUA, nginxTLS, apacheCommon, apacheCombined, apacheTimeout,
		string(logLine(1778500000, "curl/8.5.0", "/private/x", "192.0.2.99")), ""}, "\n")
	if err := a.Feed("mixed.log", strings.NewReader(log), nil); err != nil {
		t.Fatal(err)
	}
	r := a.Report()
	if r.Formats["combined"] != 5 || r.Formats["common"] != 2 || r.Formats["caddy-json"] != 1 {
		t.Errorf("formats %v", r.Formats)
	}
	if r.Lines != 6 || r.NotAccess != 2 || r.NoUserAgent != 1 || r.Unreadable != 0 || r.Crawlers != 5 {
		t.Errorf("lines %d, not access %d, no UA %d, unreadable %d, crawlers %d", r.Lines, r.NotAccess, r.NoUserAgent, r.Unreadable, r.Crawlers)
	}
	// Googlebot from its published range: verified, refused by its own
	// group; the empty User-Agent is judged like the handler judges it, as
	// a bot with no token.
	if g := crawlerReport(t, r, "Googlebot"); g.RefusedRule != 1 || g.Spoofed != 0 || g.Host != "example.com" {
		t.Errorf("Googlebot %+v", g)
	}
	if n := crawlerReport(t, r, NoUserAgentName); n.RefusedRule != 1 {
		t.Errorf("no User-Agent: %+v", n)
	}
	if o := crawlerReport(t, r, "Odd"); o.RefusedRule != 1 {
		t.Errorf("Odd: %+v", o)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "1 lines are in the Common Log Format, which records no User-Agent") {
		t.Errorf("notes %q", r.Notes)
	}
}

func BenchmarkCLFTime(b *testing.B) {
	raw := []byte("11/May/2026:13:46:40 +0200")
	for range b.N {
		if _, ok := parseCLFTime(raw); !ok {
			b.Fatal("not parsed")
		}
	}
}
