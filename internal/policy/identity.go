package policy

import (
	"net/netip"
	"time"

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
//     address never share a strike count or a ban, and a name never
//     inherits a ban another name earned;
//   - except that an unproven name of an address that presents many names
//     (Who.Rotating, see state.Rotations) also spends a pooled Crawl-delay
//     budget of the address (Who.Pool: its client shape's, ClientShape,
//     or the overflow pool; ThrottlePace): a new token buys no fresh
//     budget, and only clients that look alike share one. Its strikes and
//     bans stay its own.

// RotationName is the name of the pooled Crawl-delay budget that the
// unproven names of an address share when their shape has no pool of its
// own (state.RotationOverflow).
const RotationName = state.RotationOverflow

// FetchIdentity is the key under which a crawler's fetches of /robots.txt
// for host are remembered for the grace rule.
func FetchIdentity(host string, who *Who, ip netip.Addr) state.Identity {
	id := state.NewIdentity(who.Name, who.Verified, ip)
	id.Site = host
	return id
}

// ThrottleIdentity is whose Crawl-delay budget a request spends; scope
// names the site (the handler's scope and the host: one budget per site).
// An unproven name of a rotating address spends its pool at the address.
func ThrottleIdentity(scope string, who *Who, ip netip.Addr) state.Identity {
	id := state.NewIdentity(who.StateName(), who.Verified, ip)
	id.Site = scope
	return id
}

// ThrottlePace is the pace a request's Crawl-delay budget enforces:
// interval (the assessment's) and burst (the operator's crawl_burst) for a
// name with a budget of its own; for a pool of an address's unproven
// names (Who.Rotating), state.RotationPoolNames names' worth of both, so
// that that many compliant crawlers keeping the delay are never throttled
// while all the names a rogue rotates through share a bounded rate.
func ThrottlePace(who *Who, interval time.Duration, burst int, fetch state.Fetch) state.Pace {
	if who.Rotating && !who.Verified {
		interval /= state.RotationPoolNames
		burst = min(max(burst, 1)*state.RotationPoolNames, state.MaxBurst)
	}
	return state.Pace{Interval: interval, Burst: burst, Fetch: fetch}
}

// OwnPace reports whether who's request spends a pooled budget (an
// unproven name of a rotating address), and then returns who as the name
// alone, whose own Crawl-delay the request must keep first: the pool
// bounds what a rotating address gets in all, never what one name may
// take, so a name that arrives on a busy address owes its Crawl-delay as
// anywhere else. Callers spend the name's own budget, then, if it
// allowed the request, the pool's.
func OwnPace(who *Who) (own Who, pooled bool) {
	if !who.Rotating || who.Verified {
		return Who{}, false
	}
	own = *who
	own.Rotating, own.Pool = false, ""
	return own, true
}

// StrikeIdentity is who collects strikes and bans; scope names the handler
// that issues them (its site block), whatever Host the client sends.
//
// An unverified client's strikes are its own name's at its address, pooled
// or not: a ban never reaches a name that did not earn it.
func StrikeIdentity(scope string, who *Who, ip netip.Addr) state.Identity {
	if !who.Verified {
		id := state.NewIdentity(who.Name, false, ip)
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

// StateName is the name the request's Crawl-delay budget is kept under:
// Name, or for an unproven name of a rotating address its Pool
// (RotationName when none was given).
func (w *Who) StateName() string {
	switch {
	case !w.Rotating || w.Verified:
		return w.Name
	case w.Pool != "":
		return w.Pool
	}
	return RotationName
}

// UntrustedProxy reports whether a request from peer is forwarded for
// others by a proxy the server does not trust: peer is on a private or
// loopback address, the request carries X-Forwarded-For or Forwarded
// (forwarded), and the server did not take the client's address from them
// (trusted false). Every client behind such a proxy has its address, so
// address-level state (rotation's pooled budget) must not judge them as
// one; the handler and the audit ask the same question.
func UntrustedProxy(peer netip.Addr, forwarded, trusted bool) bool {
	return forwarded && !trusted && (peer.IsPrivate() || peer.IsLoopback())
}
