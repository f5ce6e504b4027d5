package caddyrobots

// The tests of caddy robots check run the command as Caddy registers it:
// the check judges with the handler's options, read from flags or a
// config by the root (command.go), so they live in the root package.

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/cli"
	"github.com/miekg/dns"
)

const siteRobots = "testdata/cli/site.robots.txt"

func TestCheckGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"check-gptbot", []string{"--agent", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot", "--ip", "4.227.36.5", "/", "/robots.txt", "https://example.com/blog/?page=2"}, cli.ExitRefused},
		{"check-googlebot", []string{"--agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "/private/public/a", "/search?q=1", "/blog/"}, cli.ExitRefused},
		{"check-unknown-bot", []string{"--agent", "ExampleCrawler/1.0 (+https://example.com/bot)", "--ip", "10.1.2.3", "/private/public/x", "/blog/"}, cli.ExitOK},
		{"check-browser", []string{"--agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "/private/x"}, cli.ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, _, err := runCLI(t, append([]string{"check", "--robots", siteRobots}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (err %v)", code, tc.code, err)
			}
			if tc.code == cli.ExitOK && err != nil {
				t.Errorf("unexpected error %v", err)
			}
			golden(t, tc.name, out)
		})
	}
}

func TestCheckUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--agent", "GPTBot", "/"},
		{"check", "--robots", siteRobots, "/"},
		{"check", "--robots", siteRobots, "--agent", "GPTBot", "--ip", "not-an-ip", "/"},
		{"check", "--robots", siteRobots, "--agent", "GPTBot", "relative/path"},
		{"check", "--robots", "testdata/cli/none.txt", "--agent", "GPTBot", "/"},
		{"check", "--robots", siteRobots, "--agent", "GPTBot"}, // no URL
	} {
		code, _, _, err := runCLI(t, args...)
		if code != cli.ExitFailure || err == nil {
			t.Errorf("%v: code %d err %v, want 1 and an error", args, code, err)
		}
	}
}

// TestCheckSpoofedGolden answers every DNS query with NXDOMAIN from a
// loopback server: Googlebot from an address outside Google's lists is then
// a spoof, refused even where the "*" group allows the path.
func TestCheckSpoofedGolden(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	defer srv.Shutdown()
	code, out, _, err := runCLI(t, "check", "--robots", siteRobots,
		"--agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"--ip", "203.0.113.50", "--resolver", pc.LocalAddr().String(), "/blog/")
	if code != cli.ExitRefused || err == nil {
		t.Errorf("code %d err %v, want 3", code, err)
	}
	golden(t, "check-spoofed", out)
}

// TestCheckDNSTimeoutIsUnverified points verification at a DNS server
// that never answers: Googlebot from an address outside its lists must be
// reported unverified (not spoofed) within the timeout, and judged by its
// own group.
func TestCheckDNSTimeoutIsUnverified(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close() // never read: every query times out
	start := time.Now()
	code, out, _, err := runCLI(t, "check", "--robots", siteRobots,
		"--agent", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"--ip", "203.0.113.50", "--resolver", pc.LocalAddr().String(), "--dns-timeout", "300ms", "/blog/")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s with a 300ms DNS timeout", took)
	}
	if code != cli.ExitOK || err != nil {
		t.Errorf("code %d err %v", code, err)
	}
	if !strings.Contains(out, "unverified: reverse DNS did not answer within 300ms") || !strings.Contains(out, "chosen by token Googlebot") {
		t.Errorf("want an honest unverified verdict:\n%s", out)
	}
}

// TestCheckConfigTrapRules: with --config, a file or inline source with a
// trap is judged as the handler serves and enforces it: with the trap's
// Disallow line in every group, so the trap is refused and the rules'
// lines are those a refusal names.
func TestCheckConfigTrapRules(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(cfg, []byte(`example.com {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		trap /no-robots/
	}
	respond "ok"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _, err := runCLI(t, "check", "--config", cfg, "--site", "example.com", "--agent", "ExampleBot/1.0", "https://example.com/no-robots/a")
	if code != cli.ExitRefused || !strings.Contains(out, "Disallow: /no-robots/") {
		t.Errorf("the trap: code %d err %v\n%s", code, err, out)
	}
	h := &Handler{Source: "inline", Inline: "User-agent: *\nDisallow: /private/\n", Trap: "/no-robots/"}
	served := enforce.Parse([]byte(withTrapRules(h.Inline, h.Trap)))
	want := served.Decide([]string{"ExampleBot"}, "/private/x").Rule.String()
	code, out, _, err = runCLI(t, "check", "--config", cfg, "--site", "example.com", "--agent", "ExampleBot/1.0", "https://example.com/private/x")
	if code != cli.ExitRefused || !strings.Contains(out, want) {
		t.Errorf("/private/x: code %d err %v, want the rule %q as served\n%s", code, err, want, out)
	}
}
