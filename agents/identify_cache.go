package agents

import (
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
)

// defaultUACacheSize is the number of User-Agents an Identifier remembers
// when NewIdentifier is given a size of zero or less.
const defaultUACacheSize = 8192

// maxCachedLen is the longest User-Agent the cache keeps: longer ones are
// identified anew each time, so that a flood of huge random headers cannot
// make the cache hold much memory.
const maxCachedLen = 512

// uaCacheWays is the associativity of the cache: a User-Agent may live in one of
// this many slots.
const uaCacheWays = 4

// Identifier identifies User-Agents and caches the answers. Its cache has a
// fixed number of slots (set-associative, random replacement), so its memory
// is bounded whatever the traffic: at most the cache size times (512 bytes of
// key plus one Shared: the Agent, its name, its tokens and its candidate
// tokens, at most 16 words of the key). Reading a cached
// answer takes no lock and does not allocate. An Identifier is safe for
// concurrent use; the zero value is not usable, call NewIdentifier.
type Identifier struct {
	cache uaCache[Shared]
}

// NewIdentifier returns an Identifier whose cache remembers up to cacheSize
// User-Agents (rounded up to a power of two); a cacheSize of zero or less
// means 8192.
func NewIdentifier(cacheSize int) *Identifier {
	return &Identifier{cache: newUACache[Shared](cacheSize)}
}

// uaCacheEntry is one cached answer for a User-Agent: read only once
// stored.
type uaCacheEntry[V any] struct {
	hash uint64
	key  string
	val  V
}

// uaCache maps User-Agents to answers in a fixed number of slots
// (set-associative, random replacement): reading takes no lock and does not
// allocate, and User-Agents longer than maxCachedLen are never kept.
type uaCache[V any] struct {
	seed  maphash.Seed
	slots []atomic.Pointer[uaCacheEntry[V]]
	mask  uint64 // number of sets - 1
}

// newUACache returns a cache of size slots, rounded up to a power of two
// (defaultUACacheSize when size is zero or less).
func newUACache[V any](size int) uaCache[V] {
	if size <= 0 {
		size = defaultUACacheSize
	}
	n := uaCacheWays
	for n < size && n < 1<<26 {
		n <<= 1
	}
	return uaCache[V]{
		seed:  maphash.MakeSeed(),
		slots: make([]atomic.Pointer[uaCacheEntry[V]], n),
		mask:  uint64(n/uaCacheWays - 1),
	}
}

// lookup returns the cached entry for ua, or nil. Returning the entry
// rather than a copy of its value saves one copy on the hot path.
func (c *uaCache[V]) lookup(ua string) *uaCacheEntry[V] {
	if len(ua) > maxCachedLen {
		return nil
	}
	h := maphash.String(c.seed, ua)
	base := (h & c.mask) * uaCacheWays
	set := c.slots[base : base+uaCacheWays : base+uaCacheWays]
	for i := range set {
		if e := set[i].Load(); e != nil && e.hash == h && e.key == ua {
			return e
		}
	}
	return nil
}

// put caches v for ua and returns the new entry, or nil when ua is too
// long to cache.
func (c *uaCache[V]) put(ua string, v V) *uaCacheEntry[V] {
	if len(ua) > maxCachedLen {
		return nil
	}
	h := maphash.String(c.seed, ua)
	set := c.slots[(h&c.mask)*uaCacheWays : (h&c.mask)*uaCacheWays+uaCacheWays]
	e := &uaCacheEntry[V]{hash: h, key: ua, val: v}
	for i := range set {
		if set[i].CompareAndSwap(nil, e) {
			return e
		}
	}
	set[rand.IntN(uaCacheWays)].Store(e)
	return e
}
