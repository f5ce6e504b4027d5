package policy

import (
	"net/netip"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// The identities a bot's state is kept under. Whoever reads or writes a
// crawler's state must build its identity with these functions, or it
// reads someone else's state: the live handler and the admin API's check
// agree on them, serving /robots.txt and judging a request agree on
// FetchIdentity (or the grace rule never sees a fetch), and
// `caddy robots audit` replays an access log with the same identities so
// that it reaches the server's decisions.

// WildcardName is the identity name of every bot judged by the "*" group:
// such a bot chooses its product token freely, so its budget, strikes and
// bans are its address's, whatever token it sends next.
const WildcardName = "*"

// FetchIdentity is the key under which a crawler's fetches of /robots.txt
// are remembered for the grace rule (Site.FetchedAt): per site host, per
// crawler name, and per address unless the crawler is verified.
func FetchIdentity(host string, who *Who, ip netip.Addr) state.Identity {
	id := state.NewIdentity(who.Name, who.Verified, ip)
	id.Site = host
	return id
}

// ThrottleIdentity is whose Crawl-delay budget a request spends within
// scope (the site's host, see the handler's state scope): a verified
// crawler's one budget across its addresses; an unverified crawler's budget
// per token and address; for a bot judged by "*" (starJudged, see
// Assessment.StarJudged), its address's, whatever token it sent.
func ThrottleIdentity(scope string, who *Who, starJudged bool, ip netip.Addr) state.Identity {
	name := who.Name
	if starJudged && !who.Verified {
		name = WildcardName
	}
	id := state.NewIdentity(name, who.Verified, ip)
	id.Site = scope
	return id
}

// StrikeIdentity is who collects strikes and bans within scope: an
// unverified bot's address (IPv6 /64), so that a banned address stays
// banned whatever token it claims next; a verified crawler per network
// that earned the strikes (IPv4 /24, IPv6 /48), so that a forged
// X-Forwarded-For behind a non-strict proxy cannot ban the real crawler
// everywhere.
func StrikeIdentity(scope string, who *Who, ip netip.Addr) state.Identity {
	if !who.Verified {
		id := state.NewIdentity(WildcardName, false, ip)
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
