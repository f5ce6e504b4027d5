package state

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// writeBatch is how many bans earned locally one pipeline writes, and
// writeTimeout how long it may take.
const (
	writeBatch   = 500
	writeTimeout = time.Second
)

// startWriter starts the writer of bans earned locally, unless it runs or
// f is closed.
func (f *Failover) startWriter() {
	if f.write == nil || f.keep == nil || f.writing.Load() || !f.writing.CompareAndSwap(false, true) {
		return
	}
	f.stopMu.Lock()
	defer f.stopMu.Unlock()
	if f.life.Err() != nil {
		return // closed; writing stays set, so no writer starts again
	}
	f.writers.Add(1)
	go f.writeLoop()
}

// stop ends f's life: no writer starts after it (see startWriter).
func (f *Failover) stop() {
	f.stopMu.Lock()
	defer f.stopMu.Unlock()
	f.cancel()
}

// writeLoop writes the bans earned locally to the primary until none is
// left or f is closed: at once, then after a backoff of 250ms doubling to
// 4s while the primary fails, and at once again when a call finds the
// primary answering. Its errors are reported to onError only while the
// primary is otherwise healthy (during an outage the calls report it).
func (f *Failover) writeLoop() {
	defer f.writers.Done()
	delay := failoverMinBackoff
	for {
		if f.life.Err() != nil {
			return
		}
		left, err := f.writeEarned()
		if err != nil && f.retryAt.Load() == 0 && f.life.Err() == nil {
			f.onError(fmt.Errorf("state: writing bans earned during an outage to the primary: %w", err))
		}
		if err == nil && left == 0 {
			f.writing.Store(false)
			// A ban earned since the listing found the writer still
			// running and did not start one: look once more.
			if len(f.keep.earnedBans(time.Now(), 1)) == 0 || !f.writing.CompareAndSwap(false, true) {
				return
			}
			delay = failoverMinBackoff
			continue
		}
		t := time.NewTimer(delay)
		select {
		case <-f.life.Done():
			t.Stop()
			return
		case <-f.wake:
			t.Stop()
			delay = failoverMinBackoff
		case <-t.C:
			delay = min(2*delay, failoverMaxBackoff)
		}
	}
}

// writeEarned writes the bans earned locally to the primary and marks those
// written; it returns how many are left.
func (f *Failover) writeEarned() (left int, err error) {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	now := time.Now()
	bans := f.keep.earnedBans(now, 0)
	left = len(bans)
	for len(bans) > 0 {
		batch := bans[:min(len(bans), writeBatch)]
		bans = bans[len(batch):]
		ctx, cancel := context.WithTimeout(f.life, writeTimeout)
		done, err := f.write.writeBans(ctx, batch, now)
		cancel()
		if err != nil {
			return left, err
		}
		for i, b := range batch {
			if done[i] && f.keep.settle(b.Identity, b.until) {
				left--
			}
		}
	}
	return left, nil
}

// Bans implements [BanLister.Bans]. While the primary answers: its bans,
// and the bans the local store earned during an outage and has not yet
// written (the later end wins where both have one); a complete listing
// also drops the local store's copies of bans the primary no longer has.
// When the primary fails: every ban of the local store, with the error.
// See [NewFailover] for the rule.
func (f *Failover) Bans(ctx context.Context, now time.Time, limit int) ([]Ban, error) {
	limit = banLimit(limit)
	var (
		bans []Ban
		err  error
	)
	if cl, ok := f.primary.(completeLister); ok {
		var complete bool
		bans, complete, err = cl.listBans(ctx, now, limit)
		if err == nil && complete && f.keep != nil {
			keep := make(map[string]bool, len(bans))
			for _, b := range bans {
				keep[b.Key] = true
			}
			f.keep.dropCopies(keep, now)
		}
	} else if l, ok := f.primary.(BanLister); ok {
		bans, err = l.Bans(ctx, now, limit)
	} else {
		err = errors.ErrUnsupported // the local store's bans are all there is
	}
	if err == nil {
		if f.keep != nil {
			for _, b := range f.keep.earnedBans(now, limit) {
				bans = append(bans, b.Ban)
			}
		}
		return mergeBans(bans, limit), nil
	}
	l, ok := f.local.(BanLister)
	if !ok {
		return nil, fmt.Errorf("state: listing bans: %w", err)
	}
	local, lerr := l.Bans(ctx, now, limit)
	if errors.Is(err, errors.ErrUnsupported) {
		return local, lerr
	}
	return local, fmt.Errorf("state: listing bans: the primary failed, these are this instance's: %w", errors.Join(err, lerr))
}

// mergeBans returns bans with one ban per key (the later end wins), ordered
// by key, at most limit of them.
func mergeBans(bans []Ban, limit int) []Ban {
	merged := make(map[string]Ban, len(bans))
	for _, b := range bans {
		if old, ok := merged[b.Key]; !ok || b.Until.After(old.Until) {
			merged[b.Key] = b
		}
	}
	out := make([]Ban, 0, len(merged))
	for _, b := range merged {
		out = append(out, b)
	}
	sortBans(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Unban implements [BanLister.Unban] on the primary and the local store
// alike; it reports whether either had the ban. The local store is
// cleared even when the primary fails (the error says so: the primary may
// still hold the ban).
func (f *Failover) Unban(ctx context.Context, key string, now time.Time) (bool, error) {
	f.writeMu.Lock() // a ban being written is written before it is lifted
	defer f.writeMu.Unlock()
	found := false
	var errs []error
	for _, s := range []Store{f.primary, f.local} {
		l, ok := s.(BanLister)
		if !ok {
			continue
		}
		ok, err := l.Unban(ctx, key, now)
		if err != nil {
			errs = append(errs, err)
		}
		found = found || ok
	}
	if err := errors.Join(errs...); err != nil {
		return found, fmt.Errorf("state: lifting ban: %w", err)
	}
	return found, nil
}

// UnbanWhere implements [BanLister.UnbanWhere] on the primary and the
// local store alike (copies and bans earned locally included); a ban
// lifted in both is reported once, as the primary had it. The local store
// is cleared even when the primary fails.
func (f *Failover) UnbanWhere(ctx context.Context, match func(Ban) bool, now time.Time) ([]Ban, error) {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	lifted := map[string]Ban{}
	var errs []error
	for _, s := range []Store{f.local, f.primary} {
		l, ok := s.(BanLister)
		if !ok {
			continue
		}
		bans, err := l.UnbanWhere(ctx, match, now)
		if err != nil {
			errs = append(errs, err)
		}
		for _, b := range bans {
			lifted[b.Key] = b
		}
	}
	out := make([]Ban, 0, len(lifted))
	for _, b := range lifted {
		out = append(out, b)
	}
	sortBans(out)
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("state: lifting bans: %w", err)
	}
	return out, nil
}

// Ping implements [Pinger]: it pings the primary, if it can be pinged. An
// answer ends the backoff that follows a failure: the primary is back, so
// the next call is decided by it instead of waiting out the backoff (up to
// 4s of decisions from local state, and a status page still saying
// "deciding locally" for an idle site until a request came). A failed ping
// changes nothing; only calls start a backoff.
func (f *Failover) Ping(ctx context.Context) error {
	p, ok := f.primary.(Pinger)
	if !ok {
		return nil
	}
	if err := p.Ping(ctx); err != nil {
		return err
	}
	f.ok()
	return nil
}

// DecidingLocally reports whether the primary failed recently and calls
// are being decided by the local store until it answers again.
func (f *Failover) DecidingLocally() bool { return f.retryAt.Load() != 0 }
