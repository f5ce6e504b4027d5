package caddyrobots

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"time"

	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// Token rotation. A bot judged by the "*" group chooses its product token
// freely, so state kept per token would let a rogue buy a fresh budget and
// a fresh strike count with every new token. But state kept per address
// makes neighbours pay: two compliant crawlers behind one NAT, a
// university's proxy or a shared IPv6 /64 were throttled and banned for a
// rogue's requests. So throttle and strike state belongs to the pair (token,
// address), and rotation is recognised, not assumed:
//
//   - an address (IPv6: its /64) may present up to rotationResidents
//     distinct unverified names within rotationWindow: those are its
//     residents, each judged on its own state;
//   - a further name within the window marks the address as rotating, for
//     rotationHold after the last new name: every name that is not a
//     resident is then judged as one identity, the address's ("*"), with
//     one budget and one strike count;
//   - residents keep their own state while the address rotates: a compliant
//     crawler that was there first never pays for the rogue beside it. A
//     crawler that arrives on an address while it rotates is judged with the
//     rotation until the rotation ends (its refusal says so).
//
// So a rogue that rotates tokens gets at most rotationResidents+1 strike
// budgets before every new token from its address is banned, where it used
// to get one per token. The numbers: a NAT rarely carries more than a few
// distinct crawlers that visit one site within ten minutes, while a rotating
// rogue shows a new name on almost every request, so it is caught within
// five requests; an hour's hold outlasts the strike window (10 minutes by
// default), so a rogue that pauses does not start fresh.
//
// Detection is per Caddy instance (several instances behind a load balancer
// each learn it), in a bounded table: losing an entry only forgets a
// rotation, never invents one.
const (
	rotationResidents = policy.RotationResidents
	rotationWindow    = int64(policy.RotationWindow / time.Second) // on the coarse clock
	rotationHold      = int64(policy.RotationHold / time.Second)
	rotationMax       = 65536 // addresses remembered
)

// rotations remembers, per scope and address, the names it presented.
type rotations struct {
	seed maphash.Seed
	m    *boundedMap[rotationKey, *rotationEntry]
}

type rotationKey struct {
	scope  string
	prefix netip.Prefix
}

type rotationEntry struct {
	mu        sync.Mutex
	residents [rotationResidents]uint64 // hashes of the resident names
	n         int
	since     int64 // when the first resident came (coarse seconds)
	lastNew   int64 // when the last non-resident came
	rotating  bool
	names     int // distinct names seen while rotating, for explanations (capped)
}

// rotationTable is the process's rotation table: handlers key their
// entries by their scope, and a config reload keeps what was learnt.
var rotationTable = newRotations()

func newRotations() *rotations {
	return &rotations{seed: maphash.MakeSeed(), m: newBoundedMap[rotationKey, *rotationEntry](rotationMax)}
}

// rotationPrefix is the address's network as identities count it: IPv4
// /32, IPv6 /64.
func rotationPrefix(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap().WithZone("")
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// note records that name came from ip in scope at now (coarse seconds) and
// reports whether the address rotates with name as a non-resident: then
// the request is judged as the address's identity. With peek set nothing is
// recorded (the admin API's check).
func (r *rotations) note(scope string, ip netip.Addr, name string, now int64, peek bool) bool {
	if !ip.IsValid() {
		return false
	}
	k := rotationKey{scope: scope, prefix: rotationPrefix(ip)}
	h := maphash.String(r.seed, name) | 1
	e, ok := r.m.Get(k)
	if !ok {
		if peek {
			return false
		}
		e = &rotationEntry{}
		r.m.Put(k, e)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n > 0 && ((e.rotating && now-e.lastNew > rotationHold) || (!e.rotating && now-e.since > rotationWindow)) {
		if peek {
			return false
		}
		*e = rotationEntry{}
	}
	for i := 0; i < e.n; i++ {
		if e.residents[i] == h {
			return false
		}
	}
	if e.n < rotationResidents {
		if !peek {
			if e.n == 0 {
				e.since = now
			}
			e.residents[e.n] = h
			e.n++
		}
		return false
	}
	if !peek {
		e.rotating, e.lastNew = true, now
		e.names = min(e.names+1, 1<<20)
	}
	return true
}
