package caddyrobots

import (
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestPlaceholders: each judged request's provider answers for its own
// outcome (agent, decision, version, rule, token, purpose), a Retry-After
// in whole seconds, "" for what does not apply, and nothing for keys
// outside http.robots.
func TestPlaceholders(t *testing.T) {
	r := enforce.Parse([]byte("User-agent: *\nDisallow: /private/\nAllow: /private/ok\n"))
	v1 := &policy.Version{Robots: r, ID: "v1"}
	v2 := &policy.Version{Robots: r, ID: "v2"}
	a := agents.NewShared(agents.Agent{Name: "ExampleCrawler", Tokens: []string{"examplecrawler"}, Purpose: agents.PurposeSEO})
	b := agents.NewShared(agents.Agent{Name: "OtherBot", Tokens: []string{"otherbot"}})
	g, _ := r.SelectIndex([]string{"examplecrawler"}, true)
	deny := g.Decide("/private/x")
	allow := g.Decide("/private/ok")

	read := func(p published, key string) string {
		v, ok := p.placeholder(key)
		if !ok {
			t.Fatalf("%s: unknown", key)
		}
		s, _ := v.(string)
		return s
	}
	outcomes := []published{
		{action: policy.Allow, reason: policy.None, token: policy.TokenWildcard, agent: a, version: v1},
		{action: policy.Allow, reason: policy.None, token: 0, agent: a, decision: allow, version: v1},
		{action: policy.Block, reason: policy.Rule, token: policy.TokenWildcard, agent: a, decision: deny, version: v1},
		{action: policy.Allow, reason: policy.None, token: policy.TokenNone, agent: b, version: v1},
		{action: policy.Allow, reason: policy.None, token: policy.TokenWildcard, agent: a, version: v2},
	}
	for i, p := range outcomes {
		want := map[string]string{"http.robots.agent": p.agent.Name, "http.robots.decision": p.action.String(),
			"http.robots.version": p.version.ID, "http.robots.rule": "", "http.robots.purpose": string(p.agent.Purpose),
			"http.robots.token": map[int32]string{policy.TokenWildcard: "*", policy.TokenNone: "", 0: "examplecrawler"}[p.token]}
		if p.decision.Rule != nil {
			want["http.robots.rule"] = p.decision.Rule.String()
		}
		for k, w := range want {
			if got := read(p, k); got != w {
				t.Errorf("outcome %d: %s = %q, want %q", i, k, got, w)
			}
		}
	}

	throttled := published{action: policy.Throttle, reason: policy.Rate, agent: a, version: v1, retryAfter: 7 * time.Second}
	if got := read(throttled, "http.robots.retry_after"); got != "7" {
		t.Errorf("retry_after = %q", got)
	}
	if got := read(outcomes[0], "http.robots.retry_after"); got != "" {
		t.Errorf("retry_after without one = %q", got)
	}
	// No version (a site not loaded).
	none := published{action: policy.Allow, reason: policy.None, agent: a}
	if got := read(none, "http.robots.version"); got != "" {
		t.Errorf("version without one = %q", got)
	}
	for _, k := range []string{"http.request.uri", "http.robots.unknown"} {
		if _, ok := outcomes[0].placeholder(k); ok {
			t.Errorf("%s answered", k)
		}
	}
}
