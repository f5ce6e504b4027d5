package state

import (
	"net/netip"
	"strings"
	"testing"
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

func BenchmarkNewIdentity(b *testing.B) {
	addr := netip.MustParseAddr("2001:db8:1:2:3:4:5:6")
	b.ReportAllocs()
	for b.Loop() {
		_ = NewIdentity("GPTBot", false, addr)
	}
}
