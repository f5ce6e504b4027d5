package policy

import (
	"net/netip"
	"testing"
	"time"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

func TestStateIdentities(t *testing.T) {
	v4 := netip.MustParseAddr("203.0.113.7")
	v4b := netip.MustParseAddr("203.0.113.99")
	v6 := netip.MustParseAddr("2001:db8:1:2:3::7")
	verified := &Who{Name: "GPTBot", Verified: true}
	unverified := &Who{Name: "ExampleCrawler"}
	rotating := &Who{Name: "RandBot7", Rotating: true}
	rotatingVerified := &Who{Name: "GPTBot", Verified: true, Rotating: true}
	shaped := &Who{Name: "RandBot8", Rotating: true, Pool: "*2a"}

	for _, c := range []struct {
		name string
		got  string
		want string
	}{
		// A verified crawler spends one budget across its addresses.
		{"throttle verified", ThrottleIdentity("example.com", verified, v4).String(), "v:example.com|GPTBot"},
		{"throttle verified, even on a rotating address", ThrottleIdentity("example.com", rotatingVerified, v4).String(), "v:example.com|GPTBot"},
		// Any other bot: the pair (name, address), whatever group judges
		// it; a non-resident name of a rotating address: the address's.
		{"throttle unverified", ThrottleIdentity("example.com", unverified, v4).String(), "u:example.com|ExampleCrawler@203.0.113.7/32"},
		{"throttle rotating", ThrottleIdentity("example.com", rotating, v4).String(), "u:example.com|*@203.0.113.7/32"},
		// ... the pool of its client's shape there, when it has one.
		{"throttle rotating, shape's pool", ThrottleIdentity("example.com", shaped, v4).String(), "u:example.com|*2a@203.0.113.7/32"},
		{"strike rotating, shape's pool", StrikeIdentity("example.com", shaped, v4).String(), "u:example.com|RandBot8@203.0.113.7/32"},
		{"throttle IPv6 /64", ThrottleIdentity("log|example.com", unverified, v6).String(), "u:log%7Cexample.com|ExampleCrawler@2001:db8:1:2::/64"},
		// Strikes: an unverified bot's (name, address), pooled or not (a
		// name never inherits a ban it did not earn); a verified crawler's
		// /24 or /48.
		{"strike unverified", StrikeIdentity("example.com", unverified, v4).String(), "u:example.com|ExampleCrawler@203.0.113.7/32"},
		{"strike rotating", StrikeIdentity("example.com", rotating, v4).String(), "u:example.com|RandBot7@203.0.113.7/32"},
		{"strike verified v4", StrikeIdentity("example.com", verified, v4).String(), "v:example.com|GPTBot@203.0.113.0/24"},
		{"strike verified v6", StrikeIdentity("example.com", verified, v6).String(), "v:example.com|GPTBot@2001:db8:1::/48"},
		{"strike verified, no address", StrikeIdentity("example.com", verified, netip.Addr{}).String(), "v:example.com|GPTBot"},
		// Fetches: per host and crawler, per address unless verified.
		{"fetch verified", FetchIdentity("example.com", verified, v4).String(), "v:example.com|GPTBot"},
		{"fetch unverified", FetchIdentity("example.com", unverified, v4).String(), "u:example.com|ExampleCrawler@203.0.113.7/32"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
	// Two addresses of one verified /24 share strikes; of an unverified
	// client they do not.
	if StrikeIdentity("s", verified, v4) != StrikeIdentity("s", verified, v4b) {
		t.Error("a verified crawler's strikes are split within one /24")
	}
	if StrikeIdentity("s", unverified, v4) == StrikeIdentity("s", unverified, v4b) {
		t.Error("two unverified addresses share strikes")
	}
	// A mapped IPv4 address is the IPv4 address.
	mapped := netip.MustParseAddr("::ffff:203.0.113.7")
	if StrikeIdentity("s", verified, mapped) != StrikeIdentity("s", verified, v4) {
		t.Error("an IPv4-mapped address gets another strike identity")
	}
}

// TestThrottlePace: a name with a budget of its own spends the assessment's
// interval and the operator's burst; the pool of an address's unproven
// names has RotationPoolNames names' worth of both, whatever the burst.
func TestThrottlePace(t *testing.T) {
	own := &Who{Name: "ExampleCrawler"}
	pooled := &Who{Name: "RandBot7", Rotating: true}
	verified := &Who{Name: "GPTBot", Verified: true, Rotating: true}
	f := state.Fetch{Key: 7}
	for _, c := range []struct {
		name     string
		who      *Who
		burst    int
		interval time.Duration
		want     state.Pace
	}{
		{"own", own, 4, time.Second, state.Pace{Interval: time.Second, Burst: 4, Fetch: f}},
		{"verified", verified, 4, time.Second, state.Pace{Interval: time.Second, Burst: 4, Fetch: f}},
		{"pooled", pooled, 4, time.Second, state.Pace{Interval: time.Second / state.RotationPoolNames, Burst: 4 * state.RotationPoolNames, Fetch: f}},
		{"pooled, strict burst", pooled, 1, time.Second, state.Pace{Interval: time.Second / state.RotationPoolNames, Burst: state.RotationPoolNames, Fetch: f}},
		{"pooled, burst capped", pooled, state.MaxBurst, time.Second, state.Pace{Interval: time.Second / state.RotationPoolNames, Burst: state.MaxBurst, Fetch: f}},
		{"no delay", pooled, 4, 0, state.Pace{Interval: 0, Burst: 4 * state.RotationPoolNames, Fetch: f}},
	} {
		if got := ThrottlePace(c.who, c.interval, c.burst, f); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestUntrustedProxy: only a private or loopback peer that forwards while
// untrusted is a proxy the server should have been told about.
func TestUntrustedProxy(t *testing.T) {
	for _, c := range []struct {
		peer               string
		forwarded, trusted bool
		want               bool
	}{
		{"127.0.0.1", true, false, true},
		{"10.0.0.5", true, false, true},
		{"fd00::1", true, false, true},
		{"::1", true, false, true},
		{"10.0.0.5", true, true, false},
		{"10.0.0.5", false, false, false},
		{"203.0.113.7", true, false, false},
		{"2001:db8::1", true, false, false},
	} {
		if got := UntrustedProxy(netip.MustParseAddr(c.peer), c.forwarded, c.trusted); got != c.want {
			t.Errorf("UntrustedProxy(%s, forwarded %v, trusted %v) = %v, want %v", c.peer, c.forwarded, c.trusted, got, c.want)
		}
	}
}
