package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/enforce"
	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// testPipeline judges by a robots.txt that disallows /private/ and sets a
// Crawl-delay of 10 s, with a memory store that bans on the first strike.
func testPipeline(t *testing.T) (*Pipeline, *policy.Version) {
	t.Helper()
	opts := policy.Options{Grace: 24 * time.Hour, MaxGrace: 24 * time.Hour, Burst: 1, Strikes: true}
	v := &policy.Version{Robots: enforce.Parse([]byte("User-agent: *\nDisallow: /private/\nCrawl-delay: 10\n")), ID: "v1"}
	store := state.NewMemory(state.MemoryConfig{})
	t.Cleanup(func() { _ = store.Close() })
	return New(Config{
		Store:     store,
		Strikes:   state.StrikePolicy{Strikes: 1, Window: time.Hour, Ban: time.Hour},
		Rotations: state.NewRotations(0),
		Options:   opts,
	}), v
}

var testAgent = agents.Agent{Bot: true, Name: "PipeBot", Tokens: []string{"pipebot"}}

// judge judges target for PipeBot from 198.51.100.7 at at.
func judge(p *Pipeline, v *policy.Version, target string, mode Mode, dry bool, at time.Time) *Judgement {
	j := &Judgement{Request: Request{
		Target: policy.ParseTarget("GET", target),
		Host:   "example.com",
		Client: policy.Client{Agent: &testAgent, Addr: netip.MustParseAddr("198.51.100.7")},
		Site:   policy.Site{Versions: []*policy.Version{v}},
		Block:  "block", BlockDesc: "example.com", Mode: mode, DryRun: dry, At: at,
	}}
	p.Judge(context.Background(), j)
	return j
}

// TestJudgeWritesWhatTheAssessmentAsks: a refusal by rule is a strike that
// starts a ban, which the next request reads; a dry run reads the state
// and writes none; log mode keeps state of its own.
func TestJudgeWritesWhatTheAssessmentAsks(t *testing.T) {
	p, v := testPipeline(t)
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)

	if j := judge(p, v, "/private/a", Enforce, true, at); j.Assessment.Action != policy.Block || j.Struck {
		t.Fatalf("dry run: %s, struck %v; want a block and no strike", j.Assessment.Action, j.Struck)
	}
	if j := judge(p, v, "/", Enforce, false, at); j.Assessment.Action != policy.Allow {
		t.Fatalf("after a dry run: %s, want allow (nothing was written)", j.Assessment.Action)
	}
	j := judge(p, v, "/private/a", Enforce, false, at.Add(time.Minute))
	if !j.Struck || !j.Strike.Banned || j.StrikeID.Site != "block" {
		t.Fatalf("strike: struck %v, banned %v, site %q", j.Struck, j.Strike.Banned, j.StrikeID.Site)
	}
	if j := judge(p, v, "/", Enforce, false, at.Add(2*time.Minute)); j.Assessment.Action != policy.Ban {
		t.Fatalf("after the strike: %s, want ban", j.Assessment.Action)
	}
	// Log mode's state is its own: the enforce ban does not reach it, and
	// its throttle budget is untouched.
	if j := judge(p, v, "/", Log, false, at.Add(2*time.Minute)); j.Assessment.Action != policy.Allow {
		t.Fatalf("log mode: %s, want allow", j.Assessment.Action)
	}
	if j := judge(p, v, "/", Log, false, at.Add(2*time.Minute+time.Second)); j.Assessment.Action != policy.Throttle || !j.Assessment.Pace {
		t.Fatalf("log mode, one second later: %s, want throttle (Crawl-delay 10)", j.Assessment.Action)
	}
}

// TestJudgeFoldsACaseInsensitiveTarget: with CaseInsensitive, the target's
// forms are judged folded (the versions are parsed from a folded body).
func TestJudgeFoldsACaseInsensitiveTarget(t *testing.T) {
	p, _ := testPipeline(t)
	p.cfg.Options.CaseInsensitive = true
	v := &policy.Version{Robots: enforce.Parse(enforce.FoldCaseBytes([]byte("User-agent: *\nDisallow: /Private/\n"))), ID: "v2"}
	j := judge(p, v, "/PRIVATE/a", Enforce, true, time.Now())
	if j.Assessment.Action != policy.Block || j.Target.Raw != "/PRIVATE/a" {
		t.Fatalf("%s (raw %q), want a block with the target as sent kept", j.Assessment.Action, j.Target.Raw)
	}
}

// TestJudgePoolsUnprovenNamesByShape: on an address that rotates names,
// an unproven name spends the pool of its client's shape: a rogue that
// sends a new name with every request drains its own pool, and a
// newcomer of another shape that asks for a page before /robots.txt
// finds its pool unspent. A dry run reads the pool a request would spend,
// and a request with no HTTP request to read (a replayed line) has one
// shape per address.
func TestJudgePoolsUnprovenNamesByShape(t *testing.T) {
	p, v := testPipeline(t)
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	ask := func(name string, r *http.Request, dry bool) *Judgement {
		t.Helper()
		a := agents.Agent{Bot: true, Name: name, Tokens: []string{name}}
		j := &Judgement{Request: Request{
			Target: policy.ParseTarget("GET", "/page"),
			Host:   "example.com",
			Client: policy.Client{Agent: &a, Addr: netip.MustParseAddr("198.51.100.8")},
			Site:   policy.Site{Versions: []*policy.Version{v}},
			Block:  "block", BlockDesc: "example.com", HTTP: r, DryRun: dry, At: at,
		}}
		p.Judge(context.Background(), j)
		return j
	}
	goClient := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/page", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		return r
	}
	wget := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/page", nil)
		r.Header.Set("Accept", "*/*")
		r.Header.Set("Accept-Encoding", "identity")
		r.Header.Set("Connection", "Keep-Alive")
		return r
	}
	allowed := 0
	for i := range 50 {
		j := ask(fmt.Sprintf("rnd%d", i), goClient(), false)
		if j.Assessment.Action == policy.Allow {
			allowed++
		}
		if i >= state.RotationResidents && (!j.Who.Rotating || j.Who.Pool == "" || j.Who.Pool == state.RotationOverflow) {
			t.Fatalf("rogue name %d: rotating %v, pool %q: want its shape's own pool", i, j.Who.Rotating, j.Who.Pool)
		}
	}
	// Crawl-delay 10, burst 1: the residents' one request each, and the
	// pool's RotationPoolNames.
	if want := state.RotationResidents + state.RotationPoolNames; allowed != want {
		t.Fatalf("the rogue got %d pages at one instant, want %d", allowed, want)
	}
	if j := ask("wget", wget(), true); j.Assessment.Action != policy.Allow || !j.Who.Rotating {
		t.Fatalf("dry run for wget beside the rogue: %s (rotating %v), want allow from its own pool", j.Assessment.Action, j.Who.Rotating)
	}
	j := ask("wget", wget(), false)
	if j.Assessment.Action != policy.Allow {
		t.Fatalf("wget's start page beside the rogue: %s, want allow from its own pool", j.Assessment.Action)
	}
	if rogue := ask("rnd99", goClient(), false); j.Who.Pool == rogue.Who.Pool || rogue.Assessment.Action != policy.Throttle {
		t.Fatalf("wget's pool %q, the rogue's %q (%s)", j.Who.Pool, rogue.Who.Pool, rogue.Assessment.Action)
	}
	// Without a request to read, every client of the address has one
	// shape: the rogue's names and a newcomer's share one pool.
	if a, b := ask("line1", nil, false), ask("line2", nil, false); a.Who.Pool != b.Who.Pool {
		t.Fatalf("replayed lines: pools %q and %q, want one", a.Who.Pool, b.Who.Pool)
	}
}
