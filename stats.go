package caddyrobots

import (
	"hash/maphash"
	"sort"
	"sync/atomic"
)

// crawlerStats counts decisions per crawler name for the admin API's top
// crawlers and top offenders, in a fixed table: memory is bounded whatever
// names a flood sends, and counting costs one hash and one atomic add on a
// cache line of the calling core's shard (allowed requests are counted on
// every bot request, so one shared line would bounce between cores). Two
// names that land in one slot share it (the first to arrive names it), so
// the counts are approximate for the long tail and exact for the few
// crawlers that matter.
type crawlerStats struct {
	seed  maphash.Seed
	slots [statsSlots]statsSlot
}

const statsSlots = 256

type statsSlot struct {
	name    atomic.Pointer[string]
	refused atomic.Uint64
	retries atomic.Uint64
	_       [40]byte // the rare writes above on a line of their own
	allowed shardedCount
}

func newCrawlerStats() *crawlerStats { return &crawlerStats{seed: maphash.MakeSeed()} }

// seen counts one decision for the crawler called name.
func (s *crawlerStats) seen(name string, act action) {
	if s == nil {
		return
	}
	sl := &s.slots[maphash.String(s.seed, name)%statsSlots]
	if sl.name.Load() == nil {
		n := name
		sl.name.CompareAndSwap(nil, &n)
	}
	if act == actAllow {
		sl.allowed.add()
	} else {
		sl.refused.Add(1)
	}
}

// retried counts an immediate retry: a request that came back inside the
// Retry-After it was given.
func (s *crawlerStats) retried(name string) {
	if s == nil {
		return
	}
	s.slots[maphash.String(s.seed, name)%statsSlots].retries.Add(1)
}

// crawlerCount is one crawler's counts.
type crawlerCount struct {
	Name    string `json:"crawler"`
	Allowed uint64 `json:"allowed"`
	Refused uint64 `json:"refused"`
	// Retries are requests that came back inside their Retry-After.
	Retries uint64 `json:"immediate_retries"`
}

// top returns the n crawlers with the most requests (by refused when
// offenders is set).
func (s *crawlerStats) top(n int, offenders bool) []crawlerCount {
	if s == nil {
		return nil
	}
	var out []crawlerCount
	for i := range s.slots {
		sl := &s.slots[i]
		name := sl.name.Load()
		if name == nil {
			continue
		}
		c := crawlerCount{Name: *name, Allowed: sl.allowed.load(), Refused: sl.refused.Load(), Retries: sl.retries.Load()}
		if offenders && c.Refused == 0 {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if offenders {
			return a.Refused > b.Refused || (a.Refused == b.Refused && a.Name < b.Name)
		}
		return a.Allowed+a.Refused > b.Allowed+b.Refused || (a.Allowed+a.Refused == b.Allowed+b.Refused && a.Name < b.Name)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
