package state

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of [MemoryConfig].
const (
	DefaultMaxEntries = 100_000
	DefaultShards     = 64
	// MinMaxBans is the least number of bans a memory store keeps room
	// for when [MemoryConfig].MaxBans is not set: a small store still
	// keeps 16 bans a shard.
	MinMaxBans = 1024
)

// MemoryConfig configures [NewMemory].
type MemoryConfig struct {
	// MaxEntries is the hard cap on identities kept (default 100,000). At
	// about 250 bytes an entry, the default costs at most ~25 MiB. An
	// identity that struck in its current window, or is banned, also
	// holds a 128-byte strike record and a copy of its crawler's name (at
	// most [MaxNameLen] bytes; see [MaxStrikeRecords]), and a ban its
	// [BanInfo] (about 300 bytes): with every identity struck, ~45 MiB.
	MaxEntries int
	// MaxBans is the cap on identities kept while banned, beyond
	// MaxEntries (default MaxEntries/10, at least [MinMaxBans]: 10,000
	// for the default store, about 7 MiB with their records). A ban is
	// not an entry of the LRU that throttle entries compete for: no flood
	// of other identities, however large, evicts it. It ends when it
	// expires or is lifted, or, when the bans of its shard fill their
	// share of MaxBans, the ban of that shard that ends first makes room
	// for a new one. Each shard's share is rounded up, so the store holds
	// at most [Memory.Cap] + [Memory.BanCap] identities.
	MaxBans int
	// Shards is the number of independently locked parts (default 64). It
	// is rounded up to a power of two and lowered to at most MaxEntries.
	Shards int
}

// Memory is the in-process [Store]: bounded, sharded, O(1) per decision and
// allocation-free for an identity it already holds.
//
// Each shard has a map from [Identity] to a slot in a slot array that grows up
// to the shard's share of MaxEntries plus its share of MaxBans, and three
// intrusive lists over those slots: two LRU lists, one for unverified clients
// and one for verified crawlers, holding at most the shard's share of
// MaxEntries, and the list of banned identities, in the order their bans
// started, holding at most its share of MaxBans. When the LRU lists are full,
// a new identity takes the slot of (in this order) a dead verified entry, the
// least recently used unverified entry, or, only when no unverified entry is
// left, the least recently used verified one; a banned identity is never
// among them. An entry is dead when its throttle time, strike window and ban
// are all in the past; every decision also frees the dead entries it finds at
// the tail of the lists (a ban that ended goes back to its LRU list, or is
// freed if nothing else of it is alive), so idle identities expire without a
// sweeper goroutine.
type Memory struct {
	shards []memShard
	mask   uint64
	seed   maphash.Seed
	max    int
	bans   int // the sum of the shards' banLimit
	// struck has a bit set for every hash that ever got a strike or a ban,
	// so that Banned answers the common case (a crawler that never struck)
	// without taking a shard lock. Bits are never cleared; a set bit only
	// means "look it up".
	struck    [struckWords]atomic.Uint64
	struckAny atomic.Bool // some bit of struck is set
}

const struckWords = 1 << 10 // 65,536 bits, 8 KiB

func (m *Memory) struckBit(h uint64) (*atomic.Uint64, uint64) {
	b := (h >> 32) % (struckWords * 64)
	return &m.struck[b/64], 1 << (b % 64)
}

// markStruck records that h may have strikes or a ban.
func (m *Memory) markStruck(h uint64) {
	w, bit := m.struckBit(h)
	if w.Load()&bit == 0 {
		w.Or(bit)
	}
	if !m.struckAny.Load() {
		m.struckAny.Store(true)
	}
}

// MayHaveBans reports whether any identity may have strikes or a ban. It is
// false until the first [Memory.Strike], and lets a caller skip building an
// identity for [Memory.Banned] while nobody has struck.
func (m *Memory) MayHaveBans() bool { return m.struckAny.Load() }

// mayBeStruck reports whether h may have strikes or a ban.
func (m *Memory) mayBeStruck(h uint64) bool {
	w, bit := m.struckBit(h)
	return w.Load()&bit != 0
}

type memShard struct {
	mu       sync.Mutex
	idx      map[uint64]int32 // keyed by Memory.hash; the entry holds the identity
	entries  []entry
	limit    int        // slots of the LRU lists
	banLimit int        // slots of the ban list
	free     int32      // first free slot, chained through entry.next; -1 if none
	lists    [3]lruList // listUnverified, listVerified, listBans
	count    [3]int     // entries in each list
	lastName string     // the last name cloned into the shard, shared by new entries
	// lastCrawler is the last crawler name a strike record kept, shared by
	// the next records with the same name.
	lastCrawler string
	// spare holds strike records of freed entries for the next first
	// strikes, so that a flood of identities striking once each reuses
	// records instead of making garbage.
	spare []*strikeLog
	_     [64]byte
}

// lruList is an intrusive doubly linked list over memShard.entries; head is
// the most recently used slot, -1 means none.
type lruList struct{ head, tail int32 }

// entry is the state of one identity, times in Unix nanoseconds.
type entry struct {
	id       Identity
	hash     uint64
	tat      int64 // GCRA theoretical arrival time
	winEnd   int64 // end of the current strike window
	banUntil int64
	retryEnd int64  // end of the wait of the last refused request
	retryKey uint64 // Fetch.Key of the last refused request, 0 if none
	headKey  uint64 // Fetch.Key of the last allowed HEAD, 0 if none
	pairEnd  int64  // until when a GET of headKey rides on that HEAD
	// log holds the recent strikes and the ban's info; nil until the
	// first strike.
	log     *strikeLog
	strikes int32 // strikes counted in the window
	prev    int32
	next    int32
	flags   uint8 // entryEarned
	list    uint8 // the list holding the entry
}

// The lists of a shard: the LRU lists of unverified and verified
// identities, and the banned identities.
const (
	listUnverified = 0
	listVerified   = 1
	listBans       = 2
)

// entryEarned marks a ban that a [Failover] store's local store earned
// while its primary was failing and has not yet written to the primary.
const entryEarned uint8 = 1

func (e *entry) dead(now int64) bool {
	return e.tat <= now && e.winEnd <= now && e.banUntil <= now && e.pairEnd <= now
}

// isRetry reports whether a request for the URL whose [Fetch].Key is key
// comes back inside the Retry-After of the last refusal, which was for the
// same URL.
func (e *entry) isRetry(key uint64, now int64) bool {
	return key != 0 && e.retryKey == key && e.retryEnd > now
}

func (e *entry) activeStrikes(now int64) int {
	if e.winEnd > now {
		return int(e.strikes)
	}
	return 0
}

// lruOf is the LRU list of id's entries.
func lruOf(id Identity) uint8 {
	if id.Verified {
		return listVerified
	}
	return listUnverified
}

// NewMemory returns an empty memory store. Slots are allocated as identities
// arrive, never beyond cfg.MaxEntries.
func NewMemory(cfg MemoryConfig) *Memory {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.MaxBans <= 0 {
		cfg.MaxBans = max(cfg.MaxEntries/10, MinMaxBans)
	}
	n := 1
	for n < cfg.Shards {
		n <<= 1
	}
	for n > cfg.MaxEntries {
		n >>= 1
	}
	m := &Memory{
		shards: make([]memShard, n),
		mask:   uint64(n - 1),
		seed:   maphash.MakeSeed(),
		max:    cfg.MaxEntries,
	}
	for i := range m.shards {
		s := &m.shards[i]
		s.limit = cfg.MaxEntries / n
		if i < cfg.MaxEntries%n {
			s.limit++
		}
		s.banLimit = (cfg.MaxBans + n - 1) / n
		m.bans += s.banLimit
		s.idx = make(map[uint64]int32)
		s.free = -1
		s.lists = [3]lruList{{-1, -1}, {-1, -1}, {-1, -1}}
	}
	return m
}

// Throttle implements [Store.Throttle] with GCRA: a request at time now is
// allowed if the theoretical arrival time TAT is at most τ =
// [Tolerance](interval) ahead of now, and then TAT becomes max(TAT, now) +
// interval. A refused request leaves TAT alone and waits TAT - τ - now.
func (m *Memory) Throttle(ctx context.Context, id Identity, interval time.Duration, now time.Time) (ThrottleResult, error) {
	return m.ThrottlePace(ctx, id, Pace{Interval: interval}, now)
}

// ThrottlePace implements [Store.ThrottlePace]: GCRA with the emission
// interval and tolerance of p (see [Pace]), the HEAD/GET pairing of
// p.Fetch, and the Retry flag (the entry remembers the Fetch.Key and the
// Retry-After end of its last refused request).
func (m *Memory) ThrottlePace(_ context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error) {
	return m.pace(id, p, now, true), nil
}

// PeekPace implements [PacePeeker]: the decision of ThrottlePace, with no
// state changed (an identity never seen is allowed).
func (m *Memory) PeekPace(_ context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error) {
	return m.pace(id, p, now, false), nil
}

// pace makes ThrottlePace's decision and, with write, records it; without
// (PeekPace) it changes nothing. Redis does the same with one script told
// whether to write.
func (m *Memory) pace(id Identity, p Pace, now time.Time, write bool) ThrottleResult {
	if p.Interval <= 0 {
		return ThrottleResult{Allowed: true}
	}
	em, tau := p.gcra()
	id = id.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, write)
	if e == nil {
		return ThrottleResult{Allowed: true} // never seen, and a peek
	}
	retry := e.isRetry(p.Fetch.Key, t)
	if p.Fetch.Key != 0 && !p.Fetch.Head && e.headKey == p.Fetch.Key && e.pairEnd >= t {
		if write {
			e.headKey, e.pairEnd = 0, 0
		}
		return ThrottleResult{Allowed: true, Retry: retry, Paired: true}
	}
	tat := max(e.tat, t)
	if tat-t > int64(tau) {
		if write {
			e.retryEnd, e.retryKey = tat-int64(tau), p.Fetch.Key
		}
		return ThrottleResult{RetryAfter: time.Duration(tat - int64(tau) - t), Retry: retry}
	}
	if write {
		e.tat = tat + int64(em)
		if p.Fetch.Key != 0 && p.Fetch.Head {
			e.headKey, e.pairEnd = p.Fetch.Key, t+int64(FetchPairWindow)
		}
	}
	return ThrottleResult{Allowed: true, Retry: retry}
}

// Strike implements [Store.Strike]. An identity's first strike allocates
// its strike record (see [MaxStrikeRecords]) and the strike that starts a
// ban its [BanInfo]; other strikes allocate nothing.
func (m *Memory) Strike(_ context.Context, id Identity, p StrikePolicy, now time.Time, info StrikeInfo) (BanResult, error) {
	return m.strike(id, p, now, info, false), nil
}

// strike is Strike; earned marks a ban it starts as earned here while a
// [Failover]'s primary was failing.
func (m *Memory) strike(id Identity, p StrikePolicy, now time.Time, info StrikeInfo, earned bool) BanResult {
	if !p.Enabled() {
		return BanResult{}
	}
	p = p.normalized()
	id = id.clipped()
	info = info.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	m.markStruck(h)
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, true)
	if e.banUntil > t {
		return BanResult{Banned: true, Until: now.Add(time.Duration(e.banUntil - t)), Strikes: e.activeStrikes(t), Info: e.banInfo()}
	}
	if e.log == nil {
		e.log = s.newLog()
	}
	if e.winEnd <= t {
		e.strikes = 0
		e.winEnd = t + int64(p.Window)
		e.log.reset()
		e.log.ban = nil // a ban that ended
		e.flags &^= entryEarned
	}
	e.strikes++
	s.lastCrawler = e.log.add(info, t, e.id.Name, s.lastCrawler)
	n := int(e.strikes)
	if n < p.Strikes {
		return BanResult{Strikes: n}
	}
	e.strikes, e.winEnd = 0, 0
	e.banUntil = t + int64(p.Ban)
	e.log.ban = e.log.banInfo(t)
	e.log.reset()
	e.flags &^= entryEarned
	if earned {
		e.flags |= entryEarned
	}
	s.toBans(s.idx[h], t)
	return BanResult{Banned: true, Until: now.Add(p.Ban), Strikes: n, Info: *e.log.ban}
}

// banInfo returns the info of e's ban, if it has one.
func (e *entry) banInfo() BanInfo {
	if e.log == nil || e.log.ban == nil {
		return BanInfo{}
	}
	return *e.log.ban
}

// Banned implements [Store.Banned]. It keeps no state for an unknown
// identity.
func (m *Memory) Banned(_ context.Context, id Identity, now time.Time) (BanResult, error) {
	if !m.MayHaveBans() {
		return BanResult{}, nil // nobody ever struck: nothing to look up
	}
	id = id.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	if !m.mayBeStruck(h) {
		return BanResult{}, nil
	}
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, false)
	if e == nil {
		return BanResult{}, nil
	}
	r := BanResult{Strikes: e.activeStrikes(t)}
	if e.banUntil > t {
		r.Banned = true
		r.Until = now.Add(time.Duration(e.banUntil - t))
		r.Info = e.banInfo()
	}
	return r, nil
}

// Close implements [Store.Close]; it does nothing, and the store stays usable.
func (m *Memory) Close() error { return nil }

// Len returns the number of identities held, dead ones included until they
// are freed. It never exceeds Cap + BanCap.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		n += m.shards[i].len()
	}
	return n
}

// len returns the number of identities the shard holds.
func (s *memShard) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.idx)
}

// Cap returns MaxEntries: the identities held in the LRU lists.
func (m *Memory) Cap() int { return m.max }

// BanCap returns the most banned identities held beyond Cap: MaxBans,
// rounded up to a multiple of the shards.
func (m *Memory) BanCap() int { return m.bans }

// observeRetry raises id's TAT to what a refusal under p with wait
// retryAfter at now implies; [NewFailover] uses it to keep the local store
// warm.
func (m *Memory) observeRetry(id Identity, p Pace, retryAfter time.Duration, now time.Time) {
	_, tau := p.gcra()
	id = id.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, true)
	e.tat = max(e.tat, t+int64(retryAfter+tau))
	e.retryEnd, e.retryKey = t+int64(retryAfter), p.Fetch.Key
}

// observeBan records a ban of id until until, for the reason info;
// [NewFailover] uses it to keep the local store warm. A ban already held
// that ends at most a second earlier keeps its info, so that a banned
// crawler's requests (each learning the ban again) allocate nothing; a ban
// earned here keeps its own info.
func (m *Memory) observeBan(id Identity, until time.Time, info BanInfo, now time.Time) {
	if !until.After(now) {
		return
	}
	id = id.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	m.markStruck(h)
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, true)
	u := t + int64(until.Sub(now))
	old := e.banUntil
	if old <= t {
		e.flags &^= entryEarned // of a ban that ended
	}
	e.banUntil = max(old, u)
	s.toBans(s.idx[h], t)
	if e.flags&entryEarned != 0 {
		return
	}
	if old > t && e.log != nil && e.log.ban != nil && u <= old+int64(time.Second) && (info.IsZero() || !e.log.ban.IsZero()) {
		return // the same ban, learnt again
	}
	if e.log == nil {
		e.log = s.newLog()
	}
	e.log.ban = boundedInfo(info)
}

// hash returns a seeded 64-bit hash of id: its low bits choose the shard,
// and the shard's map is keyed by all of it (cheaper to hash and smaller than
// the Identity itself). The seed is random per store, so clients cannot aim
// at one shard or make hashes collide; a collision, were one to happen, only
// makes two identities take turns in one slot.
func (m *Memory) hash(id Identity) uint64 {
	a := id.Prefix.Addr().As16()
	h := maphash.String(m.seed, id.Name) ^ maphash.Bytes(m.seed, a[:])*0x9e3779b97f4a7c15
	if id.Site != "" {
		h ^= maphash.String(m.seed, id.Site) * 0x94d049bb133111eb
	}
	flags := uint64(id.Prefix.Bits()+2) << 1
	if id.Verified {
		flags |= 1
	}
	return h ^ flags*0xbf58476d1ce4e5b9
}

func (m *Memory) shard(h uint64) *memShard { return &m.shards[h&m.mask] }

// lookup returns id's entry, marked most recently used, creating it if
// create is set (nil otherwise). It first frees dead entries at the lists'
// tails. The pointer is valid while s.mu is held.
func (s *memShard) lookup(id Identity, h uint64, now int64, create bool) *entry {
	s.pruneTails(now)
	if i, ok := s.idx[h]; ok {
		e := &s.entries[i]
		switch {
		case e.id != id:
			if !create {
				return nil
			}
			s.remove(i) // a hash collision: the newcomer takes the slot
		case e.list != listBans:
			s.touch(i)
			return e
		case e.banUntil > now:
			return e // bans keep the order they started in
		case !s.settle(i, now):
			return e
		}
	}
	if !create {
		return nil
	}
	return &s.entries[s.insert(id, h, now)]
}

// remove frees slot i.
func (s *memShard) remove(i int32) {
	s.unlink(i)
	delete(s.idx, s.entries[i].hash)
	s.recycle(s.entries[i].log)
	s.entries[i] = entry{next: s.free}
	s.free = i
}

// maxSpareLogs bounds memShard.spare: 8 records of 128 bytes a shard,
// 64 KiB for the default 64 shards.
const maxSpareLogs = 8

// recycle keeps l, if any, for newLog.
func (s *memShard) recycle(l *strikeLog) {
	if l == nil || len(s.spare) >= maxSpareLogs {
		return
	}
	*l = strikeLog{}
	s.spare = append(s.spare, l)
}

// newLog returns an empty strike record, a spare one if there is one.
func (s *memShard) newLog() *strikeLog {
	if n := len(s.spare); n > 0 {
		l := s.spare[n-1]
		s.spare[n-1] = nil
		s.spare = s.spare[:n-1]
		return l
	}
	return new(strikeLog)
}

// pruneTails frees up to two dead entries at the tail of each LRU list,
// and settles up to two ended bans at the tail of the ban list, so that the
// number of entries held shrinks when identities go idle.
func (s *memShard) pruneTails(now int64) {
	for range 2 {
		for l := range listBans {
			if t := s.lists[l].tail; t >= 0 && s.entries[t].dead(now) {
				s.remove(t)
			}
		}
		if t := s.lists[listBans].tail; t >= 0 && s.entries[t].banUntil <= now {
			s.settle(t, now)
		}
	}
}

// toBans moves entry i, whose ban is in force, to the ban list. When the
// shard's bans fill it, the ban that ends first (one already over, or
// lifted, if there is one) is dropped with its entry to make room.
func (s *memShard) toBans(i int32, now int64) {
	if s.entries[i].list == listBans {
		return
	}
	if s.count[listBans] >= s.banLimit {
		first := s.lists[listBans].tail
		for j := first; j >= 0; j = s.entries[j].prev {
			if s.entries[j].banUntil < s.entries[first].banUntil {
				first = j
			}
		}
		s.remove(first)
	}
	s.unlink(i)
	s.entries[i].list = listBans
	s.pushFront(i)
}

// settle takes entry i, on the ban list with its ban over (ended or
// lifted), off it: back to the front of its LRU list (making room there
// as insert does), or freed if nothing else of it is alive. It reports
// whether it freed the entry.
func (s *memShard) settle(i int32, now int64) (freed bool) {
	if s.entries[i].dead(now) {
		s.remove(i)
		return true
	}
	s.unlink(i)
	e := &s.entries[i]
	e.list = lruOf(e.id)
	if s.count[listUnverified]+s.count[listVerified] >= s.limit {
		s.remove(s.victim(now))
	}
	s.pushFront(i)
	return false
}

func (s *memShard) insert(id Identity, h uint64, now int64) int32 {
	var i int32
	var oldName string
	switch {
	case s.count[listUnverified]+s.count[listVerified] >= s.limit:
		i = s.victim(now)
		oldName = s.entries[i].id.Name
		s.recycle(s.entries[i].log)
		s.unlink(i)
		delete(s.idx, s.entries[i].hash)
	case s.free >= 0:
		i = s.free
		s.free = s.entries[i].next
	default:
		// The LRU lists have room and no slot is free, so the slots in
		// use are fewer than limit + banLimit.
		if len(s.entries) == cap(s.entries) {
			grown := make([]entry, len(s.entries), min(max(2*cap(s.entries), 8), s.limit+s.banLimit))
			copy(grown, s.entries)
			s.entries = grown
		}
		i = int32(len(s.entries))
		s.entries = append(s.entries, entry{})
	}
	// Keep the name in memory of its own (not a slice of a request header),
	// shared with the previous entry where possible.
	switch id.Name {
	case oldName:
		id.Name = oldName
	case s.lastName:
		id.Name = s.lastName
	default:
		id.Name = strings.Clone(id.Name)
		s.lastName = id.Name
	}
	s.entries[i] = entry{id: id, hash: h, list: lruOf(id)}
	s.idx[h] = i
	s.pushFront(i)
	return i
}

// victim picks the slot to reuse when the LRU lists are full: never a
// banned identity's.
func (s *memShard) victim(now int64) int32 {
	if t := s.lists[listVerified].tail; t >= 0 && s.entries[t].dead(now) {
		return t
	}
	if t := s.lists[listUnverified].tail; t >= 0 {
		return t
	}
	return s.lists[listVerified].tail
}

// touch marks entry i, on an LRU list, most recently used.
func (s *memShard) touch(i int32) {
	if s.lists[s.entries[i].list].head == i {
		return
	}
	s.unlink(i)
	s.pushFront(i)
}

func (s *memShard) pushFront(i int32) {
	e := &s.entries[i]
	l := &s.lists[e.list]
	s.count[e.list]++
	e.prev, e.next = -1, l.head
	if l.head >= 0 {
		s.entries[l.head].prev = i
	} else {
		l.tail = i
	}
	l.head = i
}

func (s *memShard) unlink(i int32) {
	e := &s.entries[i]
	l := &s.lists[e.list]
	s.count[e.list]--
	if e.prev >= 0 {
		s.entries[e.prev].next = e.next
	} else {
		l.head = e.next
	}
	if e.next >= 0 {
		s.entries[e.next].prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = -1, -1
}
