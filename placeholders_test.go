package caddyrobots

import (
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestProviderReuse: an outcome seen before gets the provider its version
// keeps (no allocation); every provider answers for its own outcome, never
// for another that shares its slot; an outcome with a Retry-After or no
// version gets its own; a new version starts its own table.
func TestProviderReuse(t *testing.T) {
	r := enforce.Parse([]byte("User-agent: *\nDisallow: /private/\nAllow: /private/ok\n"))
	v1 := &policy.Version{Robots: r, ID: "v1"}
	v2 := &policy.Version{Robots: r, ID: "v2"}
	a := agents.NewShared(agents.Agent{Name: "ExampleCrawler", Tokens: []string{"examplecrawler"}})
	b := agents.NewShared(agents.Agent{Name: "OtherBot", Tokens: []string{"otherbot"}})
	g, _ := r.SelectIndex([]string{"examplecrawler"}, true)
	deny := g.Decide("/private/x")
	allow := g.Decide("/private/ok")

	read := func(p *published, key string) string {
		v, ok := p.provider()(key)
		if !ok {
			t.Fatalf("%s: unknown", key)
		}
		s, _ := v.(string)
		return s
	}
	outcomes := []published{
		{action: policy.Allow, reason: policy.None, token: policy.TokenWildcard, agent: a, version: v1},
		{action: policy.Allow, reason: policy.None, token: policy.TokenWildcard, agent: a, decision: allow, version: v1},
		{action: policy.Block, reason: policy.Rule, token: policy.TokenWildcard, agent: a, decision: deny, version: v1},
		{action: policy.Allow, reason: policy.None, token: policy.TokenWildcard, agent: b, version: v1},
		{action: policy.Allow, reason: policy.None, token: policy.TokenWildcard, agent: a, version: v2},
	}
	// Twice over: the second round reads the providers kept by the first.
	for round := range 2 {
		for i := range outcomes {
			p := &outcomes[i]
			want := map[string]string{"http.robots.agent": p.agent.Name, "http.robots.decision": p.action.String(), "http.robots.version": p.version.ID, "http.robots.rule": ""}
			if p.decision.Rule != nil {
				want["http.robots.rule"] = p.decision.Rule.String()
			}
			for k, w := range want {
				if got := read(p, k); got != w {
					t.Errorf("round %d, outcome %d: %s = %q, want %q", round, i, k, got, w)
				}
			}
		}
	}
	p := &outcomes[1]
	if n := testing.AllocsPerRun(100, func() { _ = p.provider() }); n != 0 {
		t.Errorf("a kept provider: %v allocations", n)
	}
	if v1.Memo.Load() == v2.Memo.Load() {
		t.Error("two versions share a table")
	}

	// A Retry-After varies by the second: never kept.
	throttled := published{action: policy.Throttle, reason: policy.Rate, agent: a, version: v1, retryAfter: 7 * time.Second}
	if got := read(&throttled, "http.robots.retry_after"); got != "7" {
		t.Errorf("retry_after = %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = throttled.provider() }); n != 1 {
		t.Errorf("an outcome with a Retry-After: %v allocations, want 1 (its own provider, never kept)", n)
	}
	// No version (a site not loaded): its own provider.
	none := published{action: policy.Allow, reason: policy.None, agent: a}
	if got := read(&none, "http.robots.version"); got != "" {
		t.Errorf("version without one = %q", got)
	}
}
