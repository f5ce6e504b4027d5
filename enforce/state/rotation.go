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
// freely, so state kept per token would let a rogue buy a fresh budget and a
// fresh strike count with every new token. But state kept per address makes
// neighbours pay: two compliant crawlers behind one NAT, a university's
// proxy or a shared IPv6 /64 would be throttled and banned for a rogue's
// requests. So callers keep state per (name, address) and recognise
// rotation with Rotations:
//
//   - an address (IPv6: its /64) may present up to RotationResidents
//     distinct names within RotationWindow: those are its residents, each
//     judged on its own state;
//   - a further name within the window marks the address as rotating, until
//     RotationHold after its last new name: every name that is not a
//     resident is then judged as one identity, the address's, with one
//     budget and one strike count;
//   - residents keep their own state while the address rotates: a compliant
//     crawler that was there first never pays for the rogue beside it. A
//     crawler that arrives on an address while it rotates is judged with
//     the rotation until the rotation ends.
//
// A rogue that rotates tokens thus gets at most RotationResidents+1 strike
// budgets before every new token from its address is banned together. The
// numbers: a NAT rarely carries more than a few distinct crawlers that
// visit one site within ten minutes, while a rotating rogue shows a new
// name on almost every request and is caught within five; the hold
// outlasts the default strike window (10 minutes), so a rogue that pauses
// does not start fresh.
const (
	RotationResidents = 4
	RotationWindow    = 10 * time.Minute
	RotationHold      = time.Hour
	// DefaultRotationEntries bounds the addresses a Rotations remembers.
	DefaultRotationEntries = 65536
)

// Rotations remembers, per scope and address, the names the address
// presented. It is bounded: when full, an arbitrary entry of a shard is
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
	residents [RotationResidents]uint64 // hashes of the resident names
	n         int
	since     int64 // when the first resident came (Unix seconds)
	lastNew   int64 // when the last non-resident came
	rotating  bool
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

// Resident reports whether Note recently found name from client (the
// client's address as the server recorded it, unparsed) to be a resident of
// its address in scope, and that finding still holds at now: Note would
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
// the address rotates with name as a non-resident: the request is then
// judged as the address's identity. With peek set nothing is recorded (a
// preview that must not change the state). An invalid address never
// rotates.
//
// client, when not empty, is addr as the server recorded it: a name Note
// finds resident is remembered for Resident under it until the address's
// entry could next be reset (the end of its window, or of its hold), after
// which Note must see the name again to keep it resident.
func (r *Rotations) Note(scope string, addr netip.Addr, client, name string, now time.Time, peek bool) bool {
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
	for i := 0; i < e.n; i++ {
		if e.residents[i] == h {
			if !peek {
				r.remember(scope, client, name, e)
			}
			return false
		}
	}
	if e.n < RotationResidents {
		if !peek {
			if e.n == 0 {
				e.since = t
			}
			e.residents[e.n] = h
			e.n++
			r.remember(scope, client, name, e)
		}
		return false
	}
	if !peek {
		e.rotating, e.lastNew = true, t
	}
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
