package policy

import (
	"net/netip"

	"github.com/caddyrobots/caddy-robots/enforce/state"
)

// The identities a bot's state is kept under. The live handler, the admin
// API's check and the audit's replay must agree on them, or one reads
// another's state; the fetch identity must be the same when /robots.txt is
// fetched and when a request is judged, or the grace rule never sees a
// fetch.
//
// State belongs to whoever earned it:
//   - a verified crawler has one throttle budget for all its addresses, and
//     strikes per network that earned them (IPv4 /24, IPv6 /48), so that a
//     forged X-Forwarded-For behind a non-strict proxy cannot ban the real
//     crawler everywhere;
//   - any other bot, whatever group judges it, has the pair (the name it is
//     judged by, its address: IPv4 /32, IPv6 /64): two crawlers on one
//     address never share a budget or a strike count;
//   - except a name that is not a resident of an address seen rotating
//     names (Who.Rotating): all such names share the address's identity
//     (RotationName), so that a new token buys no fresh start.

// RotationName is the name of the identity every non-resident name of a
// rotating address is judged as.
const RotationName = "*"

// FetchIdentity is the key under which a crawler's fetches of /robots.txt
// for host are remembered for the grace rule.
func FetchIdentity(host string, who *Who, ip netip.Addr) state.Identity {
	id := state.NewIdentity(who.Name, who.Verified, ip)
	id.Site = host
	return id
}

// ThrottleIdentity is whose Crawl-delay budget a request spends; scope
// names the site (the handler's scope and the host: one budget per site).
func ThrottleIdentity(scope string, who *Who, ip netip.Addr) state.Identity {
	id := state.NewIdentity(who.StateName(), who.Verified, ip)
	id.Site = scope
	return id
}

// StrikeIdentity is who collects strikes and bans; scope names the handler
// that issues them (its site block), whatever Host the client sends.
func StrikeIdentity(scope string, who *Who, ip netip.Addr) state.Identity {
	if !who.Verified {
		id := state.NewIdentity(who.StateName(), false, ip)
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

// StateName is the name the request's state is kept under: Name, or
// RotationName for a non-resident name of a rotating address.
func (w *Who) StateName() string {
	if w.Rotating && !w.Verified {
		return RotationName
	}
	return w.Name
}
