package state

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bans earned during an outage: what a [Failover] needs of its local store
// (to hold them) and of its primary (to take them back).

// banKeeper is a local store that can hold the bans it earns while the
// primary fails; [Memory] implements it.
type banKeeper interface {
	warmer
	// strikeEarned is Strike, marking a ban it starts as earned here.
	strikeEarned(id Identity, p StrikePolicy, now time.Time, info StrikeInfo) BanResult
	// heldBan returns id's ban if one is in force that was earned here and
	// not yet written. A ban in force that was not earned here (a copy)
	// is dropped if dropCopy is set.
	heldBan(id Identity, now time.Time, dropCopy bool) (BanResult, bool)
	// earnedBans lists the bans earned here, in force at now and not yet
	// written, at most limit of them (limit <= 0: all).
	earnedBans(now time.Time, limit int) []earnedBan
	// settle marks id's earned ban as written if it still ends at until
	// (earnedBan.until); it reports whether it did.
	settle(id Identity, until int64) bool
	// dropCopies drops the bans in force at now that were not earned here
	// and whose keys keep does not hold.
	dropCopies(keep map[string]bool, now time.Time)
}

// banWriter is a primary that can take bans earned elsewhere; [Redis]
// implements it.
type banWriter interface {
	// writeBans writes each ban that has time left at now, unless the
	// primary holds a longer one for its identity, and reports for each
	// ban whether it is done (written, kept longer, or ended).
	writeBans(ctx context.Context, bans []earnedBan, now time.Time) ([]bool, error)
}

// completeLister is a [BanLister] that can tell whether its list holds every
// ban; [Redis] implements it.
type completeLister interface {
	listBans(ctx context.Context, now time.Time, limit int) (bans []Ban, complete bool, err error)
}

// earnedBan is a ban a local store earned during an outage.
type earnedBan struct {
	Ban
	until int64 // the entry's banUntil, for settle
}

// strikeEarned implements banKeeper.
func (m *Memory) strikeEarned(id Identity, p StrikePolicy, now time.Time, info StrikeInfo) BanResult {
	return m.strike(id, p, now, info, true)
}

// heldBan implements banKeeper.
func (m *Memory) heldBan(id Identity, now time.Time, dropCopy bool) (BanResult, bool) {
	if !m.MayHaveBans() {
		return BanResult{}, false
	}
	id = id.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	if !m.mayBeStruck(h) {
		return BanResult{}, false
	}
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, false)
	if e == nil || e.banUntil <= t {
		return BanResult{}, false
	}
	if e.flags&entryEarned != 0 {
		return BanResult{Banned: true, Until: now.Add(time.Duration(e.banUntil - t)), Strikes: e.activeStrikes(t), Info: e.banInfo()}, true
	}
	if dropCopy {
		e.dropBan()
	}
	return BanResult{}, false
}

// dropBan forgets e's ban, a copy that its source no longer has; e's
// strikes stay.
func (e *entry) dropBan() {
	e.banUntil = 0
	if e.log != nil {
		e.log.ban = nil
	}
}

// earnedBans implements banKeeper.
func (m *Memory) earnedBans(now time.Time, limit int) []earnedBan {
	return m.bansInForce(now, limit, func(e *entry) bool { return e.flags&entryEarned != 0 })
}

// settle implements banKeeper.
func (m *Memory) settle(id Identity, until int64) bool {
	id = id.clipped()
	h := m.hash(id)
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	slot, ok := s.idx[h]
	if !ok {
		return false
	}
	e := &s.entries[slot]
	if e.id != id || e.flags&entryEarned == 0 || e.banUntil != until {
		return false
	}
	e.flags &^= entryEarned
	return true
}

// dropCopies implements banKeeper.
func (m *Memory) dropCopies(keep map[string]bool, now time.Time) {
	if !m.MayHaveBans() {
		return
	}
	t := now.UnixNano()
	for i := range m.shards {
		m.shards[i].dropCopies(keep, t)
	}
}

// dropCopies drops the bans the shard holds in force at t (nanoseconds)
// that it did not earn itself and keep does not name.
func (s *memShard) dropCopies(keep map[string]bool, t int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, slot := range s.idx {
		e := &s.entries[slot]
		if e.banUntil > t && e.flags&entryEarned == 0 && !keep[e.id.String()] {
			e.dropBan()
		}
	}
}

// writeBanScript writes a ban earned elsewhere unless the identity has a
// ban at least as long; a ban written resets the strike count, as a ban
// the strike script starts does. KEYS: strike counter, ban key, strike log
// (strikeKeys). ARGV: the ban's TTL ms, its value (banValueJSON). Returns
// 1 if written, 0 if a longer ban was kept.
var writeBanScript = redis.NewScript(`
if redis.call('PTTL', KEYS[2]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[1])
redis.call('DEL', KEYS[1], KEYS[3])
return 1
`)

// writeBans implements banWriter: one script per ban, in one pipeline,
// with ctx's deadline.
func (r *Redis) writeBans(ctx context.Context, bans []earnedBan, now time.Time) ([]bool, error) {
	done := make([]bool, len(bans))
	if len(bans) == 0 {
		return done, nil
	}
	if err := writeBanScript.Load(ctx, r.client).Err(); err != nil {
		return done, fmt.Errorf("state: redis loading the ban writer: %w", err)
	}
	pipe := r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(bans))
	for i, b := range bans {
		left := b.Until.Sub(now)
		if left <= 0 {
			continue // ended: nothing to write
		}
		ms := (left + time.Millisecond - 1) / time.Millisecond
		cmds[i] = writeBanScript.EvalSha(ctx, pipe, strikeKeys(r.key(b.Identity)), int64(ms), banValueJSON(b.Info))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return done, fmt.Errorf("state: redis writing bans earned during an outage: %w", err)
	}
	for i, c := range cmds {
		done[i] = c == nil || c.Err() == nil
	}
	return done, nil
}

var (
	_ banKeeper      = (*Memory)(nil)
	_ banWriter      = (*Redis)(nil)
	_ completeLister = (*Redis)(nil)
)
