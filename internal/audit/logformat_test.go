package audit

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
)

// A line of Apache's vhost_combined, as Debian's other_vhosts_access.log
// holds it: LogFormat "%v:%p %h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"".
const vhostLine = `shop.example.com:443 192.0.2.10 - - [11/May/2026:11:46:45 +0000] "GET /private/x HTTP/1.1" 200 153 "-" "ExampleCrawler/1.0 (+https://example.com/bot)"`

const robotsPrivate = "User-agent: *\nDisallow: /private/\n"

func feedText(t *testing.T, cfg Config, lines ...string) (*Auditor, error) {
	t.Helper()
	cfg.Robots = enforce.Parse([]byte(robotsPrivate))
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, a.Feed("access.log", strings.NewReader(strings.Join(lines, "\n")+"\n"), nil)
}

// TestAuditRefusesAHostForAnAddress: in the default format, a line whose
// first field is not an address (a vhost_combined line) stops the audit
// with an error naming the line, the field and the fix, rather than
// auditing the virtual host as the client.
func TestAuditRefusesAHostForAnAddress(t *testing.T) {
	_, err := feedText(t, Config{}, nginxCombined, vhostLine)
	if err == nil {
		t.Fatal("a vhost_combined line was audited in the combined format")
	}
	for _, w := range []string{"access.log:2:", `the first field is not the client's address: "shop.example.com:443"`, "--log-format vhost_combined", "nginx"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	if !errors.Is(err, ErrNotAddress) {
		t.Errorf("error %v is not ErrNotAddress", err)
	}
	// A host name where the address should be (HostnameLookups On).
	if _, err := feedText(t, Config{}, strings.Replace(nginxCombined, "66.249.66.1", "crawl-66-249-66-1.googlebot.com", 1)); err == nil ||
		!strings.Contains(err.Error(), `the first field is not the client's address: "crawl-66-249-66-1.googlebot.com"`) {
		t.Errorf("a host name as the client: %v", err)
	}
}

// TestAuditReadsVhostCombined: with --log-format vhost_combined the client
// is the second field and the virtual host the line's Host, so --host
// selects its lines.
func TestAuditReadsVhostCombined(t *testing.T) {
	lf, err := ParseLogFormat("vhost_combined")
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(vhostLine, "shop.example.com:443", "[2001:db8::1]:80", 1)
	a, err := feedText(t, Config{LogFormat: lf, Hosts: []string{"shop.example.com"}}, vhostLine, other)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Report()
	if r.Formats["vhost-combined"] != 2 || r.Lines != 1 || r.OtherHosts != 1 || r.LogFormat != "vhost_combined" {
		t.Fatalf("formats %v, lines %d, other hosts %d, log format %q", r.Formats, r.Lines, r.OtherHosts, r.LogFormat)
	}
	c := crawlerReport(t, r, "ExampleCrawler")
	if c.Host != "shop.example.com" || c.RefusedRule != 1 || len(c.Claims) != 1 || c.Claims[0].RefusedBy[0].Addr != "192.0.2.10" {
		t.Errorf("ExampleCrawler: host %q, %d by rule, claims %+v", c.Host, c.RefusedRule, c.Claims)
	}
}

// TestNginxLogFormat reads lines by the nginx log_format strings an
// operator passes: the fields the audit knows are read wherever they
// stand, the others skipped.
func TestNginxLogFormat(t *testing.T) {
	for _, c := range []struct {
		name, format, line string
		host               string
		at                 string
	}{
		{"combined with extras",
			`'$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" rt=$request_time host=$host'`,
			`192.0.2.10 - - [11/May/2026:13:46:45 +0200] "GET /private/x HTTP/1.1" 404 153 "-" "ExampleCrawler/1.0 (\x22+https://example.com/bot\x22)" rt=0.004 host=shop.example.com`,
			"shop.example.com", "2026-05-11T11:46:45Z"},
		{"the directive as written, fields reordered",
			`log_format timed '$time_iso8601 $host $remote_addr "$request_method $request_uri" $status '
			                  '"$http_user_agent" "$http_x_forwarded_for"';`,
			`2026-05-11T11:46:45+00:00 - 192.0.2.10 "GET /private/x" 404 "ExampleCrawler/1.0 (\x22+https://example.com/bot\x22)" "198.51.100.1, 10.0.0.1"`,
			"", "2026-05-11T11:46:45Z"},
		{"braces and msec",
			`${remote_addr}|${msec}|"$request"|$status|"$http_user_agent"`,
			`2001:db8::7|1778500005.123|"GET /private/x HTTP/2.0"|403|"ExampleCrawler/1.0 (\x22+https://example.com/bot\x22)"`,
			"", "2026-05-11T11:46:45.123Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lf, err := ParseLogFormat(c.format)
			if err != nil {
				t.Fatal(err)
			}
			var e Entry
			var p nginxParser
			if !p.parse(lf.tokens, []byte(c.line), &e) {
				t.Fatalf("not read by %s: %s", lf, c.line)
			}
			got := []string{string(e.Method), string(e.URI), string(e.UserAgent), string(e.Host), e.Time.Format(time.RFC3339Nano), e.Format.String()}
			want := []string{"GET", "/private/x", `ExampleCrawler/1.0 ("+https://example.com/bot")`, c.host, c.at, "nginx"}
			if strings.Join(got, "|") != strings.Join(want, "|") || !e.HasUA || !e.HasURI || e.HasHost != (c.host != "") {
				t.Errorf("\n got %q host %v\nwant %q", got, e.HasHost, want)
			}
			a, err := feedText(t, Config{LogFormat: lf}, c.line, "not a line of that format")
			if err != nil {
				t.Fatal(err)
			}
			if r := a.Report(); r.Crawlers != 1 || r.Unreadable != 1 || crawlerReport(t, r, "ExampleCrawler").RefusedRule != 1 {
				t.Errorf("crawlers %d, unreadable %d: %+v", r.Crawlers, r.Unreadable, r.Crawler)
			}
		})
	}
	for _, bad := range []string{
		"nginx",
		`'$remote_user [$time_local] "$request"'`,     // no address
		`'$remote_addr [$time_local] $status'`,        // no request
		`'$remote_addr$remote_user "$request"'`,       // two fields run together
		`'$remote_addr "$request"`,                    // unclosed quote
		`'$remote_addr "$request" ${http_user_agent'`, // unclosed brace
	} {
		if lf, err := ParseLogFormat(bad); err == nil {
			t.Errorf("%s: accepted as %s", bad, lf)
		}
	}
}

// TestIsAddr: the IPv4 fast path agrees with netip.ParseAddr.
func TestIsAddr(t *testing.T) {
	for _, s := range []string{"192.0.2.1", "0.0.0.0", "255.255.255.255", "256.1.1.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1..2.3", ".1.2.3",
		"1.2.3.", "2001:db8::1", "::ffff:192.0.2.1", "fe80::1%eth0", "example.com", "example.com:443", "cafe.be:80", "-", "", "1.2.3.4:80"} {
		_, err := netip.ParseAddr(s)
		if got := isAddr([]byte(s)); got != (err == nil) {
			t.Errorf("isAddr(%q) = %v, netip says %v", s, got, err == nil)
		}
	}
}
