package caddyrobots

import (
	"sort"
	"sync/atomic"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// crawlerStats counts decisions per crawler name for the admin API's top
// crawlers and top offenders, in a fixed table: memory is bounded whatever
// names a flood sends, and counting costs one hash of the name and one
// atomic add on a cache line of the calling core's shard (allowed requests
// are counted on every bot request, so one shared line would bounce between
// cores). A slot belongs to one name; a name whose few probed slots all
// belong to others goes uncounted, so only the long tail of a full table
// is lost, never the crawlers that came first.
type crawlerStats struct {
	slots [statsSlots]statsSlot
}

const statsSlots = 256

type statsSlot struct {
	// key is the seeded 64-bit hash of the slot's crawler name and claim
	// (low bit set, so never 0); 0: free. Lookups compare keys only, so a
	// request reads this one line rather than the name's header and bytes
	// too.
	key     atomic.Uint64
	name    atomic.Pointer[statsName] // the crawler's name and claim, for reports; nil until the claim stores it
	refused atomic.Uint64
	retries atomic.Uint64
	_       [32]byte // the rare writes above on a line of their own
	allowed shardedCount
}

func newCrawlerStats() *crawlerStats { return &crawlerStats{} }

// statsName is what a slot counts: a crawler name, and whether the
// requests claimed it without proof.
type statsName struct {
	name  string
	claim claim
}

// claim says how far a request's name is proven, for the counts: an
// unverified "Googlebot" is counted apart from the real one, so that a
// report never credits Google with a scraper's requests.
type claim uint8

const (
	// claimPlain: the name is proven (verified, signed) or the crawler
	// publishes no way to prove it (its name is all anyone has).
	claimPlain claim = iota
	// claimUnverified: the crawler publishes a verification method and
	// this request could not be verified (a lookup failed or is pending).
	claimUnverified
	// claimSpoofed: the address is provably not the named operator's.
	claimSpoofed
)

// String returns "" (plain), "unverified claim" or "spoofed".
func (c claim) String() string {
	switch c {
	case claimUnverified:
		return "unverified claim"
	case claimSpoofed:
		return "spoofed"
	}
	return ""
}

// claimOf classifies a judged request's name.
func claimOf(a *agents.Shared, v agents.Verdict) claim {
	switch {
	case v == agents.Spoofed:
		return claimSpoofed
	case v == agents.Verified || a.Profile.Verify == "":
		return claimPlain
	}
	return claimUnverified
}

// noNameLabel is how reports show a bot whose User-Agent names nothing: an
// empty one, "-" or a bare "Mozilla/5.0".
const noNameLabel = "(no User-Agent name)"

// slot returns the slot of the crawler name, claiming a free one on first
// sight; nil when the few slots probed belong to others (the table is
// full: such requests go uncounted). Slots are keyed by name, not by the
// Identifier's answer: one crawler has many answers (one per User-Agent
// string, a new one for every signed request or uncached string). A name
// is known by its 64-bit hash under a seed drawn per process
// (agents.NameHash, computed once per cached answer): two names share a
// slot only if their hashes collide, a chance of 2^-64 per pair that
// nobody outside the process can aim for.
func (s *crawlerStats) slot(a *agents.Shared, c claim) *statsSlot {
	name, h := a.Name, a.NameHash
	key := (h ^ uint64(c)*0x9e3779b97f4a7c15) | 1
	for i := uint64(0); i < 4; i++ {
		sl := &s.slots[(h>>32+i)%statsSlots]
		k := sl.key.Load()
		if k == 0 {
			if sl.key.CompareAndSwap(0, key) {
				sl.name.Store(&statsName{name, c})
				return sl
			}
			k = sl.key.Load()
		}
		if k == key {
			return sl
		}
	}
	return nil
}

// seen counts one decision for the crawler a, with the verdict on its name.
func (s *crawlerStats) seen(a *agents.Shared, v agents.Verdict, act policy.Action) {
	if s == nil {
		return
	}
	sl := s.slot(a, claimOf(a, v))
	if sl == nil {
		return
	}
	if act == policy.Allow {
		sl.allowed.add()
	} else {
		sl.refused.Add(1)
	}
}

// retried counts an immediate retry: a request that came back inside the
// Retry-After it was given.
func (s *crawlerStats) retried(a *agents.Shared, v agents.Verdict) {
	if s == nil {
		return
	}
	if sl := s.slot(a, claimOf(a, v)); sl != nil {
		sl.retries.Add(1)
	}
}

// crawlerCount is one crawler's counts.
type crawlerCount struct {
	// Name is the crawler's name, or "(no User-Agent name)" for bots whose
	// User-Agent names nothing.
	Name string `json:"crawler"`
	// Claim is "unverified claim" when the crawler publishes a way to
	// verify it and these requests were not verified, "spoofed" when their
	// addresses are provably not its operator's; empty otherwise.
	Claim   string `json:"claim,omitempty"`
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
		sn := sl.name.Load()
		if sn == nil {
			continue
		}
		name := sn.name
		if name == "" {
			name = noNameLabel
		}
		c := crawlerCount{Name: name, Claim: sn.claim.String(), Allowed: sl.allowed.load(), Refused: sl.refused.Load(), Retries: sl.retries.Load()}
		if offenders && c.Refused == 0 {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if offenders {
			return a.Refused > b.Refused || (a.Refused == b.Refused && a.less(b))
		}
		return a.Allowed+a.Refused > b.Allowed+b.Refused || (a.Allowed+a.Refused == b.Allowed+b.Refused && a.less(b))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// less orders counts of equal size by name, then claim.
func (c crawlerCount) less(d crawlerCount) bool {
	return c.Name < d.Name || (c.Name == d.Name && c.Claim < d.Claim)
}
