package pipeline

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// TestPaceScope: the Crawl-delay budget is the site block's wherever the
// rules do not depend on the Host (source file, inline); with source site
// it is the host's, for the first state.RotationResidents hosts a client
// asks for, then the site block's for every further host (a verified
// crawler keeps one per host); two clients on one address do not count
// each other's hosts.
func TestPaceScope(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	pace := func(p *Pipeline, name string, verified bool, ip, host string) string {
		j := &Judgement{Request: Request{Host: host, Block: "h:block", Client: policy.Client{Addr: netip.MustParseAddr(ip)}}}
		j.Who = policy.Who{Name: name, Verified: verified}
		return p.PaceScope(j, now)
	}
	for _, src := range []string{"file", "inline"} {
		h := New(Config{HostHops: state.NewRotations(0)})
		for i := range 10 {
			if got := pace(h, "Hopper", false, "198.51.100.1", fmt.Sprintf("h%d.%s.example", i, src)); got != "h:block" {
				t.Errorf("source %s, host %d: budget %q, want the site block's", src, i, got)
			}
		}
	}
	h := New(Config{HostHops: state.NewRotations(0), PacePerHost: true})
	for i := range 10 {
		host := fmt.Sprintf("h%d.site.example", i)
		want := host
		if i >= state.RotationResidents {
			want = "h:block"
		}
		if got := pace(h, "Hopper", false, "198.51.100.2", host); got != want {
			t.Errorf("source site, host %d: budget %q, want %q", i, got, want)
		}
		if got := pace(h, "Googlebot", true, "198.51.100.2", host); got != host {
			t.Errorf("source site, verified crawler, host %d: budget %q, want its own", i, got)
		}
	}
	// The first hosts keep their budgets while the client hops.
	if got := pace(h, "Hopper", false, "198.51.100.2", "h0.site.example"); got != "h0.site.example" {
		t.Errorf("a resident host lost its budget: %q", got)
	}
	// Another crawler on the hopper's address has hosts of its own.
	for i := range state.RotationResidents {
		host := fmt.Sprintf("n%d.site.example", i)
		if got := pace(h, "Neighbour", false, "198.51.100.2", host); got != host {
			t.Errorf("the hopper's neighbour on host %d: budget %q, want its own", i, got)
		}
	}
}
