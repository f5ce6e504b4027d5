package caddyrobots

import (
	"testing"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/admin"
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
		s.seen(answers[i], agents.Unverified, policy.Allow)
	}
	gpt := agents.NewShared(agents.Agent{Bot: true, Name: "GPTBot"})
	s.seen(gpt, agents.Unverified, policy.Block)
	s.seen(gpt, agents.Unverified, policy.Block)
	s.retried(gpt, agents.Unverified)
	top := s.top(10, false)
	want := []admin.CrawlerCount{{Name: "SignedBot", Allowed: 2000}, {Name: "GPTBot", Refused: 2, Retries: 1}}
	if len(top) != len(want) || top[0] != want[0] || top[1] != want[1] {
		t.Fatalf("top = %+v, want %+v", top, want)
	}
	if off := s.top(10, true); len(off) != 1 || off[0].Name != "GPTBot" {
		t.Errorf("offenders = %+v, want GPTBot alone", off)
	}
}

// TestCrawlerStatsClaims: an unverified or spoofed "Googlebot" is counted
// apart from the verified one and says so, and a bot whose User-Agent names
// nothing has a label rather than an empty name.
func TestCrawlerStatsClaims(t *testing.T) {
	s := newCrawlerStats()
	g := agents.NewShared(agents.Agent{Bot: true, Known: true, Name: "Googlebot", Profile: agents.Profile{Verify: "google"}})
	s.seen(g, agents.Verified, policy.Allow)
	s.seen(g, agents.Verified, policy.Allow)
	s.seen(g, agents.Verified, policy.Allow)
	s.seen(g, agents.Unverified, policy.Allow)
	s.seen(g, agents.Spoofed, policy.Block)
	s.seen(g, agents.Spoofed, policy.Block)
	s.retried(g, agents.Spoofed)
	plain := agents.NewShared(agents.Agent{Bot: true, Name: "SomeBot"}) // no way to verify it: no mark
	s.seen(plain, agents.Unverified, policy.Allow)
	nameless := agents.NewShared(agents.Agent{Bot: true})
	s.seen(nameless, agents.Unverified, policy.Block)
	want := []admin.CrawlerCount{
		{Name: "Googlebot", Allowed: 3},
		{Name: "Googlebot", Claim: "spoofed", Refused: 2, Retries: 1},
		{Name: noNameLabel, Refused: 1},
		{Name: "Googlebot", Claim: "unverified claim", Allowed: 1},
		{Name: "SomeBot", Allowed: 1},
	}
	top := s.top(10, false)
	if len(top) != len(want) {
		t.Fatalf("top = %+v, want %+v", top, want)
	}
	for i := range want {
		if top[i] != want[i] {
			t.Errorf("top[%d] = %+v, want %+v", i, top[i], want[i])
		}
	}
}

// TestCrawlerStatsUnavailableApart: 503s because robots.txt was
// unavailable are no crawler's offence: they are counted apart and never
// list a polite crawler among the offenders.
func TestCrawlerStatsUnavailableApart(t *testing.T) {
	s := newCrawlerStats()
	polite := agents.NewShared(agents.Agent{Bot: true, Name: "PoliteBot"})
	for range 3 {
		s.seenUnavailable(polite, agents.Unverified)
	}
	s.seen(polite, agents.Unverified, policy.Allow)
	if off := s.top(10, true); len(off) != 0 {
		t.Errorf("offenders = %+v, want none", off)
	}
	if top := s.top(10, false); len(top) != 1 || top[0].Refused != 0 || top[0].Unavailable != 3 {
		t.Errorf("top = %+v, want PoliteBot with 3 refused while unavailable and no refusal", top)
	}
	if n := s.unavailableTotal(); n != 3 {
		t.Errorf("unavailableTotal = %d, want 3", n)
	}
}
