package state

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Backoff of a [NewFailover] store between attempts on a failing primary.
const (
	failoverMinBackoff = 250 * time.Millisecond
	failoverMaxBackoff = 4 * time.Second
)

// warmer is what a local store offers to learn from the primary's answers;
// [Memory] implements it.
type warmer interface {
	observeRetry(id Identity, p Pace, retryAfter time.Duration, now time.Time)
	observeBan(id Identity, until time.Time, info BanInfo, now time.Time)
}

// Failover is the fail-open [Store] returned by [NewFailover].
type Failover struct {
	primary Store
	local   Store
	warm    warmer    // local, if it can learn; else nil
	keep    banKeeper // local, if it can hold the bans it earns; else nil
	write   banWriter // primary, if bans earned locally can be written to it; else nil
	onError func(error)

	// retryAt is when (Unix nanoseconds, wall clock) the primary may be tried
	// again after a failure; 0 while it is healthy.
	retryAt atomic.Int64
	mu      sync.Mutex // guards backoff and downErr
	backoff time.Duration
	downErr error

	// The writer of bans earned locally (see NewFailover and writeLoop).
	writeMu  sync.Mutex      // held while writing, and by Unban and UnbanWhere
	writing  atomic.Bool     // the writer goroutine runs
	wake     chan struct{}   // tells the writer the primary answered again
	life     context.Context // canceled by Close
	cancel   context.CancelFunc
	stopMu   sync.Mutex // orders starting a writer with Close
	writers  sync.WaitGroup
	closeErr error
	once     sync.Once
}

// NewFailover returns a store that decides from primary and, whenever primary
// fails, from local instead: it fails open, never closed. Every primary error
// is passed to onError (nil means ignore), for the caller to count and to log
// at a limited rate; the decision itself then comes from local and carries no
// error.
//
// While primary answers, local is kept warm: requests primary allows are
// spent in local too, strikes are counted in both, and when local is a
// [*Memory] it also learns primary's refusals and bans, so an outage starts
// from this instance's recent view rather than from nothing.
//
// After a failure primary is left alone for a backoff (250ms, doubling to 4s
// while it keeps failing); calls in that time are decided by local and
// reported to onError with an error wrapping [ErrUnavailable]. Then one call
// tries primary again, and as soon as it answers, enforcement resumes from
// it. A call whose own context is done is decided locally without counting
// against primary.
//
// # Bans
//
// The primary is the authority on bans, and on their absence: while it
// answers, a ban is in force if and only if the primary holds it, with one
// exception. A ban the local store earned itself, from strikes it counted
// while deciding locally (the primary failing), is held locally: it is
// enforced, and listed by Bans, until it ends or until it has been written
// to the primary. A writer in the background writes such bans as soon as
// the primary answers again (retrying with the failover's backoff until
// then), each with its [BanInfo] and its remaining time, never shortening a
// longer ban the primary already has; from then on the primary is its
// authority again.
//
// Every other ban the local store holds is a copy, learnt from the
// primary's answers (or counted while warming it), kept only for outages.
// While the primary answers, a copy is neither enforced nor listed, and it
// is dropped as soon as the primary says the identity is not banned (a
// Banned call for it, or a complete Bans listing without it): so a ban
// lifted on one instance, which deletes it from the primary, is gone from
// every instance's Bans and Banned at once. Only while the primary fails
// are copies enforced and listed (with an error saying so); a copy of a ban
// lifted elsewhere that nothing on this instance asked about before the
// outage may then be enforced here until it ends.
//
// Holding such bans needs local to be a [*Memory], and writing them
// primary a [*Redis]. With another primary, a ban earned during an outage
// is held locally until it ends; with another local store, it is forgotten
// once the primary answers again.
//
// Close stops the writer and closes both stores.
func NewFailover(primary, local Store, onError func(error)) *Failover {
	if onError == nil {
		onError = func(error) {}
	}
	f := &Failover{
		primary: primary,
		local:   local,
		onError: onError,
		wake:    make(chan struct{}, 1),
	}
	f.life, f.cancel = context.WithCancel(context.Background())
	f.warm, _ = local.(warmer)
	f.keep, _ = local.(banKeeper)
	f.write, _ = primary.(banWriter)
	return f
}

// use reports whether to ask primary now.
func (f *Failover) use() bool {
	at := f.retryAt.Load()
	if at == 0 {
		return true
	}
	now := time.Now().UnixNano()
	if now < at {
		return false
	}
	// One caller probes; the others stay local until it reports.
	return f.retryAt.CompareAndSwap(at, now+int64(failoverMaxBackoff))
}

// ok records a primary success.
func (f *Failover) ok() {
	if f.retryAt.Load() == 0 {
		return
	}
	f.recovered()
	// Bans earned meanwhile can be written now.
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// failed records a primary error for op and reports it.
func (f *Failover) failed(ctx context.Context, op string, err error) {
	err = fmt.Errorf("state: primary %s failed, deciding locally: %w", op, err)
	f.onError(err)
	if ctx.Err() != nil {
		// The caller gave up; not the primary's fault. If this was the
		// probe, let the next call probe again.
		if f.retryAt.Load() != 0 {
			f.retryAt.Store(time.Now().UnixNano())
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backoff = min(max(2*f.backoff, failoverMinBackoff), failoverMaxBackoff)
	f.downErr = fmt.Errorf("%w: deciding locally (last error: %w)", ErrUnavailable, errors.Unwrap(err))
	f.retryAt.Store(time.Now().Add(f.backoff).UnixNano())
}

// recovered forgets the primary's last error and backoff.
func (f *Failover) recovered() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backoff, f.downErr = 0, nil
	f.retryAt.Store(0)
}

// lastError returns the primary's last error, or nil.
func (f *Failover) lastError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downErr
}

// skipped reports a call decided locally without asking primary.
func (f *Failover) skipped() {
	err := f.lastError()
	if err == nil {
		err = ErrUnavailable
	}
	f.onError(err)
}

// Throttle implements [Store.Throttle].
func (f *Failover) Throttle(ctx context.Context, id Identity, interval time.Duration, now time.Time) (ThrottleResult, error) {
	return f.ThrottlePace(ctx, id, Pace{Interval: interval}, now)
}

// ThrottlePace implements [Store.ThrottlePace].
func (f *Failover) ThrottlePace(ctx context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error) {
	if p.Interval <= 0 {
		return ThrottleResult{Allowed: true}, nil
	}
	if f.use() {
		r, err := f.primary.ThrottlePace(ctx, id, p, now)
		if err == nil {
			f.ok()
			switch {
			case r.Allowed:
				_, _ = f.local.ThrottlePace(ctx, id, p, now)
			case f.warm != nil:
				f.warm.observeRetry(id, p, r.RetryAfter, now)
			}
			return r, nil
		}
		f.failed(ctx, "throttle", err)
	} else {
		f.skipped()
	}
	r, err := f.local.ThrottlePace(ctx, id, p, now)
	if err != nil {
		return ThrottleResult{Allowed: true}, nil // fail open
	}
	return r, nil
}

// PeekPace implements [PacePeeker]: the primary's answer while it is
// healthy, else the local store's (a peek never takes the probe that tells
// a recovering primary from a failed one).
func (f *Failover) PeekPace(ctx context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error) {
	if pp, ok := f.primary.(PacePeeker); ok && f.retryAt.Load() == 0 {
		if r, err := pp.PeekPace(ctx, id, p, now); err == nil {
			return r, nil
		}
	}
	if pp, ok := f.local.(PacePeeker); ok {
		return pp.PeekPace(ctx, id, p, now)
	}
	return ThrottleResult{Allowed: true}, nil
}

// Strike implements [Store.Strike]. An identity with a ban held locally
// (earned during an outage, not yet written) is banned: its strike is not
// counted. While the primary fails, a ban the local store starts is held
// locally (see [NewFailover]).
func (f *Failover) Strike(ctx context.Context, id Identity, p StrikePolicy, now time.Time, info StrikeInfo) (BanResult, error) {
	if !p.Enabled() {
		return BanResult{}, nil
	}
	if f.keep != nil {
		if r, ok := f.keep.heldBan(id, now, false); ok {
			return r, nil
		}
	}
	if f.use() {
		r, err := f.primary.Strike(ctx, id, p, now, info)
		if err == nil {
			f.ok()
			_, _ = f.local.Strike(ctx, id, p, now, info)
			if r.Banned && f.warm != nil {
				f.warm.observeBan(id, r.Until, r.Info, now)
			}
			return r, nil
		}
		f.failed(ctx, "strike", err)
	} else {
		f.skipped()
	}
	if f.keep != nil {
		r := f.keep.strikeEarned(id, p, now, info)
		if r.Banned && r.Strikes >= p.Strikes { // this strike started the ban
			f.startWriter()
		}
		return r, nil
	}
	r, err := f.local.Strike(ctx, id, p, now, info)
	if err != nil {
		return BanResult{}, nil // fail open
	}
	return r, nil
}

// Banned implements [Store.Banned]: the primary's answer while it answers,
// except for a ban held locally (see [NewFailover]); the local store's
// while it fails.
func (f *Failover) Banned(ctx context.Context, id Identity, now time.Time) (BanResult, error) {
	if f.use() {
		r, err := f.primary.Banned(ctx, id, now)
		if err == nil {
			f.ok()
			switch {
			case r.Banned:
				if f.warm != nil {
					f.warm.observeBan(id, r.Until, r.Info, now)
				}
			case f.keep != nil:
				// Not banned by the primary: a ban held here still is
				// (and is being written); a copy is dropped.
				if held, ok := f.keep.heldBan(id, now, true); ok {
					f.startWriter()
					return held, nil
				}
			}
			return r, nil
		}
		f.failed(ctx, "ban check", err)
	} else {
		f.skipped()
	}
	r, err := f.local.Banned(ctx, id, now)
	if err != nil {
		return BanResult{}, nil // fail open
	}
	return r, nil
}

// Close implements [Store.Close]: it stops the writer of bans earned
// locally (bans it has not written are lost with the local store) and
// closes primary and local.
func (f *Failover) Close() error {
	f.once.Do(func() {
		f.stop()
		f.writers.Wait()
		f.closeErr = errors.Join(f.primary.Close(), f.local.Close())
	})
	return f.closeErr
}

var (
	_ Store  = (*Memory)(nil)
	_ Store  = (*Redis)(nil)
	_ Store  = (*Failover)(nil)
	_ warmer = (*Memory)(nil)
)
