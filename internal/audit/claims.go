package audit

import (
	"net/netip"
	"sort"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// A crawler's requests are split by what verifying its claim found
// (agents.Verdict): one fake Googlebot's ban must not be read as the real
// Googlebot's. Each class keeps its counts and the addresses behind its
// refusals and its bans, in bounded tables (topAddrs), never a map of
// every address seen.

// topShown is how many addresses the report names per crawler, class and
// table; topKept is how many a table tracks to find them (more than shown,
// so that the ones shown are exact unless the traffic is very spread).
const (
	topShown = 5
	topKept  = 32
)

// claimCount is what one class of a crawler's claims (verified,
// unverified, spoofed) received.
type claimCount struct {
	requests, refused, banned, bans int64
	// The addresses refused most, and those that started most bans; nil
	// until the first.
	refusedBy, bannedBy *topAddrs
}

// tallyClaim adds one judged request to the class of its verdict. judge
// counts the bans it starts on the crawler (c.bans); the ones not yet
// tallied were started by this request.
func (c *crawler) tallyClaim(f *policy.Facts, as *policy.Assessment) {
	v := f.Client.Verdict
	if int(v) >= len(c.claims) {
		v = agents.Unverified
	}
	k := &c.claims[v]
	k.requests++
	started := c.bans - c.bansTallied
	c.bansTallied = c.bans
	k.bans += started
	refused := as.Refused()
	if refused {
		k.refused++
		if as.Reason == policy.Banned {
			k.banned++
		}
	}
	addr := f.Client.Addr
	if !addr.IsValid() {
		return
	}
	if refused {
		if k.refusedBy == nil {
			k.refusedBy = &topAddrs{}
		}
		k.refusedBy.add(addr, 1)
	}
	if started > 0 {
		if k.bannedBy == nil {
			k.bannedBy = &topAddrs{}
		}
		k.bannedBy.add(addr, started)
	}
}

// topAddrs finds the addresses counted most with the Space-Saving
// algorithm (Metwally, Agrawal and El Abbadi, 2005): it tracks topKept
// addresses; a new one takes the place of the least counted, inheriting
// its count as a possible overcount. Any address with more than 1/topKept
// of the total is sure to be kept.
type topAddrs struct {
	slots   []addrSlot
	evicted bool // an address gave its slot to another
}

type addrSlot struct {
	addr  netip.Addr
	count int64 // an upper bound: at most over too many
	over  int64 // the count of the evicted address this slot inherited
}

// add counts n for addr.
func (t *topAddrs) add(addr netip.Addr, n int64) {
	for i := range t.slots {
		if s := &t.slots[i]; s.addr == addr {
			s.count += n
			return
		}
	}
	if len(t.slots) < topKept {
		t.slots = append(t.slots, addrSlot{addr: addr, count: n})
		return
	}
	low := 0
	for i := range t.slots {
		if t.slots[i].count < t.slots[low].count {
			low = i
		}
	}
	least := t.slots[low].count
	t.evicted = true
	t.slots[low] = addrSlot{addr: addr, count: least + n, over: least}
}

// AddressCount is one address behind a crawler's refusals or bans.
type AddressCount struct {
	Addr  string `json:"addr"`
	Count int64  `json:"count"`
	// Overcount is set when the count is an estimate: the table of
	// addresses was full and the address took the place of another, of
	// whose count it may carry up to Overcount.
	Overcount int64 `json:"overcount,omitempty"`
}

// ClaimReport is the share of a crawler's judged requests whose claim
// verifying found verified, unverified or spoofed.
type ClaimReport struct {
	Verdict  string `json:"verdict"` // verified, unverified, spoofed
	Requests int64  `json:"requests"`
	Refused  int64  `json:"refused"` // for any reason
	Banned   int64  `json:"banned"`  // refused while banned
	Bans     int64  `json:"bans"`    // bans started
	// RefusedBy are the addresses refused most and BannedBy those that
	// started most bans (at most five each, the most first): those whose
	// counts are exact or certainly stand out from the rest.
	RefusedBy []AddressCount `json:"refused_by,omitempty"`
	BannedBy  []AddressCount `json:"banned_by,omitempty"`
	// ManyAddresses is set when the refusals or bans came from more
	// addresses than the audit tracks (32): the ones not named did not
	// stand out.
	ManyAddresses bool `json:"many_addresses,omitempty"`
}

// claimReports lists the classes that received requests, in the order
// verified, unverified, spoofed.
func (c *crawler) claimReports() []ClaimReport {
	var out []ClaimReport
	for _, v := range [...]agents.Verdict{agents.Verified, agents.Unverified, agents.Spoofed} {
		k := &c.claims[v]
		if k.requests == 0 {
			continue
		}
		out = append(out, ClaimReport{Verdict: v.String(), Requests: k.requests, Refused: k.refused,
			Banned: k.banned, Bans: k.bans, RefusedBy: k.refusedBy.report(), BannedBy: k.bannedBy.report(),
			ManyAddresses: k.refusedBy.spread() || k.bannedBy.spread()})
	}
	return out
}

// spread reports whether the table could not hold every address.
func (t *topAddrs) spread() bool { return t != nil && t.evicted }

// report returns the addresses counted most: those counted exactly, or
// whose count beyond any overcount exceeds the least counted slot (so
// they certainly stand out).
func (t *topAddrs) report() []AddressCount {
	if t == nil {
		return nil
	}
	least := int64(-1)
	if t.evicted {
		for _, s := range t.slots {
			if least < 0 || s.count < least {
				least = s.count
			}
		}
	}
	slots := make([]addrSlot, 0, len(t.slots))
	for _, s := range t.slots {
		if s.over == 0 || s.count-s.over > least {
			slots = append(slots, s)
		}
	}
	sort.Slice(slots, func(i, j int) bool {
		if slots[i].count != slots[j].count {
			return slots[i].count > slots[j].count
		}
		return slots[i].addr.Less(slots[j].addr)
	})
	if len(slots) > topShown {
		slots = slots[:topShown]
	}
	out := make([]AddressCount, len(slots))
	for i, s := range slots {
		out[i] = AddressCount{Addr: s.addr.String(), Count: s.count, Overcount: s.over}
	}
	return out
}
