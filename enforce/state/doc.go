// Package state holds the throttle and strike state of caddy-robots: how
// often a crawler may fetch, and whether it has been refused often enough to
// be banned. It knows nothing of HTTP or Caddy; the caller turns a request
// into an [Identity] and robots.txt rules into an emission interval and a
// [StrikePolicy], and asks a [Store].
//
// # Throttling: GCRA with a jitter tolerance
//
// A crawler's Crawl-delay d and Request-rate n/p are turned by the caller
// into one emission interval T, the time one request costs (the stricter of
// d and p/n). The stores enforce it with the generic cell rate algorithm
// (GCRA): each identity has a theoretical arrival time TAT, the time its next
// request is due. A request at time now is allowed when TAT - now <= τ, and
// then TAT becomes max(TAT, now) + T; otherwise it is refused, spends
// nothing, and may come back after exactly TAT - τ - now (the RetryAfter of
// [ThrottleResult]). One int64 per identity (the TAT) is the whole state of
// this rule.
//
// τ is the jitter tolerance, [Tolerance](T) = min(T/2, 1s). It exists so that
// a compliant crawler is never refused: one whose requests keep to a schedule
// of one every T, each arriving up to τ early (network delay, a new TLS
// connection, one-second clock resolution in the crawler), always passes,
// over any number of requests. Because τ < T, a second request at the same
// instant as the first is always refused: the tolerance absorbs jitter, it
// grants no burst. Over any window W a client gets at most 1 + (W+τ)/T
// requests.
//
// # Judging the average: Pace
//
// [Store.ThrottlePace] judges Crawl-delay over a window instead of gap by
// gap (see [Pace]): with Burst B ([DefaultBurst] = 4) the emission interval
// is 7/8 of the delay and the tolerance (B-1) emission intervals plus τ, so
// crawlers that randomise each gap around the delay (Scrapy, wget
// --random-wait: 0.5–1.5×) are not throttled, while one that ignores the
// delay is throttled from its (B+1)-th request and one that keeps 0.8× the
// delay after about 40. The same call pairs a GET with the HEAD of the same
// URL just before it ([Fetch]), and marks a request that comes back for the
// URL it was just refused before that refusal's Retry-After ended
// (ThrottleResult.Retry).
//
// # Identity
//
// A verified crawler (Googlebot from Google's addresses) has one budget for
// all its addresses. Any other client is counted per network: its IPv4
// address, or its IPv6 /64, so rotating addresses inside one /64 gains
// nothing. See [NewIdentity].
//
// # Strikes and bans
//
// Each refused request (a disallowed path) is a strike. [StrikePolicy]
// Strikes strikes within Window (counted from the first one) ban the identity
// for Ban; by default 10 strikes in 10 minutes ban for 1 hour. Strikes = 0
// turns this off.
//
// A strike says what it was for ([StrikeInfo]: the crawler, the robots.txt
// token, line and version, and the scope that issued it). The stores keep
// the last [MaxStrikeRecords] strikes of a window, and a ban keeps them as
// its [BanInfo], so that operators and the refused client can tell who
// earned a ban and why.
//
// # Stores
//
// [Memory] is the default: bounded (100,000 identities by default, a hard
// cap, and up to 10,000 banned identities beside them), sharded, O(1) and
// allocation-free per decision. When full, it evicts the least recently used
// unverified client first and a verified crawler only when no unverified
// client is left, so a flood of random addresses cannot push out the
// crawlers the site cares about, nor grow memory. Bans are kept apart and
// never compete with those entries: a ban ends when it expires or is lifted,
// or when the bans themselves are full, and then the ban that ends first
// makes room. Entries whose
// TAT, strike window and ban are all in the past are dead and are freed as
// decisions pass by; no goroutine sweeps.
//
// [Redis] shares the state among instances serving one site, exactly: every
// decision is one atomic script on the server (GCRA in integer
// microseconds, with the same T and τ as [Memory] and the arithmetic of
// go-redis/redis_rate; strikes by INCR + PEXPIRE and a ban key with a TTL). Keys are "{prefix}:{site}:{identity}:..." and all expire on
// their own. Each call has its own short timeout (50ms by default). Only
// Redis's own eviction at maxmemory can remove a ban early: see [Redis] for
// the policies that keep bans.
//
// # Failing open
//
// The Redis store returns errors. [NewFailover] wraps it with a local
// [Memory]: when Redis fails, decisions come from the local store (fail open:
// an unreachable Redis never refuses a request by itself), each failure is
// reported to a callback for counting and rate-limited logging, and Redis is
// retried after a short backoff. While Redis answers, the local store is kept
// warm with this instance's view, so enforcement stays sensible during an
// outage; once Redis answers again, enforcement resumes from it. Bans
// earned from strikes counted during the outage are not lost: they stay in
// force and are written to Redis as soon as it answers. Redis is the
// authority on every other ban, so a ban lifted on one instance is lifted
// on all (see [NewFailover]).
package state
