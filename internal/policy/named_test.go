package policy_test

import (
	"testing"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestNamedBySite: a browser string is named by a group of the site's own
// robots.txt only through a whole word of its own (not a substring, not a
// browser's words), and the group's spelling is kept.
func TestNamedBySite(t *testing.T) {
	id := agents.NewIdentifier(100)
	const robots = "User-agent: *\nDisallow: /private/\n\nUser-agent: MyAgent\nDisallow: /\n\nUser-agent: Mozilla\nUser-agent: Chrome\nUser-agent: Safari\nDisallow: /\n"
	v := &policy.Version{Robots: enforce.Parse([]byte(robots)), ID: "v1"}
	older := &policy.Version{Robots: enforce.Parse([]byte("User-agent: OldAgent\nDisallow: /\n")), ID: "v0"}
	for _, c := range []struct {
		ua, want string
	}{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgent/2.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "MyAgent"},
		{"Mozilla/5.0 (X11; Linux x86_64; MYAGENT) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "MyAgent"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64; MyAgentX/2.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", ""},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", ""},
		{"Mozilla/5.0 (X11; Linux x86_64; OldAgent) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "OldAgent"},
	} {
		a := id.IdentifyShared(c.ua)
		if a.Bot {
			t.Fatalf("%q is identified as a bot already: not this test's case", c.ua)
		}
		if got := policy.NamedBySite(a, []*policy.Version{v, older}); got != c.want {
			t.Errorf("NamedBySite(%q) = %q, want %q (candidates %q)", c.ua, got, c.want, a.Candidates)
		}
	}
	na := policy.NamedAgent("MyAgent")
	if !na.Bot || na.Name != "MyAgent" || len(na.Tokens) != 1 || na.Tokens[0] != "MyAgent" {
		t.Errorf("NamedAgent = %+v", na)
	}
	if d := v.Robots.Decide(na.Tokens, "/public"); d.Allowed {
		t.Errorf("MyAgent is allowed /public by %q", robots)
	}
}
