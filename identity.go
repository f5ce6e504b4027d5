package caddyrobots

import (
	"net/netip"

	"github.com/caddyrobots/caddy-robots/enforce/state"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// The identities a bot's state is kept under. The live handler and the
// admin API's check must agree on them, or the check reads someone else's
// state; serveRobotsTxt and the decision must agree on fetchIdentity, or
// the grace rule never sees a fetch.

// wildcardName is the identity name of every bot judged by the "*" group:
// such a bot chooses its product token freely, so its budget, strikes and
// bans are its address's, whatever token it sends next.
const wildcardName = "*"

// fetchIdentity is the key under which a crawler's fetches of /robots.txt
// are remembered for the grace rule.
func fetchIdentity(host string, who *policy.Who, ip netip.Addr) state.Identity {
	id := state.NewIdentity(who.Name, who.Verified, ip)
	id.Site = host
	return id
}

// throttleIdentity is whose Crawl-delay budget a request spends: a verified
// crawler's one budget across its addresses; an unverified crawler's budget
// per token and address; for a bot judged by "*", its address's.
func throttleIdentity(scope string, who *policy.Who, starJudged bool, ip netip.Addr) state.Identity {
	name := who.Name
	if starJudged && !who.Verified {
		name = wildcardName
	}
	id := state.NewIdentity(name, who.Verified, ip)
	id.Site = scope
	return id
}

// strikeIdentity is who collects strikes and bans: an unverified bot's
// address (IPv6 /64), so that a banned address stays banned whatever token
// it claims next; a verified crawler per network that earned the strikes
// (IPv4 /24, IPv6 /48), so that a forged X-Forwarded-For behind a
// non-strict proxy cannot ban the real crawler everywhere.
func strikeIdentity(scope string, who *policy.Who, ip netip.Addr) state.Identity {
	if !who.Verified {
		id := state.NewIdentity(wildcardName, false, ip)
		id.Site = scope
		return id
	}
	id := state.Identity{Site: scope, Name: who.Name, Verified: true}
	if ip.IsValid() {
		ip = ip.Unmap().WithZone("")
		bits := 24
		if ip.Is6() {
			bits = 48
		}
		id.Prefix, _ = ip.Prefix(bits)
	}
	return id
}
