package caddyrobots

import (
	"hash/maphash"
	"sync"
)

// boundedMap is a concurrent map with a hard cap on entries: when a shard is
// full, an arbitrary entry of that shard is dropped. It keeps memory bounded
// under a flood of distinct keys; losing an entry only costs a little grace.
type boundedMap[K comparable, V any] struct {
	seed   maphash.Seed
	shards [16]struct {
		sync.Mutex
		m map[K]V
	}
	perShard int
}

func newBoundedMap[K comparable, V any](max int) *boundedMap[K, V] {
	b := &boundedMap[K, V]{seed: maphash.MakeSeed(), perShard: max/16 + 1}
	for i := range b.shards {
		b.shards[i].m = make(map[K]V)
	}
	return b
}

func (b *boundedMap[K, V]) shard(k K) int {
	return int(maphash.Comparable(b.seed, k) % uint64(len(b.shards)))
}

// Get returns the value for k.
func (b *boundedMap[K, V]) Get(k K) (V, bool) {
	s := &b.shards[b.shard(k)]
	s.Lock()
	v, ok := s.m[k]
	s.Unlock()
	return v, ok
}

// Put stores v for k, evicting an arbitrary entry when the shard is full.
func (b *boundedMap[K, V]) Put(k K, v V) {
	s := &b.shards[b.shard(k)]
	s.Lock()
	defer s.Unlock()
	if _, ok := s.m[k]; !ok && len(s.m) >= b.perShard {
		for old := range s.m {
			delete(s.m, old)
			break
		}
	}
	s.m[k] = v
}
