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
	cache uaCache
}

// NewIdentifier returns an Identifier whose cache remembers up to cacheSize
// User-Agents (rounded up to a power of two); a cacheSize of zero or less
// means 8192.
func NewIdentifier(cacheSize int) *Identifier {
	if cacheSize <= 0 {
		cacheSize = defaultUACacheSize
	}
	n := uaCacheWays
	for n < cacheSize && n < 1<<26 {
		n <<= 1
	}
	return &Identifier{cache: uaCache{
		seed:  maphash.MakeSeed(),
		slots: make([]atomic.Pointer[uaCacheEntry], n),
		mask:  uint64(n/uaCacheWays - 1),
	}}
}

type uaCacheEntry struct {
	hash   uint64
	key    string
	shared Shared
}

type uaCache struct {
	seed  maphash.Seed
	slots []atomic.Pointer[uaCacheEntry]
	mask  uint64 // number of sets - 1
}

// lookup returns the cached entry for ua, or nil. Returning the entry
// rather than a copy of its Agent saves one copy on the hot path.
func (c *uaCache) lookup(ua string) *uaCacheEntry {
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

func (c *uaCache) get(ua string) (Agent, bool) {
	if e := c.lookup(ua); e != nil {
		return e.shared.Agent, true
	}
	return Agent{}, false
}

// put caches a for ua and returns the new entry, or nil when ua is too long
// to cache.
func (c *uaCache) put(ua string, a Agent) *uaCacheEntry {
	if len(ua) > maxCachedLen {
		return nil
	}
	h := maphash.String(c.seed, ua)
	set := c.slots[(h&c.mask)*uaCacheWays : (h&c.mask)*uaCacheWays+uaCacheWays]
	e := &uaCacheEntry{hash: h, key: ua, shared: newShared(a)}
	e.shared.Candidates = candidateTokens(ua)
	for i := range set {
		if set[i].CompareAndSwap(nil, e) {
			return e
		}
	}
	set[rand.IntN(uaCacheWays)].Store(e)
	return e
}
