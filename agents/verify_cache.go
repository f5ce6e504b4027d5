package agents

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
)

// cacheKey identifies one verification: an address and a method (by index).
type cacheKey struct {
	hi, lo uint64 // the 16 bytes of netip.Addr.As16, big-endian halves
	method uint16
}

func newCacheKey(method uint16, ip netip.Addr) cacheKey {
	b := ip.As16()
	return cacheKey{
		hi:     binary.BigEndian.Uint64(b[:8]),
		lo:     binary.BigEndian.Uint64(b[8:]),
		method: method,
	}
}

// cacheWays is the associativity of the cache: a key may live in any of the
// cacheWays slots of its bucket.
const cacheWays = 4

// cacheLocks is the number of writer mutexes striped over the buckets.
const cacheLocks = 32

// slotUsed marks a slot in use in cacheSlot.meta.
const slotUsed = 1 << 63

// cacheSlot is one entry. Its fields are atomics so that readers can read
// them without the lock (see resultCache).
type cacheSlot struct {
	hi, lo  atomic.Uint64
	meta    atomic.Uint64 // slotUsed | method<<8 | verdict
	expires atomic.Int64  // the Verifier's clock, in nanoseconds
}

type cacheBucket struct {
	seq   atomic.Uint32 // odd while a writer updates the bucket
	slots [cacheWays]cacheSlot
}

// resultCache is a bounded, set-associative cache of verification results
// with expiry. Each key hashes (with a random per-cache seed, so clients
// cannot aim at one bucket) to a bucket of cacheWays slots; a new entry
// takes its own old slot, a free or expired slot, or else the slot closest
// to expiry. It never holds more entries than it has slots.
//
// Readers take no lock: a bucket carries a sequence number that writers
// make odd while they update it (under a striped mutex), and a reader
// retries if the number was odd or changed while it read. Lookups and
// insertions are O(1) and allocate nothing.
type resultCache struct {
	buckets []cacheBucket
	ways    int // cacheWays, or fewer for caches smaller than one bucket
	seed    uint64
	locks   [cacheLocks]struct {
		sync.Mutex
		_ [56]byte // one cache line each
	}
}

// newResultCache returns a cache of at most size entries (size >= 1).
func newResultCache(size int) *resultCache {
	return newResultCacheSeed(size, rand.Uint64())
}

// newResultCacheSeed is newResultCache with a given hash seed: caches of
// one size and seed put a key in the same bucket (see getAt).
func newResultCacheSeed(size int, seed uint64) *resultCache {
	c := &resultCache{ways: cacheWays, seed: seed}
	n := size / cacheWays
	if n == 0 {
		n, c.ways = 1, size
	}
	c.buckets = make([]cacheBucket, n)
	return c
}

// bucket returns the bucket index of k; its writer lock is
// locks[index%cacheLocks].
func (c *resultCache) bucket(k cacheKey) int {
	h := (k.lo ^ c.seed) * 0x9e3779b97f4a7c15
	h ^= (k.hi + uint64(k.method)<<32) * 0xc2b2ae3d27d4eb4f
	h ^= h >> 31
	h *= 0x94d049bb133111eb
	b, _ := bits.Mul64(h, uint64(len(c.buckets))) // uniform in [0, len)
	return int(b)
}

// get returns the unexpired entry for k.
func (c *resultCache) get(k cacheKey, now int64) (Verdict, bool) {
	return c.getAt(c.bucket(k), k, now)
}

// getAt is get for k in bucket bi, which must be c.bucket(k) or that of a
// cache of the same size and seed.
func (c *resultCache) getAt(bi int, k cacheKey, now int64) (Verdict, bool) {
	b := &c.buckets[bi]
	want := slotUsed | uint64(k.method)<<8
	for spins := 0; ; spins++ {
		seq := b.seq.Load()
		if seq&1 == 0 {
			found := false
			var meta uint64
			var expires int64
			for i := 0; i < c.ways; i++ {
				s := &b.slots[i]
				if m := s.meta.Load(); m&^0xff == want && s.lo.Load() == k.lo && s.hi.Load() == k.hi {
					meta, expires, found = m, s.expires.Load(), true
					break
				}
			}
			if b.seq.Load() == seq {
				if !found || now >= expires {
					return Unverified, false
				}
				return Verdict(meta & 0xff), true
			}
		}
		if spins > 4 {
			runtime.Gosched() // a writer was preempted mid-update
		}
	}
}

// put stores v for k until expires.
func (c *resultCache) put(k cacheKey, v Verdict, expires int64, now int64) {
	bi := c.bucket(k)
	mu := &c.locks[bi%cacheLocks]
	mu.Lock()
	defer mu.Unlock()
	b := &c.buckets[bi]
	want := slotUsed | uint64(k.method)<<8
	slot := -1
	for i := 0; i < c.ways && slot < 0; i++ { // the key itself
		s := &b.slots[i]
		if s.meta.Load()&^0xff == want && s.lo.Load() == k.lo && s.hi.Load() == k.hi {
			slot = i
		}
	}
	for i := 0; i < c.ways && slot < 0; i++ { // a free or expired slot
		s := &b.slots[i]
		if s.meta.Load()&slotUsed == 0 || now >= s.expires.Load() {
			slot = i
		}
	}
	if slot < 0 { // the slot closest to expiry
		slot = 0
		for i := 1; i < c.ways; i++ {
			if b.slots[i].expires.Load() < b.slots[slot].expires.Load() {
				slot = i
			}
		}
	}
	s := &b.slots[slot]
	b.seq.Add(1) // odd: readers retry
	s.meta.Store(0)
	s.hi.Store(k.hi)
	s.lo.Store(k.lo)
	s.expires.Store(expires)
	s.meta.Store(want | uint64(v))
	b.seq.Add(1) // even again
}

// len returns the number of slots in use, expired entries included.
func (c *resultCache) len() int {
	n := 0
	for bi := range c.buckets {
		for i := range c.ways {
			if c.buckets[bi].slots[i].meta.Load()&slotUsed != 0 {
				n++
			}
		}
	}
	return n
}

// capacity returns the number of slots.
func (c *resultCache) capacity() int { return len(c.buckets) * c.ways }
