package audit

import (
	"net/netip"
	"sort"

	"github.com/caddyrobots/caddy-robots/agents"
	"github.com/caddyrobots/caddy-robots/internal/policy"
)

// A crawler's requests are split by what verifying its claim found
// (agents.Verdict): one fake Googlebot's ban must not be read as the real
// Googlebot's. Each class keeps its counts and the addresses refused most,
// in a bounded table (topAddrs), never a map of every address seen.

// topShown is how many addresses the report names per crawler and class;
// topKept is how many the table tracks to find them (more than shown, so
// that the ones shown are exact unless the traffic is very spread).
const (
	topShown = 5
	topKept  = 32
)

// claimCount is what one class of a crawler's claims (verified,
// unverified, spoofed) received.
type claimCount struct {
	requests, refused, banned, bans int64
	top                             *topAddrs // nil until the first refusal
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
	if !refused && started == 0 {
		return
	}
	if refused {
		k.refused++
		if as.Reason == policy.Banned {
			k.banned++
		}
	}
	if !f.Client.Addr.IsValid() {
		return
	}
	if k.top == nil {
		k.top = &topAddrs{}
	}
	k.top.add(f.Client.Addr, refused, started)
}

// topAddrs finds the addresses refused most with the Space-Saving
// algorithm (Metwally, Agrawal and El Abbadi, 2005): it tracks topKept
// addresses; a new one takes the place of the least refused, inheriting
// its count as a possible overcount. Any address refused more than
// 1/topKept of the class's refusals is sure to be kept.
type topAddrs struct {
	slots   []addrSlot
	evicted bool // an address gave its slot to another
}

type addrSlot struct {
	addr    netip.Addr
	refused int64 // an upper bound: over counts at most over
	over    int64 // refusals of the evicted addresses this slot inherited
	bans    int64 // bans started since the address took the slot
}

// add counts a request of addr: refused or not, and the bans it started.
func (t *topAddrs) add(addr netip.Addr, refused bool, bans int64) {
	var n int64
	if refused {
		n = 1
	}
	for i := range t.slots {
		if s := &t.slots[i]; s.addr == addr {
			s.refused += n
			s.bans += bans
			return
		}
	}
	if len(t.slots) < topKept {
		t.slots = append(t.slots, addrSlot{addr: addr, refused: n, bans: bans})
		return
	}
	low := 0
	for i := range t.slots {
		if t.slots[i].refused < t.slots[low].refused {
			low = i
		}
	}
	least := t.slots[low].refused
	t.evicted = true
	t.slots[low] = addrSlot{addr: addr, refused: least + n, over: least, bans: bans}
}

// AddressCount is one address behind a crawler's refusals.
type AddressCount struct {
	Addr    string `json:"addr"`
	Refused int64  `json:"refused"` // requests refused (at most Overcount more than the truth)
	Bans    int64  `json:"bans"`    // bans it started
	// Overcount is set when the address's counts are estimates: the table
	// of addresses was full and the address took the place of others, of
	// whose refusals it may carry up to Overcount (its Bans count only
	// from then).
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
	// TopAddresses are the addresses refused most (at most five), the
	// most refused first: those whose counts are exact, or that certainly
	// stand out from the rest, and those that started a ban.
	TopAddresses []AddressCount `json:"top_addresses,omitempty"`
	// ManyAddresses is set when the refusals came from more addresses
	// than the audit tracks (32): the ones not named did not stand out.
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
			Banned: k.banned, Bans: k.bans, TopAddresses: k.top.report(), ManyAddresses: k.top != nil && k.top.evicted})
	}
	return out
}

// report returns the addresses refused most: those counted exactly, or
// whose refusals beyond any overcount exceed the least counted slot (so
// they certainly stand out), and those that started a ban.
func (t *topAddrs) report() []AddressCount {
	if t == nil {
		return nil
	}
	least := int64(-1)
	if t.evicted {
		for _, s := range t.slots {
			if least < 0 || s.refused < least {
				least = s.refused
			}
		}
	}
	slots := make([]addrSlot, 0, len(t.slots))
	for _, s := range t.slots {
		sure := s.over == 0 || s.refused-s.over > least
		if s.bans > 0 || s.refused > 0 && sure {
			slots = append(slots, s)
		}
	}
	sort.Slice(slots, func(i, j int) bool {
		a, b := slots[i], slots[j]
		if a.bans > 0 != (b.bans > 0) {
			return a.bans > 0
		}
		if a.refused != b.refused {
			return a.refused > b.refused
		}
		if a.bans != b.bans {
			return a.bans > b.bans
		}
		return a.addr.Less(b.addr)
	})
	if len(slots) > topShown {
		slots = slots[:topShown]
	}
	out := make([]AddressCount, len(slots))
	for i, s := range slots {
		out[i] = AddressCount{Addr: s.addr.String(), Refused: s.refused, Bans: s.bans, Overcount: s.over}
	}
	return out
}
