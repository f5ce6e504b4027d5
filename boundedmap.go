package caddyrobots

import (
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
)

// boundedMap is a concurrent map with a hard cap on entries: when it is
// full, the least recently used entry is dropped. It keeps memory bounded
// under a flood of distinct keys; losing an entry only costs a little grace.
// It is golang-lru's Cache under the two names its callers use.
type boundedMap[K comparable, V any] struct {
	c *lru.Cache[K, V]
}

// newBoundedMap returns a boundedMap of at most max entries (max > 0).
func newBoundedMap[K comparable, V any](max int) *boundedMap[K, V] {
	c, err := lru.New[K, V](max)
	if err != nil {
		panic(fmt.Sprintf("caddyrobots: boundedMap(%d): %v", max, err)) // max is a constant of this package
	}
	return &boundedMap[K, V]{c: c}
}

// Get returns the value for k.
func (b *boundedMap[K, V]) Get(k K) (V, bool) { return b.c.Get(k) }

// Put stores v for k, evicting the least recently used entry when full.
func (b *boundedMap[K, V]) Put(k K, v V) { b.c.Add(k, v) }
