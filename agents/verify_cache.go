package agents

import (
	"fmt"
	"net/netip"

	lru "github.com/hashicorp/golang-lru/v2"
)

// cacheKey identifies one verification: a method (by index) and an address.
type cacheKey struct {
	method uint16
	ip     netip.Addr
}

// cacheEntry is a cached verdict and the time it expires, in nanoseconds
// on the Verifier's clock (Verifier.clock).
type cacheEntry struct {
	verdict Verdict
	expires int64
}

// resultCache is a bounded cache of verification results, each with its own
// expiry: golang-lru's Cache, which drops the least recently used entry
// when full.
//
// It is not golang-lru's expirable cache because a Verifier needs three
// lifetimes (verified, spoofed, failed) where that cache has one, expiry
// must follow the Verifier's clock (tests set it), and that cache starts a
// goroutine that never ends, one more at each config load.
type resultCache struct {
	lru *lru.Cache[cacheKey, cacheEntry]
}

// newResultCache returns a cache of at most size entries (size >= 1).
func newResultCache(size int) *resultCache {
	c, err := lru.New[cacheKey, cacheEntry](size)
	if err != nil {
		panic(fmt.Sprintf("agents: result cache of %d: %v", size, err)) // NewVerifier checks size
	}
	return &resultCache{lru: c}
}

// get returns the entry for k if it has not expired at now.
func (c *resultCache) get(k cacheKey, now int64) (Verdict, bool) {
	e, ok := c.lru.Get(k)
	if !ok || now >= e.expires {
		return Unverified, false
	}
	return e.verdict, true
}

// put stores v for k until expires.
func (c *resultCache) put(k cacheKey, v Verdict, expires int64) {
	c.lru.Add(k, cacheEntry{verdict: v, expires: expires})
}

// len returns the number of entries, expired ones included.
func (c *resultCache) len() int { return c.lru.Len() }
