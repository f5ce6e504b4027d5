package caddyrobots

import (
	"fmt"
	"testing"
	"time"

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
		s.seen(answers[i], agents.Unverified, policy.Allow, false)
	}
	gpt := agents.NewShared(agents.Agent{Bot: true, Name: "GPTBot"})
	s.seen(gpt, agents.Unverified, policy.Block, false)
	s.seen(gpt, agents.Unverified, policy.Block, false)
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
	s.seen(g, agents.Verified, policy.Allow, false)
	s.seen(g, agents.Verified, policy.Allow, false)
	s.seen(g, agents.Verified, policy.Allow, false)
	s.seen(g, agents.Unverified, policy.Allow, false)
	s.seen(g, agents.Spoofed, policy.Block, false)
	s.seen(g, agents.Spoofed, policy.Block, false)
	s.retried(g, agents.Spoofed)
	plain := agents.NewShared(agents.Agent{Bot: true, Name: "SomeBot"}) // no way to verify it: no mark
	s.seen(plain, agents.Unverified, policy.Allow, false)
	nameless := agents.NewShared(agents.Agent{Bot: true})
	s.seen(nameless, agents.Unverified, policy.Block, false)
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
	s.seen(polite, agents.Unverified, policy.Allow, false)
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

// TestCrawlerStatsHistory: every bot request is in the site block's
// history with its outcome, each crawler's (and claim's) in its own, and
// past maxCrawlerHistories crawlers the rest fold into "other": the
// memory a flood of names can take is bounded.
func TestCrawlerStatsHistory(t *testing.T) {
	s := newCrawlerStats()
	g := agents.NewShared(agents.Agent{Bot: true, Known: true, Name: "Googlebot", Profile: agents.Profile{Verify: "google"}})
	s.seen(g, agents.Verified, policy.Allow, false)
	s.seen(g, agents.Verified, policy.Allow, false)
	s.seen(g, agents.Spoofed, policy.Block, false)
	s.seen(g, agents.Spoofed, policy.Throttle, false)
	for i := range maxCrawlerHistories + 20 {
		s.seen(agents.NewShared(agents.Agent{Bot: true, Name: fmt.Sprintf("Bot%03d", i)}), agents.Unverified, policy.Allow, false)
	}
	if n := s.histories.Load(); n != maxCrawlerHistories {
		t.Errorf("%d crawler histories kept, want %d", n, maxCrawlerHistories)
	}
	var site admin.Site
	s.describe(&site, time.Now())
	h := site.History
	if tot := h.Hour.Total(); tot.Requests != 4+maxCrawlerHistories+20 || tot.Refused != 1 || tot.Throttled != 1 {
		t.Errorf("site block's hour: %+v", tot)
	}
	byName := map[string]admin.Bucket{}
	for _, c := range h.Crawlers {
		byName[c.Crawler+"|"+c.Claim] = c.Day.Total()
	}
	if b := byName["Googlebot|spoofed"]; b.Requests != 2 || b.Refused != 1 || b.Throttled != 1 {
		t.Errorf("spoofed Googlebot's day: %+v (all %+v)", b, byName)
	}
	if b := byName["Googlebot|"]; b.Requests != 2 || b.Refused != 0 {
		t.Errorf("verified Googlebot's day: %+v", b)
	}
	// Listed: the top crawlers (Top of them), then other: the rest.
	last := h.Crawlers[len(h.Crawlers)-1]
	if !last.Other || len(h.Crawlers) != admin.Top+1 {
		t.Fatalf("crawlers %d, last %+v: want the %d top crawlers and other", len(h.Crawlers), last.Crawler, admin.Top)
	}
	var listed uint64
	for _, c := range h.Crawlers {
		listed += c.Hour.Total().Requests
	}
	if listed != h.Hour.Total().Requests {
		t.Errorf("the rows add up to %d requests, the site block counted %d", listed, h.Hour.Total().Requests)
	}
	if site.CountsSince.IsZero() || time.Since(site.CountsSince) > time.Minute {
		t.Errorf("counts since %v", site.CountsSince)
	}
}
