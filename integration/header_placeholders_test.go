package integration

import (
	"testing"
)

// TestHeaderNeedsDefer: `header` runs before `robots` in Caddy's directive
// order, so a plain `header X {http.robots.decision}` is evaluated before
// the handler has decided, and `header` leaves a placeholder nobody has set
// as written. The deferred form `header >X {http.robots.decision}` is
// evaluated when the response is written and carries "block" on a refusal
// and "allow" on an allowed crawler request. People are not judged: there
// the placeholder stays as written too, while {vars.robots_decision} is
// empty. The README's note under "Placeholders, variables, metrics" says
// all this.
func TestHeaderNeedsDefer(t *testing.T) {
	site := siteURL("header-defer.localhost")
	c := newClient(t, globals+site+` {
	header >X-Robots-Decision {http.robots.decision}
	header >X-Robots-Rule {http.robots.rule}
	header >X-Robots-Var {vars.robots_decision}
	header X-Robots-Too-Early {http.robots.decision}
	robots {
		source inline "User-agent: *\nDisallow: /private/\n"
		crawl_delay off
	}
	respond "ok"
}
`)
	cases := []struct {
		name, path, ua string
		status         int
		decision, rule string
		variable       string
	}{
		{"refused crawler", "/private/x", exampleUA, 403, "block", "Disallow: /private/ (line 2)", "block"},
		{"allowed crawler", "/public", exampleUA, 200, "allow", "", "allow"},
		// People are never judged: the handler sets no placeholder, and
		// header leaves a placeholder nobody set as it was written; the
		// variable is empty instead.
		{"person", "/private/x", chromeUA, 200, "{http.robots.decision}", "{http.robots.rule}", ""},
		// /robots.txt passes for everyone, unjudged.
		{"robots.txt", "/robots.txt", exampleUA, 200, "{http.robots.decision}", "{http.robots.rule}", ""},
	}
	for _, tc := range cases {
		res := c.get(site+tc.path, tc.ua)
		if res.status != tc.status {
			t.Errorf("%s: status %d, want %d (body %q)", tc.name, res.status, tc.status, res.body)
		}
		if got := res.header.Get("X-Robots-Decision"); got != tc.decision {
			t.Errorf("%s: header >X-Robots-Decision = %q, want %q", tc.name, got, tc.decision)
		}
		if got := res.header.Get("X-Robots-Rule"); got != tc.rule {
			t.Errorf("%s: header >X-Robots-Rule = %q, want %q", tc.name, got, tc.rule)
		}
		if got := res.header.Get("X-Robots-Var"); got != tc.variable {
			t.Errorf("%s: header >X-Robots-Var {vars.robots_decision} = %q, want %q", tc.name, got, tc.variable)
		}
		// Without '>' the placeholder is read before the handler runs,
		// when nothing has set it yet: it stays as written.
		if got := res.header.Get("X-Robots-Too-Early"); got != "{http.robots.decision}" {
			t.Errorf("%s: header X-Robots-Too-Early {http.robots.decision} (not deferred) = %q, want the placeholder as written", tc.name, got)
		}
	}
}
