package state

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Token rotation. A bot judged by the "*" group chooses its product token
// freely, so a Crawl-delay budget kept per token would let a rogue buy a
// fresh budget with every new token. But state kept per address makes
// neighbours pay: compliant crawlers behind one NAT, a university's proxy
// or a shared IPv6 /64, and a compliant crawler that arrives after a rogue,
// would be throttled or banned for someone else's requests. So callers keep
// state per (name, address), and Rotations decides which names of an
// address have a Crawl-delay budget of their own:
//
//   - residents: the first RotationResidents distinct names an address
//     (IPv6: its /64) presents within RotationWindow;
//   - graduates: up to RotationGraduates further names that fetched
//     /robots.txt from the address (Fetched), the one piece of evidence a
//     compliant crawler produces before its first page;
//   - every other name is unproven: Note reports it, and callers make all
//     the unproven names of the address share one pooled budget worth
//     RotationPoolNames names (see RotationPoolNames), and marks the
//     address as rotating until RotationHold after its last new name.
//
// Strikes and bans are never pooled: they stay per (name, address), so a
// name never inherits a ban it did not earn. A rogue's requests for what
// robots.txt forbids are refused by the rules whatever name it sends; what
// rotation buys it is rate, and that is bounded: at most
// RotationResidents + RotationGraduates + RotationPoolNames names' worth of
// Crawl-delay budget per address, however many names it shows.
//
// What this cannot tell apart: a rogue that fetches /robots.txt under each
// new name takes the graduate places of its address while its entry lives,
// and a compliant crawler arriving after that, beyond the residents, shares
// the pool with the rogue until the rotation ends. The numbers: a NAT rarely
// carries more than a few crawlers that visit one site within ten minutes,
// and the hold outlasts the default strike window, so a rogue that pauses
// does not start fresh.
const (
	RotationResidents = 4
	// RotationGraduates is how many names beyond the residents may earn a
	// budget of their own per address while its entry lives (its window,
	// or its rotation's hold) by fetching /robots.txt.
	RotationGraduates = 4
	// RotationPoolNames is how many names' worth of Crawl-delay budget the
	// unproven names of one address share: enough for that many compliant
	// crawlers at their own pace, whoever else is on the address.
	RotationPoolNames = 4
	RotationWindow    = 10 * time.Minute
	RotationHold      = time.Hour
	// DefaultRotationEntries bounds the addresses a Rotations remembers.
	DefaultRotationEntries = 65536
)

// Rotations remembers, per scope and address, the names that have a budget
// of their own there (residents and graduates). It is bounded: when full, an arbitrary entry of a shard is
// dropped, which only forgets a rotation, never invents one. Safe for
// concurrent use. Detection is per process: instances behind a load
// balancer each learn it.
type Rotations struct {
	seed     maphash.Seed
	mix      uint64 // from seed: keeps the shard of an address unguessable
	perShard int
	shards   [16]struct {
		sync.Mutex
		m map[rotationKey]*rotationEntry
	}
	// known remembers (scope, client, name) triples that Note found to be
	// residents, each until its address's entry could next be reset, so
	// that a crawler's repeated requests are answered by Resident with one
	// atomic load and no lock. A slot holds a 32-bit fingerprint of the
	// triple and the Unix second it stays valid until; a collision with
	// another triple's slot only costs a Note.
	known [knownSlots]atomic.Uint64
}

const knownSlots = 1 << 12

type rotationKey struct {
	scope  string
	prefix netip.Prefix
}

type rotationEntry struct {
	// own are the hashes of the names with a budget of their own: the
	// residents and the graduates, in the order they came.
	own       [RotationResidents + RotationGraduates]uint64
	n         int   // names in own
	residents int   // of which residents
	since     int64 // when the first resident came (Unix seconds)
	lastNew   int64 // when the last unproven name came
	rotating  bool
}

// has reports whether h is one of e's own names.
func (e *rotationEntry) has(h uint64) bool {
	for _, x := range e.own[:e.n] {
		if x == h {
			return true
		}
	}
	return false
}

// add makes h one of e's own names, a resident while there is room for
// one, else a graduate if graduate is set and there is room; it reports
// whether it did.
func (e *rotationEntry) add(h uint64, graduate bool, t int64) bool {
	switch {
	case e.residents < RotationResidents:
		if e.n == 0 {
			e.since = t
		}
		e.residents++
	case graduate && e.n-e.residents < RotationGraduates:
	default:
		return false
	}
	e.own[e.n] = h
	e.n++
	return true
}

// shardOf picks the shard of an address's entries from its bits and the
// seed: cheaper than the generic hash of the whole key, and spread across
// addresses, which is what varies; one address's entries for several
// scopes share a shard.
func (r *Rotations) shardOf(p netip.Prefix) uint64 {
	a := p.Addr().As16()
	x := binary.LittleEndian.Uint64(a[:8]) ^ binary.LittleEndian.Uint64(a[8:])*0x9e3779b97f4a7c15 ^ r.mix
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	return (x >> 32) % uint64(len(r.shards))
}

// NewRotations returns a Rotations remembering at most max addresses
// (DefaultRotationEntries when max <= 0).
func NewRotations(max int) *Rotations {
	if max <= 0 {
		max = DefaultRotationEntries
	}
	seed := maphash.MakeSeed()
	r := &Rotations{seed: seed, mix: maphash.String(seed, "shards"), perShard: max/16 + 1}
	for i := range r.shards {
		r.shards[i].m = map[rotationKey]*rotationEntry{}
	}
	return r
}

// knownKey hashes a (scope, client, name) triple: the slot is its low bits,
// the fingerprint its high 32.
func (r *Rotations) knownKey(scope, client, name string) (slot, fp uint64) {
	h := maphash.String(r.seed, client) ^ maphash.String(r.seed, name)*0x9e3779b97f4a7c15 ^ maphash.String(r.seed, scope)*0xbf58476d1ce4e5b9
	return h % knownSlots, h >> 32
}

// Resident reports whether Note or Fetched recently found name from client
// (the client's address as the server recorded it, unparsed) to be one of
// its address's own names in scope (a resident or a graduate), and that finding still holds at now: Note would
// answer false again, so the caller may skip it. False means only "not
// known": call Note.
func (r *Rotations) Resident(scope, client, name string, now time.Time) bool {
	if client == "" {
		return false
	}
	slot, fp := r.knownKey(scope, client, name)
	v := r.known[slot].Load()
	return v>>32 == fp && now.Unix() <= int64(uint32(v))
}

// Note records that name came from addr in scope at now and reports whether
// name is unproven there: neither a resident nor a graduate of the address.
// The request then spends the address's pooled budget (see
// RotationPoolNames); its strikes stay its own. With peek set nothing is
// recorded (a preview that must not change the state). An invalid address
// never pools.
//
// client, when not empty, is addr as the server recorded it: a name Note
// finds resident is remembered for Resident under it until the address's
// entry could next be reset (the end of its window, or of its hold), after
// which Note must see the name again to keep it resident.
func (r *Rotations) Note(scope string, addr netip.Addr, client, name string, now time.Time, peek bool) bool {
	return r.note(scope, addr, client, name, now, peek, false)
}

// Fetched records that name fetched /robots.txt from addr in scope at now:
// a name that is not yet one of the address's own becomes a resident if
// there is room for one, else a graduate if fewer than RotationGraduates
// names graduated while the entry lives. It reports whether name is still
// unproven (no room was left). client is as for Note.
//
// Fetching /robots.txt is evidence the client produced itself; the pace it
// keeps afterwards is judged on the budget it then has, its own.
func (r *Rotations) Fetched(scope string, addr netip.Addr, client, name string, now time.Time) bool {
	return r.note(scope, addr, client, name, now, false, true)
}

func (r *Rotations) note(scope string, addr netip.Addr, client, name string, now time.Time, peek, fetched bool) bool {
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	k := rotationKey{scope: scope, prefix: p}
	h := maphash.String(r.seed, name) | 1
	s := &r.shards[r.shardOf(p)]
	t := now.Unix()
	s.Lock()
	defer s.Unlock()
	e := s.m[k]
	if e == nil {
		if peek {
			return false
		}
		if len(s.m) >= r.perShard {
			for old := range s.m {
				delete(s.m, old)
				break
			}
		}
		e = &rotationEntry{}
		s.m[k] = e
	}
	if e.n > 0 && ((e.rotating && t-e.lastNew > int64(RotationHold/time.Second)) || (!e.rotating && t-e.since > int64(RotationWindow/time.Second))) {
		if peek {
			return false
		}
		*e = rotationEntry{}
	}
	if e.has(h) {
		if !peek {
			r.remember(scope, client, name, e)
		}
		return false
	}
	if peek {
		return e.residents >= RotationResidents
	}
	if e.add(h, fetched, t) {
		r.remember(scope, client, name, e)
		return false
	}
	e.rotating, e.lastNew = true, t
	return true
}

// remember records in known that name from client is a resident of e until
// e could next be reset. Called with e's shard locked.
func (r *Rotations) remember(scope, client, name string, e *rotationEntry) {
	if client == "" {
		return
	}
	until := e.since + int64(RotationWindow/time.Second)
	if e.rotating {
		until = e.lastNew + int64(RotationHold/time.Second)
	}
	if until <= 0 || until > 1<<32-1 {
		return
	}
	slot, fp := r.knownKey(scope, client, name)
	r.known[slot].Store(fp<<32 | uint64(until))
}
