package state

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestNewIdentity(t *testing.T) {
	tests := []struct {
		name     string
		verified bool
		addr     string
		want     Identity
		key      string
	}{
		{"Googlebot", true, "66.249.66.1", Identity{Name: "Googlebot", Verified: true}, "v:Googlebot"},
		{"GPTBot", false, "203.0.113.7", Identity{Name: "GPTBot", Prefix: netip.MustParsePrefix("203.0.113.7/32")}, "u:GPTBot@203.0.113.7/32"},
		{"GPTBot", false, "::ffff:203.0.113.7", Identity{Name: "GPTBot", Prefix: netip.MustParsePrefix("203.0.113.7/32")}, "u:GPTBot@203.0.113.7/32"},
		{"x", false, "2001:db8:1:2:3:4:5:6", Identity{Name: "x", Prefix: netip.MustParsePrefix("2001:db8:1:2::/64")}, "u:x@2001:db8:1:2::/64"},
		{"x", false, "fe80::1%eth0", Identity{Name: "x", Prefix: netip.MustParsePrefix("fe80::/64")}, "u:x@fe80::/64"},
		{"x", false, "", Identity{Name: "x"}, "u:x"},
		{"a@b{c}%d e", false, "", Identity{Name: "a@b{c}%d e"}, "u:a%40b%7Bc%7D%25d%20e"},
	}
	for _, tt := range tests {
		var addr netip.Addr
		if tt.addr != "" {
			addr = netip.MustParseAddr(tt.addr)
		}
		got := NewIdentity(tt.name, tt.verified, addr)
		if got != tt.want {
			t.Errorf("NewIdentity(%q, %v, %s) = %#v, want %#v", tt.name, tt.verified, tt.addr, got, tt.want)
		}
		if s := got.String(); s != tt.key {
			t.Errorf("%#v.String() = %q, want %q", got, s, tt.key)
		}
	}
	// Two addresses of one /64 are one identity; of two /64s, two.
	a := NewIdentity("x", false, netip.MustParseAddr("2001:db8::1"))
	b := NewIdentity("x", false, netip.MustParseAddr("2001:db8::ffff:1"))
	c := NewIdentity("x", false, netip.MustParseAddr("2001:db8:0:1::1"))
	if a != b || a == c {
		t.Errorf("/64 grouping: a=%v b=%v c=%v", a, b, c)
	}
	long := NewIdentity(strings.Repeat("n", 1000), false, netip.Addr{})
	if len(long.Name) != MaxNameLen {
		t.Errorf("long name kept %d bytes, want %d", len(long.Name), MaxNameLen)
	}
}

// TestIdentitySite: the site is part of the key, escaped so that site and
// name cannot be confused, and a long site never crowds out the name (two
// crawlers on a site with a long host name keep separate budgets).
func TestIdentitySite(t *testing.T) {
	id := NewIdentity("GPTBot", false, netip.MustParseAddr("203.0.113.7"))
	id.Site = "example.com"
	if got, want := id.String(), "u:example.com|GPTBot@203.0.113.7/32"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	a := Identity{Site: "a|b", Name: "c", Verified: true}
	b := Identity{Site: "a", Name: "b|c", Verified: true}
	if a.String() == b.String() {
		t.Errorf("%#v and %#v share the key %q", a, b, a.String())
	}
	if got, want := a.String(), "v:a%7Cb|c"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	host := strings.Repeat("very-long-label.", 15) + "example.com" // 251 bytes
	m := NewMemory(MemoryConfig{})
	gpt := Identity{Site: host, Name: "GPTBot", Verified: true}
	claude := Identity{Site: host, Name: "ClaudeBot", Verified: true}
	if gpt.String() == claude.String() {
		t.Fatalf("two crawlers on %d-byte host share the key %q", len(host), gpt.String())
	}
	if r := mustThrottle(t, m, gpt, time.Minute, epoch); !r.Allowed {
		t.Fatalf("GPTBot's first request refused")
	}
	if r := mustThrottle(t, m, claude, time.Minute, epoch); !r.Allowed {
		t.Errorf("ClaudeBot's first request refused: it shares GPTBot's budget on a long host")
	}
	other := gpt
	other.Site = "other.example"
	if r := mustThrottle(t, m, other, time.Minute, epoch); !r.Allowed {
		t.Errorf("GPTBot on another site refused: sites share one budget")
	}
	huge := Identity{Site: strings.Repeat("h", 1000), Name: "x"}
	if k := huge.String(); len(k) > MaxSiteLen+MaxNameLen+8 {
		t.Errorf("a 1000-byte site makes a %d-byte key", len(k))
	}
}

func BenchmarkNewIdentity(b *testing.B) {
	addr := netip.MustParseAddr("2001:db8:1:2:3:4:5:6")
	b.ReportAllocs()
	for b.Loop() {
		_ = NewIdentity("GPTBot", false, addr)
	}
}
