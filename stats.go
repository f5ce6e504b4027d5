package caddyrobots

import (
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/caddyrobots/caddy-robots/agents"
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
	slots [statsSlots]statsSlot
}

const statsSlots = 256

type statsSlot struct {
	owner   atomic.Uintptr // address of the crawler's Identifier answer
	name    atomic.Pointer[string]
	refused atomic.Uint64
	retries atomic.Uint64
	_       [32]byte // the rare writes above on a line of their own
	allowed shardedCount
}

func newCrawlerStats() *crawlerStats { return &crawlerStats{} }

// slot returns the slot of the crawler whose Identifier answer is at p
// (agents.Shared starts with its Agent, so the Shared and its Agent give
// the same p), claiming a free one on first sight; nil when the few slots
// probed belong to others (the table is full: such requests go uncounted).
// The owner is compared by address only, so a slot cannot be shared by
// two crawlers.
func (s *crawlerStats) slot(p unsafe.Pointer, name string) *statsSlot {
	h := uintptr(p) * 0x9E3779B97F4A7C15 >> 56 // Fibonacci hashing: the top 8 bits
	for i := uintptr(0); i < 4; i++ {
		sl := &s.slots[(h+i)%statsSlots]
		switch o := sl.owner.Load(); {
		case o == uintptr(p):
			return sl
		case o == 0 && sl.owner.CompareAndSwap(0, uintptr(p)):
			n := name
			sl.name.Store(&n)
			return sl
		case sl.owner.Load() == uintptr(p):
			return sl
		}
	}
	return nil
}

// seen counts one decision for the crawler a.
func (s *crawlerStats) seen(a *agents.Shared, act action) {
	if s == nil {
		return
	}
	sl := s.slot(unsafe.Pointer(a), a.Name)
	if sl == nil {
		return
	}
	if act == actAllow {
		sl.allowed.add()
	} else {
		sl.refused.Add(1)
	}
}

// retried counts an immediate retry: a request that came back inside the
// Retry-After it was given. a is the Agent inside the Identifier's cached
// answer, so it finds the slot seen counts that answer in.
func (s *crawlerStats) retried(a *agents.Agent) {
	if s == nil {
		return
	}
	if sl := s.slot(unsafe.Pointer(a), a.Name); sl != nil {
		sl.retries.Add(1)
	}
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
	byName := map[string]*crawlerCount{}
	var out []crawlerCount
	for i := range s.slots {
		sl := &s.slots[i]
		name := sl.name.Load()
		if name == nil {
			continue
		}
		c := byName[*name]
		if c == nil {
			c = &crawlerCount{Name: *name}
			byName[*name] = c
		}
		c.Allowed += sl.allowed.load()
		c.Refused += sl.refused.Load()
		c.Retries += sl.retries.Load()
	}
	for _, c := range byName {
		if offenders && c.Refused == 0 {
			continue
		}
		out = append(out, *c)
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
