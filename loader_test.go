package caddyrobots

import (
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

func newTestTable() *ruleSource {
	return &ruleSource{
		h:    &Handler{Source: "site"},
		site: true,
		hostTable: &hostTable{
			hosts:   map[string]*hostRules{},
			fetched: newBoundedMap[state.Identity, time.Time](16),
			seed:    maphash.MakeSeed(),
		},
	}
}

// TestHostTableBoundedAndCached: the table keeps at most maxHosts hosts,
// evicting the oldest; a host is one entry however it is reached (hot
// cache, view or map), and the hot cache never hands out an evicted host.
func TestHostTableBoundedAndCached(t *testing.T) {
	s := newTestTable()
	first := s.host("a.example")
	if again := s.host("a.example"); again != first {
		t.Fatal("the same host gave two entries")
	}
	names := []string{"a.example"}
	for i := range maxHosts + 40 {
		n := fmt.Sprintf("h%d.example", i)
		names = append(names, n)
		if hr := s.host(n); hr.host != n {
			t.Fatalf("host(%q) returned the entry of %q", n, hr.host)
		}
	}
	if len(s.hosts) != maxHosts || len(*s.view.Load()) != maxHosts {
		t.Fatalf("table holds %d hosts (view %d), want %d", len(s.hosts), len(*s.view.Load()), maxHosts)
	}
	for i := range s.hot {
		if hr := s.hot[i].Load(); hr != nil && s.hosts[hr.host] != hr {
			t.Errorf("hot slot %d holds %q, which is not in the table", i, hr.host)
		}
	}
	// The newest hosts are kept, each reached as the same entry again.
	for _, n := range names[len(names)-maxHosts:] {
		if hr := s.host(n); hr != s.hosts[n] {
			t.Errorf("host(%q) is not the table's entry", n)
		}
	}
	// An evicted host comes back as a new, pending entry.
	if hr := s.host("a.example"); hr == first || !hr.snap.Load().pending {
		t.Error("an evicted host came back as its old entry")
	}
}

// TestHostTableFileSource: file and inline sources share one entry for all
// hosts.
func TestHostTableFileSource(t *testing.T) {
	s := newTestTable()
	s.site = false
	if a, b := s.host("a.example"), s.host("b.example"); a != b || a.host != "" {
		t.Errorf("file source: hosts got distinct entries %q and %q", a.host, b.host)
	}
}
