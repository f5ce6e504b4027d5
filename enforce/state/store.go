package state

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store holds throttle and strike state for identities. Implementations are
// safe for concurrent use.
//
// Every method takes the decision time explicitly, so callers (and tests)
// control the clock. The Redis store uses the Redis server's clock for
// throttling instead, so that instances with skewed clocks share one budget;
// see [Redis].
type Store interface {
	// Throttle spends one request of id's budget at emission interval
	// interval (the stricter of Crawl-delay and Request-rate, turned into
	// the time one request costs). An interval <= 0 always allows and keeps
	// no state. A refused request spends nothing.
	Throttle(ctx context.Context, id Identity, interval time.Duration, now time.Time) (ThrottleResult, error)

	// ThrottlePace is Throttle judged over a window, with an optional
	// HEAD/GET pairing: see [Pace]. Throttle(ctx, id, t, now) is
	// ThrottlePace(ctx, id, Pace{Interval: t}, now). Both share id's state.
	ThrottlePace(ctx context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error)

	// Strike records a refused request (a disallowed path) for id under
	// policy p and reports whether id is now banned and until when. With
	// p.Strikes <= 0 strikes are off: nothing is recorded and the zero
	// BanResult is returned. A strike on an identity that is already banned
	// is not counted and does not extend the ban; its BanResult carries
	// the ban's Info.
	//
	// info describes the strike. The store keeps the last
	// [MaxStrikeRecords] strikes of id's current window (line, version,
	// time) and the last strike's crawler, token and scope, each string cut
	// to [MaxNameLen] bytes; the strike that starts a ban records them as
	// the ban's [BanInfo].
	Strike(ctx context.Context, id Identity, p StrikePolicy, now time.Time, info StrikeInfo) (BanResult, error)

	// Banned reports whether id is currently banned, until when, and
	// why (BanResult.Info).
	Banned(ctx context.Context, id Identity, now time.Time) (BanResult, error)

	// Close releases the store's resources.
	Close() error
}

// PacePeeker is a store that can tell what [Store.ThrottlePace] would
// answer for a request now without spending anything: the admin API's
// check reads the live state this way. [Memory], [Redis] and [Failover]
// implement it.
type PacePeeker interface {
	// PeekPace returns what ThrottlePace(ctx, id, p, now) would return,
	// and changes no state: no slot is taken, no retry is marked, no
	// HEAD/GET pairing is consumed.
	PeekPace(ctx context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error)
}

// ThrottleResult is the outcome of [Store.Throttle].
type ThrottleResult struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// RetryAfter is, for a refused request, the exact wait until the same
	// request would be allowed. Callers sending a Retry-After header round
	// it up to whole seconds. It is zero when Allowed is true.
	RetryAfter time.Duration
	// Retry reports an immediate retry: the request is for the same URL
	// as the identity's last refused request (the same non-zero
	// [Fetch].Key) and arrived before that refusal's Retry-After ended.
	// Such a request is normally refused again; callers count it. A
	// request for another URL is never a retry, however soon it comes (a
	// crawler that moved on did not ignore the Retry-After of the page it
	// left), and neither is one with the zero Fetch: only the last refused
	// URL is remembered, which is the one an impatient client retries.
	Retry bool
	// Paired reports a GET allowed without taking a slot because it
	// follows a HEAD of the same URL (see [Fetch]).
	Paired bool
}

// BanResult is the outcome of [Store.Strike] and [Store.Banned].
type BanResult struct {
	// Banned reports whether the identity is banned at the decision time.
	Banned bool
	// Until is when the ban ends; zero when not banned.
	Until time.Time
	// Strikes is the number of strikes counted in the current window. The
	// strike that triggers a ban reports the full count; the count then
	// starts again from zero.
	Strikes int
	// Info says who earned the ban and why, so that a refusal can tell
	// the client; zero when not banned, and empty for a ban whose store
	// did not record it (a Redis ban written before bans carried their
	// info). Its Strikes slice may be shared with the store and with
	// other results: read it, do not modify it.
	Info BanInfo
}

// MaxStrikeRecords is how many of an identity's recent strikes a store
// keeps, and so how many a [BanInfo] lists: the last 4 of the window.
//
// Four is enough to show a pattern (the same rule broken again and again,
// or one rule per request on a walk through a disallowed tree, or strikes
// across two robots.txt versions) and small enough to keep: the memory
// store keeps them in one 128-byte record allocated on an identity's first
// strike, so even its full 100,000 identities all struck cost about 13 MB
// beyond their entries (see [Memory]). A ban after the default 10 strikes
// lists the last 4 of them; [BanResult].Strikes still says how many there
// were.
const MaxStrikeRecords = 4

// StrikeInfo describes one strike, for the ban it may start.
//
// Stores cut each string to [MaxNameLen] bytes (at a UTF-8 character
// boundary) and keep their own copy, so that a caller may pass a slice of a
// request header without the store holding on to the header.
type StrikeInfo struct {
	// Crawler is the crawler's name as identified ("ContentGrabber",
	// "GPTBot").
	Crawler string
	// Token is the robots.txt token it was judged by ("*" for the
	// wildcard group).
	Token string
	// Line is the robots.txt line of the rule it broke (0 when not known).
	Line int
	// Version is the robots.txt version id whose rule it broke.
	Version string
	// Scope is who issued it, for people: the handler's site and server
	// ("example.com, www.example.com on :443").
	Scope string
}

// StrikeRecord is one strike that led to a ban, as [BanInfo] lists it.
type StrikeRecord struct {
	// Line is the robots.txt line of the rule the request broke (0 when
	// not known).
	Line int
	// Version is the robots.txt version id whose rule it broke.
	Version string
	// At is when the strike was counted: the decision time passed to
	// [Store.Strike], to the millisecond in Redis.
	At time.Time
}

// BanInfo says who earned a ban and why: the crawler, the token and the
// scope of the strike that started it, and the strikes before it.
type BanInfo struct {
	// Crawler is the name of the crawler whose strike started the ban
	// ([StrikeInfo].Crawler).
	Crawler string
	// Token is the robots.txt token it was judged by.
	Token string
	// Scope is who issued the ban, for people ([StrikeInfo].Scope).
	Scope string
	// Strikes are the last strikes of the window that ended in the ban,
	// oldest first, at most [MaxStrikeRecords] of them; the last one
	// started the ban.
	Strikes []StrikeRecord
	// Since is when the ban started.
	Since time.Time
}

// IsZero reports whether b records nothing (a ban without its info).
func (b BanInfo) IsZero() bool {
	return b.Crawler == "" && b.Token == "" && b.Scope == "" && len(b.Strikes) == 0 && b.Since.IsZero()
}

// StrikePolicy says how many strikes within which window ban an identity, and
// for how long.
//
// Strikes <= 0 turns strikes off. With strikes on, a Window or Ban <= 0 is
// replaced by the default (10 minutes, 1 hour); [StrikePolicy.Validate]
// reports such a policy as invalid so configuration can reject it.
//
// The window is fixed, not sliding: it starts at the first strike and the
// count starts again when it ends (this is what an atomic Redis INCR + PEXPIRE
// gives, and the memory store does the same so both agree).
type StrikePolicy struct {
	// Strikes is the number of strikes that bans; 0 turns strikes off.
	Strikes int
	// Window is how long strikes are counted from the first one.
	Window time.Duration
	// Ban is how long a ban lasts.
	Ban time.Duration
}

// Defaults of [DefaultStrikePolicy].
const (
	DefaultStrikes      = 10
	DefaultStrikeWindow = 10 * time.Minute
	DefaultBanDuration  = time.Hour
)

// DefaultStrikePolicy returns the default policy: 10 strikes within 10
// minutes ban for 1 hour.
func DefaultStrikePolicy() StrikePolicy {
	return StrikePolicy{Strikes: DefaultStrikes, Window: DefaultStrikeWindow, Ban: DefaultBanDuration}
}

// Enabled reports whether the policy counts strikes at all.
func (p StrikePolicy) Enabled() bool { return p.Strikes > 0 }

// Validate reports an enabled policy with a window or ban duration that is
// not positive.
func (p StrikePolicy) Validate() error {
	if !p.Enabled() {
		return nil
	}
	if p.Window <= 0 {
		return fmt.Errorf("state: strike window must be positive, got %v", p.Window)
	}
	if p.Ban <= 0 {
		return fmt.Errorf("state: ban duration must be positive, got %v", p.Ban)
	}
	return nil
}

// normalized replaces non-positive durations of an enabled policy by the
// defaults.
func (p StrikePolicy) normalized() StrikePolicy {
	if p.Window <= 0 {
		p.Window = DefaultStrikeWindow
	}
	if p.Ban <= 0 {
		p.Ban = DefaultBanDuration
	}
	return p
}

// MaxTolerance caps the jitter tolerance of [Tolerance].
const MaxTolerance = time.Second

// Tolerance returns the jitter tolerance τ that the stores apply to emission
// interval t: min(t/2, 1s), and 0 for t <= 0.
//
// A crawler is allowed as long as no request comes more than τ earlier than
// its ideal schedule of one request every t, so each gap may be up to τ short
// provided the lateness does not accumulate. τ < t, so two requests at the
// same instant are never both allowed. The 1-second cap covers real jitter:
// network and TCP retransmission delay, a fresh TLS handshake for one request
// and a reused connection for the next, and crawlers that keep their
// last-fetch time (or Crawl-delay, or Retry-After) with one-second resolution.
// Larger values would let a client fetch in pairs when t is a few seconds.
func Tolerance(t time.Duration) time.Duration {
	if t <= 0 {
		return 0
	}
	return min(t/2, MaxTolerance)
}

// ErrUnavailable is wrapped by the errors that a [NewFailover] store passes
// to its onError callback while it decides locally without asking the
// primary store (after a recent failure).
var ErrUnavailable = errors.New("state: primary store unavailable")
