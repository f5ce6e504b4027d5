package state

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"
	"strconv"
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
//   - every other name is unproven: Note reports it, marks the address as
//     rotating until RotationHold after its last new name, and the request
//     spends, besides its name's own budget, a pool worth
//     RotationPoolNames names (see RotationPoolNames) that Pool picks.
//
// The pool is picked by the client's shape, evidence the client produces
// itself with every request and that its name does not change: over TLS
// its handshake's JA4 fingerprint, over plain HTTP what the program sends
// besides its User-Agent and target (the names of its headers, the values
// of a few, its HTTP version; internal/policy.ClientShape). wget, wget2,
// HTTrack, curl, Python, Go and Scrapy all differ there, so a rogue that
// rotates names only drains the pool of the clients that look like it,
// and a crawler that asks for its start page before /robots.txt (wget
// does) finds its own pool unspent. The first RotationShapes shapes of
// an address's unproven names each have a pool of their own, named by the
// shape (the same in every process sharing a store); every later shape
// spends one overflow pool, RotationOverflow.
//
// Strikes and bans are never pooled: they stay per (name, address), so a
// name never inherits a ban it did not earn. A rogue's requests for what
// robots.txt forbids are refused by the rules whatever name it sends; what
// rotation buys it is rate, and that is bounded: at most
// RotationResidents + RotationGraduates + (RotationShapes+1) ×
// RotationPoolNames names' worth of Crawl-delay budget per address and
// process (4 + 4 + 5 × 4 = 28), however many names and shapes it shows.
//
// What this cannot tell apart:
//   - a rogue that sends exactly a compliant crawler's shape (the same
//     program, or the same headers and HTTP version, or over TLS the same
//     library's handshake) shares that crawler's pool: the server sees one
//     program under many names, and the crawler's unproven requests may be
//     throttled (never refused 403) while the rogue drains it;
//   - a rogue that rotates shapes too takes the address's RotationShapes
//     shape pools and then shares the overflow pool with every later
//     shape: a compliant crawler with a shape first seen after that, and
//     no resident or graduate place, shares the rogue's bounded rate;
//   - a rogue that fetches /robots.txt under each new name takes the
//     graduate places of its address while its entry lives.
//
// The numbers: a NAT rarely carries more than a few crawlers that visit
// one site within ten minutes, and the hold outlasts the default strike
// window, so a rogue that pauses does not start fresh.
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
	// RotationShapes is how many client shapes of an address's unproven
	// names have a pool of their own while its entry lives; the names of
	// every later shape share the overflow pool.
	RotationShapes = 4
	RotationWindow = 10 * time.Minute
	RotationHold   = time.Hour
	// DefaultRotationEntries bounds the addresses a Rotations remembers.
	DefaultRotationEntries = 65536
)

// RotationOverflow is the name of the pool that the unproven names of an
// address share when their shape came after the address's first
// RotationShapes shapes (Pool). A shape's own pool is named "*" and the
// shape in hexadecimal: neither is a product token, so a pool never shares
// a budget with a crawler's name.
const RotationOverflow = "*"

// Rotations remembers, per scope and address, the names that have a budget
// of their own there (residents and graduates) and the shapes of its
// unproven names that have a pool of their own. It is bounded: when full,
// an arbitrary entry of a shard is dropped, which only forgets a rotation,
// never invents one. Safe for
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
	// pools are the shapes of the unproven names that have a pool of
	// their own; nil until the address's first unproven name.
	pools *rotationPools
}

// rotationPools are the first RotationShapes shapes of an address's
// unproven names and the names of their pools, made once per shape.
type rotationPools struct {
	shapes [RotationShapes]uint64
	names  [RotationShapes]string
	n      int
}

// poolName is the name of the pool of shape.
func poolName(shape uint64) string {
	return RotationOverflow + strconv.FormatUint(shape, 16)
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
// The request then spends one of the address's pools as well as its name's
// budget (Pool says which); its strikes stay its own. With peek set nothing is
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
	k, ok := rotationKeyOf(scope, addr)
	if !ok {
		return false
	}
	h := maphash.String(r.seed, name) | 1
	s := &r.shards[r.shardOf(k.prefix)]
	t := now.Unix()
	s.Lock()
	defer s.Unlock()
	e := r.entry(s.m, k, t, peek)
	if e == nil {
		return false
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

// Pool returns the name of the pool that an unproven name of addr in scope
// (one Note reported at now) spends, given its client's shape: the shape's
// own pool while it is one of the address's first RotationShapes shapes
// (or would be, with room left), else RotationOverflow. With peek set
// nothing is recorded. The pool is the address's: callers key it with the
// address (see the doc comment at the top of this file).
func (r *Rotations) Pool(scope string, addr netip.Addr, shape uint64, now time.Time, peek bool) string {
	k, ok := rotationKeyOf(scope, addr)
	if !ok {
		return RotationOverflow
	}
	s := &r.shards[r.shardOf(k.prefix)]
	s.Lock()
	defer s.Unlock()
	e := r.entry(s.m, k, now.Unix(), peek)
	if e == nil {
		return poolName(shape) // a peek at an address with room for every shape
	}
	ps := e.pools
	if ps == nil {
		if peek {
			return poolName(shape)
		}
		ps = &rotationPools{}
		e.pools = ps
	}
	for i, x := range ps.shapes[:ps.n] {
		if x == shape {
			return ps.names[i]
		}
	}
	switch {
	case ps.n == RotationShapes:
		return RotationOverflow
	case peek:
		return poolName(shape)
	}
	ps.shapes[ps.n], ps.names[ps.n] = shape, poolName(shape)
	ps.n++
	return ps.names[ps.n-1]
}

// rotationKeyOf is the key of addr's entries in scope: its IPv4 address or
// its IPv6 /64. False for an invalid address, which never rotates.
func rotationKeyOf(scope string, addr netip.Addr) (rotationKey, bool) {
	if !addr.IsValid() {
		return rotationKey{}, false
	}
	addr = addr.Unmap().WithZone("")
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	p, _ := addr.Prefix(bits)
	return rotationKey{scope: scope, prefix: p}, true
}

// entry returns k's entry in m at t (Unix seconds), made or reset as its
// window or hold says; with peek, nil when the entry does not exist or is
// due for a reset, and nothing is changed. Called with m's shard locked.
func (r *Rotations) entry(m map[rotationKey]*rotationEntry, k rotationKey, t int64, peek bool) *rotationEntry {
	e := m[k]
	if e == nil {
		if peek {
			return nil
		}
		if len(m) >= r.perShard {
			for old := range m {
				delete(m, old)
				break
			}
		}
		e = &rotationEntry{}
		m[k] = e
	}
	if e.n > 0 && ((e.rotating && t-e.lastNew > int64(RotationHold/time.Second)) || (!e.rotating && t-e.since > int64(RotationWindow/time.Second))) {
		if peek {
			return nil
		}
		*e = rotationEntry{}
	}
	return e
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
