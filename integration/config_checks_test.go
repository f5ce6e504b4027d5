package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestConfigsThatCannotSilentlyFail: mistakes a config makes about where
// the handler sits are warned about when it loads, naming the site; those
// the directive's own tokens show fail the adapt with the file and line.
func TestConfigsThatCannotSilentlyFail(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	cfg := globalsWith("\tlog {\n\t\toutput file "+logFile+"\n\t\tlevel WARN\n\t}\n") +
		siteURL("twice.localhost") + ` {
	robots
	robots {
		source inline "User-agent: *\nDisallow: /x\n"
	}
	respond "a"
}
` + siteURL("after.localhost") + ` {
	route {
		respond "b"
		robots
	}
}
` + siteURL("errors.localhost") + ` {
	robots {
		use_error_routes
	}
	respond "c"
}
` + siteURL("stripped.localhost") + ` {
	handle_path /docs/* {
		robots {
			source inline "User-agent: *\nDisallow: /search\n"
		}
		respond "docs"
	}
}
` + siteURL("fine.localhost") + ` {
	route /a/* {
		robots
	}
	robots {
		source inline "User-agent: *\nDisallow: /y\n"
	}
	respond "d"
}
`
	newClient(t, cfg)
	var log string
	eventually(t, 10*time.Second, "the load-time warnings", func() bool {
		b, _ := os.ReadFile(logFile)
		log = string(b)
		return strings.Count(log, "robots: ") >= 4
	})
	for _, want := range []string{
		"site twice.localhost on :" + strconv.Itoa(httpPort) + " has two robots handlers that run for the same requests",
		"in site after.localhost on :" + strconv.Itoa(httpPort) + ", the robots handler comes after respond in the same route, which answers every request: it never runs",
		"use_error_routes in site errors.localhost on :" + strconv.Itoa(httpPort) + ", but its server has no handle_errors",
		"this handler sits where /docs is stripped from the path (handle_path or uri strip_prefix), but none of its rules starts with /docs",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("no warning %q in the log:\n%s", want, log)
		}
	}
	if strings.Contains(log, "fine.localhost") {
		t.Errorf("a robots handler under a path matcher beside one for the whole site was warned about:\n%s", log)
	}

	// The directive's own mistakes fail the adapt with the line.
	for _, tc := range []struct{ body, want string }{
		{"robots {\n\t\trobots_txt pass\n\t}", "robots_txt applies to source file and inline"},
		{"robots {\n\t\tsource inline \"User-agent: *\\nDisallow: {env.SECRET}\\n\"\n\t}", "{env.SECRET} is not replaced in inline text"},
	} {
		caddytest.AssertLoadError(t, globals+siteURL("bad.localhost")+" {\n\t"+tc.body+"\n}\n", "caddyfile", tc.want)
		caddytest.AssertLoadError(t, globals+siteURL("bad.localhost")+" {\n\t"+tc.body+"\n}\n", "caddyfile", "Caddyfile:")
	}
}
