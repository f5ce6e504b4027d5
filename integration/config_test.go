package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestConfigLoadErrors: configurations that cannot work are refused when
// Caddy loads them, with a message naming the option.
func TestConfigLoadErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent", "robots.txt")
	cases := []struct{ name, block, want string }{
		{"missing file", "source file " + missing,
			"robots: source file: cannot read " + missing},
		{"redis URL empty", "store redis {env.CADDY_ROBOTS_IT_UNSET}",
			"robots: store redis: the URL is empty after replacing placeholders ({env.CADDY_ROBOTS_IT_UNSET})"},
		{"file placeholder empty", "source file {env.CADDY_ROBOTS_IT_UNSET}",
			"robots: source file: the value is empty after replacing placeholders ({env.CADDY_ROBOTS_IT_UNSET})"},
		{"resolver without an address", "verify {\n\t\t\tresolver notanaddress\n\t\t}",
			"is not an IP address with an optional port (e.g. 127.0.0.1:53 or [::1]:53), at Caddyfile:"},
		{"refresh too short", "refresh 500ms", "robots: refresh: 500ms is outside 1s..24h, at Caddyfile:"},
		{"fetch_timeout 0", "fetch_timeout 0", "robots: fetch_timeout 0 is not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caddytest.AssertLoadError(t, globals+siteURL("config.localhost")+` {
	robots {
		`+c.block+`
	}
	respond "ok"
}
`, "caddyfile", c.want)
		})
	}
}

// TestConfigPlaceholders: the robots.txt file and the resolver may come
// from the environment, as in Caddy's own modules.
func TestConfigPlaceholders(t *testing.T) {
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /from-env/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CADDY_ROBOTS_IT_FILE", file)
	c := newClient(t, globals+siteURL("envfile.localhost")+` {
	robots {
		source file {env.CADDY_ROBOTS_IT_FILE}
		crawl_delay off
		verify {
			resolver 127.0.0.1
		}
	}
	respond "ok"
}
`)
	c.expect(siteURL("envfile.localhost")+"/from-env/x", exampleUA, 403, "Disallow: /from-env/")
	c.expect(siteURL("envfile.localhost")+"/other", exampleUA, 200, "ok")
}

// TestConfigAccessLogLevel: Caddy writes the access-log line of any 5xx at
// ERROR, even one a handler wrote itself; the handler's own 503 (a
// throttle) is logged at INFO instead, while a 503 of the site stays ERROR.
func TestConfigAccessLogLevel(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "access.log")
	c := newClient(t, globals+siteURL("accesslog.localhost")+` {
	log {
		output file `+logFile+`
		format json
	}
	robots {
		source inline "User-agent: *\nCrawl-delay: 30\n"
		crawl_burst 1
	}
	respond /down "down" 503
	respond "ok"
}
`)
	c.expect(siteURL("accesslog.localhost")+"/a", exampleUA, 200, "ok")
	c.expect(siteURL("accesslog.localhost")+"/b", exampleUA, 503)
	c.expect(siteURL("accesslog.localhost")+"/down", chromeUA, 503, "down")
	levels := map[string]string{}
	eventually(t, 5*time.Second, "the access log lines", func() bool {
		raw, _ := os.ReadFile(logFile)
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var e struct {
				Level   string `json:"level"`
				Request struct {
					URI string `json:"uri"`
				} `json:"request"`
			}
			if json.Unmarshal([]byte(line), &e) == nil {
				levels[e.Request.URI] = e.Level
			}
		}
		return len(levels) >= 3
	})
	if levels["/b"] != "info" {
		t.Errorf("access log level of the throttled 503: %q, want info (all: %v)", levels["/b"], levels)
	}
	if levels["/down"] != "error" {
		t.Errorf("access log level of the site's own 503: %q, want error (all: %v)", levels["/down"], levels)
	}
}
