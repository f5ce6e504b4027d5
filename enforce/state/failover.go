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
	warm    warmer // local, if it can learn; else nil
	onError func(error)

	// retryAt is when (Unix nanoseconds, wall clock) the primary may be tried
	// again after a failure; 0 while it is healthy.
	retryAt atomic.Int64
	mu      sync.Mutex // guards backoff and downErr
	backoff time.Duration
	downErr error
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
// Close closes both stores.
func NewFailover(primary, local Store, onError func(error)) *Failover {
	if onError == nil {
		onError = func(error) {}
	}
	f := &Failover{primary: primary, local: local, onError: onError}
	f.warm, _ = local.(warmer)
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
	f.mu.Lock()
	f.backoff, f.downErr = 0, nil
	f.retryAt.Store(0)
	f.mu.Unlock()
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
	f.backoff = min(max(2*f.backoff, failoverMinBackoff), failoverMaxBackoff)
	f.downErr = fmt.Errorf("%w: deciding locally (last error: %w)", ErrUnavailable, errors.Unwrap(err))
	f.retryAt.Store(time.Now().Add(f.backoff).UnixNano())
	f.mu.Unlock()
}

// skipped reports a call decided locally without asking primary.
func (f *Failover) skipped() {
	f.mu.Lock()
	err := f.downErr
	f.mu.Unlock()
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

// Strike implements [Store.Strike].
func (f *Failover) Strike(ctx context.Context, id Identity, p StrikePolicy, now time.Time, info StrikeInfo) (BanResult, error) {
	if !p.Enabled() {
		return BanResult{}, nil
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
	r, err := f.local.Strike(ctx, id, p, now, info)
	if err != nil {
		return BanResult{}, nil // fail open
	}
	return r, nil
}

// Banned implements [Store.Banned].
func (f *Failover) Banned(ctx context.Context, id Identity, now time.Time) (BanResult, error) {
	if f.use() {
		r, err := f.primary.Banned(ctx, id, now)
		if err == nil {
			f.ok()
			if r.Banned && f.warm != nil {
				f.warm.observeBan(id, r.Until, r.Info, now)
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

// Close implements [Store.Close]: it closes primary and local.
func (f *Failover) Close() error {
	return errors.Join(f.primary.Close(), f.local.Close())
}

var (
	_ Store  = (*Memory)(nil)
	_ Store  = (*Redis)(nil)
	_ Store  = (*Failover)(nil)
	_ warmer = (*Memory)(nil)
)
