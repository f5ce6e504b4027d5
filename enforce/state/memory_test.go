package state

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	ctx0  = context.Background()
	epoch = time.Unix(1_700_000_000, 0)
)

func ip4(i uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)})
}

func mustThrottle(t testing.TB, s Store, id Identity, T time.Duration, now time.Time) ThrottleResult {
	t.Helper()
	r, err := s.Throttle(ctx0, id, T, now)
	if err != nil {
		t.Fatalf("Throttle: %v", err)
	}
	return r
}

// testInfo is the StrikeInfo that the tests' strikes of id carry.
func testInfo(id Identity) StrikeInfo {
	return StrikeInfo{Crawler: "TestBot", Token: id.Name, Line: 7, Version: "v1", Scope: "test.example on :443"}
}

func mustStrike(t testing.TB, s Store, id Identity, p StrikePolicy, now time.Time) BanResult {
	t.Helper()
	r, err := s.Strike(ctx0, id, p, now, testInfo(id))
	if err != nil {
		t.Fatalf("Strike: %v", err)
	}
	return r
}

func TestTolerance(t *testing.T) {
	for _, c := range []struct{ T, want time.Duration }{
		{0, 0}, {-time.Second, 0}, {100 * time.Millisecond, 50 * time.Millisecond},
		{time.Second, 500 * time.Millisecond}, {2 * time.Second, time.Second}, {time.Minute, time.Second},
	} {
		if got := Tolerance(c.T); got != c.want {
			t.Errorf("Tolerance(%v) = %v, want %v", c.T, got, c.want)
		}
	}
}

func TestThrottleExactSpacingPasses(t *testing.T) {
	for _, T := range []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Hour} {
		m := NewMemory(MemoryConfig{})
		id := NewIdentity("bot", false, ip4(1))
		for k := range 1000 {
			if r := mustThrottle(t, m, id, T, epoch.Add(time.Duration(k)*T)); !r.Allowed {
				t.Fatalf("T=%v: request %d at exact spacing refused (retry %v)", T, k, r.RetryAfter)
			}
		}
	}
}

func TestThrottleJitterPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, T := range []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second, 30 * time.Second} {
		tau := Tolerance(T)
		for name, jitter := range map[string]func() time.Duration{
			// each request up to τ early relative to its schedule
			"early": func() time.Duration { return -time.Duration(rng.Int64N(int64(tau) + 1)) },
			// symmetric jitter ±τ/2: every gap is between T-τ and T+τ
			"symmetric": func() time.Duration { return time.Duration(rng.Int64N(int64(tau)+1)) - tau/2 },
		} {
			m := NewMemory(MemoryConfig{})
			id := NewIdentity("bot", true, netip.Addr{})
			prev := epoch
			minGap := time.Duration(1 << 62)
			for k := range 1000 {
				at := epoch.Add(time.Duration(k+1)*T + jitter())
				if k > 0 {
					minGap = min(minGap, at.Sub(prev))
				}
				prev = at
				if r := mustThrottle(t, m, id, T, at); !r.Allowed {
					t.Fatalf("T=%v %s: request %d refused (retry %v)", T, name, k, r.RetryAfter)
				}
			}
			if mean := prev.Sub(epoch) / 1000; mean < T-tau {
				t.Fatalf("mean gap %v", mean)
			}
			t.Logf("T=%v τ=%v %s jitter: 1000 requests passed, shortest gap %v", T, tau, name, minGap)
		}
	}
}

func TestThrottleImmediateSecondRefusedAndRetryAfterExact(t *testing.T) {
	for _, T := range []time.Duration{100 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, time.Minute} {
		m := NewMemory(MemoryConfig{})
		id := NewIdentity("bot", false, ip4(7))
		tau := Tolerance(T)
		if r := mustThrottle(t, m, id, T, epoch); !r.Allowed {
			t.Fatalf("T=%v: first request refused", T)
		}
		r := mustThrottle(t, m, id, T, epoch)
		if r.Allowed {
			t.Fatalf("T=%v: immediate second request allowed", T)
		}
		if want := T - tau; r.RetryAfter != want {
			t.Fatalf("T=%v: RetryAfter = %v, want %v", T, r.RetryAfter, want)
		}
		// Refusals spend nothing: hammer, then come back exactly on time.
		for i := range 100 {
			mustThrottle(t, m, id, T, epoch.Add(time.Duration(i)*r.RetryAfter/100))
		}
		if r2 := mustThrottle(t, m, id, T, epoch.Add(r.RetryAfter-time.Nanosecond)); r2.Allowed || r2.RetryAfter != time.Nanosecond {
			t.Fatalf("T=%v: 1ns early: %+v, want refused with 1ns", T, r2)
		}
		if r2 := mustThrottle(t, m, id, T, epoch.Add(r.RetryAfter)); !r2.Allowed {
			t.Fatalf("T=%v: request after RetryAfter refused: %+v", T, r2)
		}
	}
}

func TestThrottleSustainedRateBounded(t *testing.T) {
	// A client sending as fast as it may gets at most 1 + (W+τ)/T requests
	// in any window W: the tolerance absorbs jitter, it is not a burst.
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("bot", false, ip4(9))
	T := 5 * time.Second
	allowed := 0
	for ms := range 60_000 {
		if mustThrottle(t, m, id, T, epoch.Add(time.Duration(ms)*time.Millisecond)).Allowed {
			allowed++
		}
	}
	if max := 1 + int((60*time.Second+Tolerance(T))/T); allowed > max {
		t.Fatalf("allowed %d in 60s at T=%v, max %d", allowed, T, max)
	}
}

func TestThrottleZeroIntervalKeepsNoState(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	for i := range 100 {
		if r := mustThrottle(t, m, NewIdentity("bot", false, ip4(uint32(i))), 0, epoch); !r.Allowed {
			t.Fatal("T=0 refused")
		}
	}
	if m.Len() != 0 {
		t.Fatalf("Len = %d after T=0 decisions", m.Len())
	}
}

func TestStrikesBanAndExpiry(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("bad", false, ip4(66))
	p := StrikePolicy{Strikes: 3, Window: time.Minute, Ban: time.Hour}
	now := epoch
	for i := 1; i <= 2; i++ {
		r := mustStrike(t, m, id, p, now)
		if r.Banned || r.Strikes != i {
			t.Fatalf("strike %d: %+v", i, r)
		}
		now = now.Add(10 * time.Second)
	}
	r := mustStrike(t, m, id, p, now)
	if !r.Banned || r.Strikes != 3 || !r.Until.Equal(now.Add(time.Hour)) {
		t.Fatalf("third strike: %+v", r)
	}
	until := r.Until
	// Strikes during a ban do not count and do not extend it.
	r = mustStrike(t, m, id, p, now.Add(time.Minute))
	if !r.Banned || !r.Until.Equal(until) {
		t.Fatalf("strike during ban: %+v", r)
	}
	b, _ := m.Banned(ctx0, id, until.Add(-time.Nanosecond))
	if !b.Banned || !b.Until.Equal(until) {
		t.Fatalf("Banned just before the end: %+v", b)
	}
	b, _ = m.Banned(ctx0, id, until)
	if b.Banned || b.Strikes != 0 {
		t.Fatalf("Banned at the end: %+v", b)
	}
	// The count starts afresh after a ban.
	if r := mustStrike(t, m, id, p, until); r.Banned || r.Strikes != 1 {
		t.Fatalf("first strike after ban: %+v", r)
	}
	// The window is fixed from the first strike: two strikes, window ends,
	// the next strike is number one again.
	id2 := NewIdentity("bad", false, ip4(67))
	mustStrike(t, m, id2, p, epoch)
	mustStrike(t, m, id2, p, epoch.Add(59*time.Second))
	if r := mustStrike(t, m, id2, p, epoch.Add(time.Minute)); r.Banned || r.Strikes != 1 {
		t.Fatalf("strike after window: %+v", r)
	}
	if b, _ := m.Banned(ctx0, id2, epoch.Add(time.Minute)); b.Banned || b.Strikes != 1 {
		t.Fatalf("Banned in window: %+v", b)
	}
}

func TestStrikesOffAndDefaults(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("x", false, ip4(1))
	for range 100 {
		if r := mustStrike(t, m, id, StrikePolicy{}, epoch); r.Banned || r.Strikes != 0 || !r.Until.IsZero() || !r.Info.IsZero() {
			t.Fatalf("strikes off: %+v", r)
		}
	}
	if m.Len() != 0 {
		t.Fatalf("strikes off kept %d entries", m.Len())
	}
	p := DefaultStrikePolicy()
	if p != (StrikePolicy{10, 10 * time.Minute, time.Hour}) || p.Validate() != nil {
		t.Fatalf("DefaultStrikePolicy = %+v", p)
	}
	if (StrikePolicy{Strikes: 1}).Validate() == nil {
		t.Fatal("Validate accepted a zero window")
	}
	var r BanResult
	for i := range 10 {
		r = mustStrike(t, m, id, StrikePolicy{Strikes: 10}, epoch.Add(time.Duration(i)*time.Minute))
	}
	if !r.Banned || !r.Until.Equal(epoch.Add(9*time.Minute+time.Hour)) {
		t.Fatalf("zero durations did not fall back to defaults: %+v", r)
	}
}

func TestMemoryDeadEntriesAreFreed(t *testing.T) {
	m := NewMemory(MemoryConfig{MaxEntries: 100, Shards: 1})
	for i := range 50 {
		mustThrottle(t, m, NewIdentity("bot", false, ip4(uint32(i))), time.Second, epoch)
	}
	if m.Len() != 50 {
		t.Fatalf("Len = %d", m.Len())
	}
	later := epoch.Add(2 * time.Second)
	for i := range 200 {
		mustThrottle(t, m, NewIdentity("other", false, ip4(uint32(1000+i))), time.Second, later.Add(time.Duration(i)*10*time.Second))
	}
	if n := m.Len(); n > 2 {
		t.Fatalf("dead entries not freed: Len = %d", n)
	}
}

func TestMemoryEvictionOrder(t *testing.T) {
	T := time.Hour // keeps every entry alive
	v := func(n string) Identity { return NewIdentity(n, true, netip.Addr{}) }
	u := func(i uint32) Identity { return NewIdentity("u", false, ip4(i)) }
	m := NewMemory(MemoryConfig{MaxEntries: 4, Shards: 1})
	now := epoch
	use := func(id Identity) { now = now.Add(time.Millisecond); mustThrottle(t, m, id, T, now) }
	has := func(id Identity) bool {
		h := m.hash(id)
		i, ok := m.shard(h).idx[h]
		return ok && m.shard(h).entries[i].id == id
	}
	use(v("A"))
	use(u(1))
	use(u(2))
	use(v("B"))
	use(u(1)) // u2 is now the least recently used unverified entry
	use(u(3))
	if has(u(2)) || !has(u(1)) || !has(v("A")) || !has(v("B")) {
		t.Fatal("first eviction should take u2, the LRU unverified entry")
	}
	use(u(4)) // evicts u1
	use(u(5)) // evicts u3
	if has(u(1)) || has(u(3)) || !has(v("A")) || !has(v("B")) {
		t.Fatal("verified entries evicted while unverified ones were left")
	}
	// Only verified entries left besides the newest: fill with verified.
	use(v("C")) // evicts u4
	use(v("D")) // evicts u5, the last unverified
	use(v("E")) // no unverified left: evicts A, the LRU verified
	if has(v("A")) || !has(v("B")) || !has(v("E")) || m.Len() != 4 {
		t.Fatalf("verified LRU eviction wrong (len %d)", m.Len())
	}
	// A dead verified entry goes before a live unverified one.
	m2 := NewMemory(MemoryConfig{MaxEntries: 2, Shards: 1})
	mustThrottle(t, m2, v("A"), time.Second, epoch)
	mustThrottle(t, m2, u(1), time.Hour, epoch)
	// At epoch+1s A is dead; pruning frees it first, so u(2) takes its slot.
	mustThrottle(t, m2, u(2), time.Hour, epoch.Add(time.Second))
	if h := m2.hash(u(1)); m2.shards[0].entries[m2.shards[0].idx[h]].id != u(1) {
		t.Fatal("live unverified entry evicted while a dead verified one was there")
	}
}

func TestMemoryBoundUnderConcurrency(t *testing.T) {
	const max = 1000
	m := NewMemory(MemoryConfig{MaxEntries: max, Shards: 16})
	var stop atomic.Bool
	var over atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			if n := m.Len(); n > max+m.BanCap() {
				over.Store(int64(n))
			}
		}
	})
	var workers sync.WaitGroup
	for w := range 8 {
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 20_000 {
				id := NewIdentity(fmt.Sprint("n", rng.IntN(50)), rng.IntN(20) == 0, ip4(rng.Uint32()))
				now := epoch.Add(time.Duration(i) * time.Millisecond)
				mustThrottle(t, m, id, time.Duration(1+rng.IntN(10))*time.Second, now)
				if rng.IntN(3) == 0 {
					mustStrike(t, m, id, DefaultStrikePolicy(), now)
				}
				if _, err := m.Banned(ctx0, id, now); err != nil {
					t.Error(err)
				}
			}
		})
	}
	workers.Wait()
	stop.Store(true)
	wg.Wait()
	if n := over.Load(); n != 0 {
		t.Fatalf("Len reached %d > %d + %d", n, max, m.BanCap())
	}
	if n := m.Len(); n > max+m.BanCap() {
		t.Fatalf("Len = %d > %d + %d", n, max, m.BanCap())
	}
	checkInvariants(t, m)
}

// checkInvariants verifies that every shard's map, lists and free list agree.
func checkInvariants(t *testing.T, m *Memory) {
	t.Helper()
	total := 0
	for si := range m.shards {
		s := &m.shards[si]
		s.mu.Lock()
		inLists := 0
		for l := range s.lists {
			prev := int32(-1)
			n := 0
			for i := s.lists[l].head; i >= 0; i = s.entries[i].next {
				e := &s.entries[i]
				if e.prev != prev || int(e.list) != l || (l != listBans && lruOf(e.id) != e.list) || s.idx[e.hash] != i || e.hash != m.hash(e.id) {
					t.Fatalf("shard %d: list %d broken at slot %d", si, l, i)
				}
				prev = i
				n++
			}
			if s.lists[l].tail != prev || s.count[l] != n {
				t.Fatalf("shard %d: list %d tail %d, want %d; count %d, want %d", si, l, s.lists[l].tail, prev, s.count[l], n)
			}
			inLists += n
		}
		if s.count[listUnverified]+s.count[listVerified] > s.limit || s.count[listBans] > s.banLimit {
			t.Fatalf("shard %d: %v listed, limits %d and %d", si, s.count, s.limit, s.banLimit)
		}
		free := 0
		for i := s.free; i >= 0; i = s.entries[i].next {
			free++
		}
		if inLists != len(s.idx) || inLists+free != len(s.entries) || len(s.entries) > s.limit+s.banLimit {
			t.Fatalf("shard %d: %d listed, %d mapped, %d free, %d slots, limit %d", si, inLists, len(s.idx), free, len(s.entries), s.limit)
		}
		total += s.limit
		s.mu.Unlock()
	}
	if total != m.Cap() {
		t.Fatalf("shard limits sum to %d, want %d", total, m.Cap())
	}
}

func BenchmarkMemoryThrottle(b *testing.B) {
	m := NewMemory(MemoryConfig{})
	ids := make([]Identity, 1024)
	for i := range ids {
		ids[i] = NewIdentity("GPTBot", false, ip4(uint32(i)*7919))
		mustThrottle(b, m, ids[i], 10*time.Second, epoch)
	}
	now := epoch
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Throttle(ctx0, ids[i&1023], 10*time.Second, now)
		i++
		now = now.Add(time.Microsecond)
	}
}

func BenchmarkMemoryThrottleParallel(b *testing.B) {
	m := NewMemory(MemoryConfig{})
	ids := make([]Identity, 1024)
	for i := range ids {
		ids[i] = NewIdentity("GPTBot", false, ip4(uint32(i)*7919))
		mustThrottle(b, m, ids[i], 10*time.Second, epoch)
	}
	var seq atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1)) * 131
		now := epoch
		for pb.Next() {
			m.Throttle(ctx0, ids[i&1023], 10*time.Second, now)
			i++
			now = now.Add(time.Microsecond)
		}
	})
}

func BenchmarkMemoryStrikeBanned(b *testing.B) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("GPTBot", false, ip4(1))
	p := StrikePolicy{Strikes: 1 << 30, Window: time.Hour, Ban: time.Hour}
	now := epoch
	info := StrikeInfo{Crawler: "ContentGrabber", Token: "*", Line: 12, Version: "v3", Scope: "example.com on :443"}
	b.ReportAllocs()
	for b.Loop() {
		m.Strike(ctx0, id, p, now, info)
		m.Banned(ctx0, id, now)
		now = now.Add(time.Microsecond)
	}
}

// BenchmarkMemoryBannedInForce: a banned crawler keeps asking; reading its
// ban and the ban's info allocates nothing.
func BenchmarkMemoryBannedInForce(b *testing.B) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("*", false, ip4(1))
	info := StrikeInfo{Crawler: "ContentGrabber", Token: "*", Line: 12, Version: "v3", Scope: "example.com on :443"}
	m.Strike(ctx0, id, StrikePolicy{Strikes: 1, Window: time.Hour, Ban: 24 * time.Hour}, epoch, info)
	now := epoch
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := m.Banned(ctx0, id, now); !r.Banned || r.Info.Crawler == "" {
			b.Fatal("not banned")
		}
		now = now.Add(time.Microsecond)
	}
}

// TestMayHaveBans: false until the first strike, then true; Banned answers
// right on both sides of it.
func TestMayHaveBans(t *testing.T) {
	m := NewMemory(MemoryConfig{})
	id := NewIdentity("GPTBot", false, ip4(1))
	if m.MayHaveBans() {
		t.Fatal("MayHaveBans on an empty store")
	}
	if r, _ := m.Banned(ctx0, id, epoch); r.Banned || r.Strikes != 0 {
		t.Fatalf("Banned on an empty store = %+v", r)
	}
	p := StrikePolicy{Strikes: 2, Window: time.Minute, Ban: time.Hour}
	mustStrike(t, m, id, p, epoch)
	if !m.MayHaveBans() {
		t.Fatal("MayHaveBans false after a strike")
	}
	if r, _ := m.Banned(ctx0, id, epoch); r.Banned || r.Strikes != 1 {
		t.Fatalf("after one strike Banned = %+v, want 1 strike, no ban", r)
	}
	mustStrike(t, m, id, p, epoch)
	if r, _ := m.Banned(ctx0, id, epoch.Add(time.Second)); !r.Banned {
		t.Fatalf("after two strikes Banned = %+v, want a ban", r)
	}
	other := NewIdentity("GPTBot", false, ip4(2))
	if r, _ := m.Banned(ctx0, other, epoch); r.Banned || r.Strikes != 0 {
		t.Fatalf("another identity Banned = %+v", r)
	}
}

// TestMemoryBansOutliveFlood: bans are kept apart from the LRU lists that
// throttle entries compete for. A flood of a hundred times more identities
// than the store holds, throttled and struck (but not banned), leaves every
// ban in force and listed, and the store within Cap + BanCap.
func TestMemoryBansOutliveFlood(t *testing.T) {
	m := NewMemory(MemoryConfig{MaxEntries: 100, Shards: 4})
	p := StrikePolicy{Strikes: 2, Window: time.Hour, Ban: time.Hour}
	banned := make([]Identity, 20)
	for i := range banned {
		banned[i] = NewIdentity("Rogue", false, ip4(0xc6336400+uint32(i)))
		mustStrike(t, m, banned[i], p, epoch)
		if r := mustStrike(t, m, banned[i], p, epoch); !r.Banned {
			t.Fatalf("%v not banned: %+v", banned[i], r)
		}
	}
	now := epoch
	for i := range 10_000 {
		now = now.Add(time.Millisecond)
		id := NewIdentity(fmt.Sprint("flood", i%7), i%50 == 0, ip4(uint32(i)))
		mustThrottle(t, m, id, time.Minute, now)
		if i%3 == 0 && !id.Verified {
			mustStrike(t, m, id, p, now) // one strike each: no ban
		}
		if n := m.Len(); n > m.Cap()+m.BanCap() {
			t.Fatalf("Len %d > %d + %d", n, m.Cap(), m.BanCap())
		}
	}
	for _, id := range banned {
		if r, _ := m.Banned(ctx0, id, now); !r.Banned || r.Info.Crawler == "" && r.Info.Token == "" && len(r.Info.Strikes) == 0 {
			t.Errorf("%v after the flood: %+v, want banned with its info", id, r)
		}
	}
	if bans, _ := m.Bans(ctx0, now, 0); len(bans) != len(banned) {
		t.Errorf("Bans lists %d bans after the flood, want %d", len(bans), len(banned))
	}
	checkInvariants(t, m)

	// A ban that ended goes back to the LRU lists (or is freed): the
	// flood then takes its slot like any other.
	after := epoch.Add(2 * time.Hour)
	for i := range 1000 {
		mustThrottle(t, m, NewIdentity("late", false, ip4(0x0a000000+uint32(i))), time.Minute, after.Add(time.Duration(i)*time.Millisecond))
	}
	for _, id := range banned {
		if r, _ := m.Banned(ctx0, id, after); r.Banned {
			t.Errorf("%v still banned after its ban ended", id)
		}
	}
	if n := m.Len(); n > m.Cap() {
		t.Errorf("Len %d > Cap %d once every ban ended", n, m.Cap())
	}
	checkInvariants(t, m)
}

// TestMemoryBanTableFull: when a shard's bans fill their share of MaxBans,
// a new ban evicts the ban that ends first, never another; a ban lifted by
// Unban leaves its slot to the next ban.
func TestMemoryBanTableFull(t *testing.T) {
	m := NewMemory(MemoryConfig{MaxEntries: 10, MaxBans: 3, Shards: 1})
	if m.BanCap() != 3 {
		t.Fatalf("BanCap = %d, want 3", m.BanCap())
	}
	ban := func(i int, d time.Duration) Identity {
		id := NewIdentity("Rogue", false, ip4(uint32(i)))
		if r := mustStrike(t, m, id, StrikePolicy{Strikes: 1, Window: time.Hour, Ban: d}, epoch); !r.Banned {
			t.Fatalf("%v not banned", id)
		}
		return id
	}
	isBanned := func(id Identity) bool { r, _ := m.Banned(ctx0, id, epoch); return r.Banned }
	a := ban(1, 3*time.Hour)
	b := ban(2, time.Hour) // ends first
	c := ban(3, 2*time.Hour)
	d := ban(4, 4*time.Hour)
	if !isBanned(a) || isBanned(b) || !isBanned(c) || !isBanned(d) {
		t.Fatalf("a full ban table evicted another ban than the one ending first: %v %v %v %v", isBanned(a), isBanned(b), isBanned(c), isBanned(d))
	}
	if ok, err := m.Unban(ctx0, d.String(), epoch); !ok || err != nil {
		t.Fatalf("Unban = %v, %v", ok, err)
	}
	e := ban(5, 30*time.Minute)
	if !isBanned(a) || !isBanned(c) || !isBanned(e) {
		t.Fatal("a new ban evicted a ban in force while a lifted one held a slot")
	}
	for i := range 100 { // a throttle flood evicts none of them
		mustThrottle(t, m, NewIdentity("flood", false, ip4(uint32(100+i))), time.Hour, epoch)
	}
	if !isBanned(a) || !isBanned(c) || !isBanned(e) || m.Len() > m.Cap()+m.BanCap() {
		t.Fatalf("after a flood: %v %v %v, Len %d", isBanned(a), isBanned(c), isBanned(e), m.Len())
	}
	checkInvariants(t, m)
}
