package caddyrobots

import (
	"net/netip"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// The identities a bot's state is kept under live in internal/policy, so
// that `caddy robots audit` (which cannot import this package) replays an
// access log with the very identities the live handler uses. These names
// keep the handler's call sites short.

// fetchIdentity is policy.FetchIdentity.
func fetchIdentity(host string, who *policy.Who, ip netip.Addr) state.Identity {
	return policy.FetchIdentity(host, who, ip)
}

// throttleIdentity is policy.ThrottleIdentity.
func throttleIdentity(scope string, who *policy.Who, starJudged bool, ip netip.Addr) state.Identity {
	return policy.ThrottleIdentity(scope, who, starJudged, ip)
}

// strikeIdentity is policy.StrikeIdentity.
func strikeIdentity(scope string, who *policy.Who, ip netip.Addr) state.Identity {
	return policy.StrikeIdentity(scope, who, ip)
}
