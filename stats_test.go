package caddyrobots

import (
	"testing"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestCrawlerStatsByName: a crawler is counted in one slot however many
// Identifier answers it comes with (signed agents get a new one on every
// request), so it never crowds the others out of the table.
func TestCrawlerStatsByName(t *testing.T) {
	s := newCrawlerStats()
	answers := make([]*agents.Shared, 2000) // each its own, as signed requests get
	for i := range answers {
		answers[i] = agents.NewShared(agents.Agent{Bot: true, Name: "SignedBot"})
		s.seen(answers[i], policy.Allow)
	}
	gpt := agents.NewShared(agents.Agent{Bot: true, Name: "GPTBot"})
	s.seen(gpt, policy.Block)
	s.seen(gpt, policy.Block)
	s.retried(&gpt.Agent)
	top := s.top(10, false)
	want := []crawlerCount{{Name: "SignedBot", Allowed: 2000}, {Name: "GPTBot", Refused: 2, Retries: 1}}
	if len(top) != len(want) || top[0] != want[0] || top[1] != want[1] {
		t.Fatalf("top = %+v, want %+v", top, want)
	}
	if off := s.top(10, true); len(off) != 1 || off[0].Name != "GPTBot" {
		t.Errorf("offenders = %+v, want GPTBot alone", off)
	}
}
