package integration

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestConfigsThatCannotSilentlyFail: mistakes a config makes about where
// the handler sits are warned about when it starts, naming the site; those
// the directive's own tokens show fail the adapt with the file and line.
// (Two robots handlers for the same requests fail the load:
// TestPlacementErrorsFailTheLoad.)
func TestConfigsThatCannotSilentlyFail(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	cfg := globalsWith("\tlog {\n\t\toutput file "+logFile+"\n\t\tlevel WARN\n\t}\n") +
		siteURL("after.localhost") + ` {
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
		return strings.Count(log, "robots: ") >= 3
	})
	for _, want := range []string{
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

// TestTrustedProxiesWithoutStrictWarned: a server that trusts proxies
// without trusted_proxies_strict lets a client choose its address (the
// leftmost X-Forwarded-For entry); the handler says so once it has seen
// its server, in the log and in /robots/status. It never did: it read
// the trusted_proxies field that Caddy clears after loading it.
func TestTrustedProxiesWithoutStrictWarned(t *testing.T) {
	c := newClient(t, globalsWith("\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t}\n")+siteURL("proxied.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
	}
	respond "ok"
}
`)
	settle(c, siteURL("proxied.localhost")+"/")
	c.expect(siteURL("proxied.localhost")+"/public", exampleUA, 200)
	var st struct {
		Handlers []struct {
			Warnings []string `json:"config_warnings"`
		} `json:"handlers"`
	}
	eventually(t, 5*time.Second, "the trusted_proxies_strict warning", func() bool {
		adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
		for _, h := range st.Handlers {
			for _, w := range h.Warnings {
				if strings.Contains(w, "site proxied.localhost on :"+strconv.Itoa(httpPort)+" is served by a server that trusts proxies without trusted_proxies_strict") {
					return true
				}
			}
		}
		return false
	})

	// With trusted_proxies_strict: no warning.
	c = newClient(t, trustLocalProxy()+siteURL("strict.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
	}
	respond "ok"
}
`)
	settle(c, siteURL("strict.localhost")+"/")
	c.expect(siteURL("strict.localhost")+"/public", exampleUA, 200)
	time.Sleep(200 * time.Millisecond)
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	for _, h := range st.Handlers {
		for _, w := range h.Warnings {
			if strings.Contains(w, "trusts proxies without") {
				t.Errorf("warned with trusted_proxies_strict: %s", w)
			}
		}
	}
}

// TestPlacementErrorsFailTheLoad: a robots handler inside handle_errors
// and two robots handlers for the same requests of a site fail the config
// when it loads (as `caddy validate` does), naming the site; the running
// config stays.
func TestPlacementErrorsFailTheLoad(t *testing.T) {
	c := newClient(t, globals+siteURL("keep.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /x\n"
	}
	respond "kept"
}
`)
	site := " on :" + strconv.Itoa(httpPort)
	for _, tc := range []struct{ body, want string }{
		{"robots\n\trobots {\n\t\tsource inline \"User-agent: *\\nDisallow: /x\\n\"\n\t}\n\trespond \"a\"",
			"robots: site twice.localhost" + site + " has two robots handlers that run for the same requests"},
		{"respond \"a\"\n\thandle_errors {\n\t\trobots\n\t\trespond \"error {err.status_code}\"\n\t}",
			"robots: site twice.localhost" + site + " has the robots directive inside handle_errors"},
	} {
		caddytest.AssertLoadError(t, globals+siteURL("twice.localhost")+" {\n\t"+tc.body+"\n}\n", "caddyfile", tc.want)
	}
	c.expect(siteURL("keep.localhost")+"/x", exampleUA, 403)
	c.expect(siteURL("keep.localhost")+"/y", exampleUA, 200, "kept")
}

// configWarnings returns every handler's config_warnings from GET
// /robots/status.
func configWarnings(t *testing.T) []string {
	t.Helper()
	var st struct {
		Handlers []struct {
			Warnings []string `json:"config_warnings"`
		} `json:"handlers"`
	}
	adminJSON(t, http.MethodGet, "/robots/status", nil, http.StatusOK, &st)
	var out []string
	for _, h := range st.Handlers {
		out = append(out, h.Warnings...)
	}
	return out
}

// hasWarning reports whether one of ws contains want.
func hasWarning(ws []string, want string) bool {
	for _, w := range ws {
		if strings.Contains(w, want) {
			return true
		}
	}
	return false
}

// TestExemptProxyWarned: exempting the address of a proxy that the server
// does not trust exempts every client behind it. That address is only
// known from the requests it forwards: an exempt client that sends
// X-Forwarded-For without being a trusted proxy is named in a config
// warning with the fix (trusted_proxies). At start, exempt loopback or
// private networks on a server that trusts no proxy are warned about.
// With the proxy trusted, neither warning appears.
func TestExemptProxyWarned(t *testing.T) {
	c := newClient(t, globals+siteURL("exempt.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /x\n"
		exempt 127.0.0.1 ::1
	}
	respond "ok"
}
`)
	settle(c, siteURL("exempt.localhost")+"/")
	eventually(t, 5*time.Second, "the start-time warning about exempt loopback", func() bool {
		return hasWarning(configWarnings(t), "exempts 127.0.0.1/32, ::1/128, loopback or private addresses, and its server trusts no proxy")
	})
	if hasWarning(configWarnings(t), "forwards requests for others") {
		t.Fatal("exempt proxy warned before any forwarded request")
	}
	// A direct request from the exempt address: no proxy seen.
	c.expect(siteURL("exempt.localhost")+"/x", exampleUA, 200)
	if hasWarning(configWarnings(t), "forwards requests for others") {
		t.Fatal("exempt proxy warned for a request without X-Forwarded-For")
	}
	// The exempt address forwards for someone else: the bot behind it is
	// exempt, and the operator is told.
	if res := c.get(siteURL("exempt.localhost")+"/x", exampleUA, "X-Forwarded-For: 203.0.113.9"); res.status != 200 {
		t.Fatalf("forwarded request: %d", res.status)
	}
	eventually(t, 5*time.Second, "the exempt-proxy warning", func() bool {
		const rest = ", which forwards requests for others (X-Forwarded-For or Forwarded) while the server does not trust it as a proxy: every client behind it has its address, so every bot behind it is exempt. Set trusted_proxies"
		ws := configWarnings(t)
		return hasWarning(ws, "exempt covers 127.0.0.1"+rest) || hasWarning(ws, "exempt covers ::1"+rest)
	})

	// The proxy trusted: clients keep their own addresses, no warning.
	c = newClient(t, globalsWith("\tservers {\n\t\ttrusted_proxies static 127.0.0.1/32 ::1/128\n\t\ttrusted_proxies_strict\n\t}\n")+siteURL("trusted.localhost")+` {
	robots {
		source inline "User-agent: *\nDisallow: /x\n"
		exempt 127.0.0.1 ::1
	}
	respond "ok"
}
`)
	settle(c, siteURL("trusted.localhost")+"/")
	c.get(siteURL("trusted.localhost")+"/x", exampleUA, "X-Forwarded-For: 203.0.113.9")
	time.Sleep(200 * time.Millisecond)
	for _, w := range configWarnings(t) {
		if strings.Contains(w, "exempt") {
			t.Errorf("warned with the proxy trusted: %s", w)
		}
	}
}

// TestTrapMissingInSiteRobotsWarned: with source site, a trap that the
// site's robots.txt does not disallow marks nobody; the handler says so in
// its config warnings (GET /robots/status and the status page), naming
// the host, as soon as that version loads, and not for a site whose file
// has the line.
func TestTrapMissingInSiteRobotsWarned(t *testing.T) {
	c := newClient(t, globals+siteURL("notrap.localhost")+` {
	robots {
		trap /no-robots/
	}
	respond /robots.txt <<TXT
		User-agent: *
		Disallow: /private/
		TXT
	respond "ok"
}
`+siteURL("trap.localhost")+` {
	robots {
		trap /no-robots/
	}
	respond /robots.txt <<TXT
		User-agent: *
		Disallow: /private/
		Disallow: /no-robots/
		TXT
	respond "ok"
}
`)
	settle(c, siteURL("notrap.localhost")+"/")
	settle(c, siteURL("trap.localhost")+"/")
	c.expect(siteURL("notrap.localhost")+"/private/x", exampleUA, 403)
	c.expect(siteURL("trap.localhost")+"/private/x", exampleUA, 403)
	want := "robots: trap /no-robots/: the robots.txt of notrap.localhost"
	eventually(t, 5*time.Second, "the trap warning", func() bool {
		return hasWarning(configWarnings(t), want)
	})
	if hasWarning(configWarnings(t), "the robots.txt of trap.localhost") {
		t.Errorf("warned about a site whose robots.txt disallows the trap: %v", configWarnings(t))
	}
	_, page := admin(t, http.MethodGet, "/robots/", nil)
	if !strings.Contains(string(page), "robots: trap /no-robots/: the robots.txt of notrap.localhost") {
		t.Errorf("the status page does not show the trap warning")
	}
}
