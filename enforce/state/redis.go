package state

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of [RedisConfig].
const (
	DefaultRedisPrefix  = "caddy-robots"
	DefaultRedisTimeout = 50 * time.Millisecond
)

// RedisConfig configures [NewRedis].
type RedisConfig struct {
	// Client is the Redis client (single node, Sentinel or Cluster); see
	// [RedisClientOptions], [ParseRedisURL] and [RedisOptions]. Build it
	// with ContextTimeoutEnabled set, or a stalled server holds calls for
	// the client's read timeout instead of Timeout. NewRedis installs a
	// hook on it that remembers why the last connection attempt failed, to
	// name that cause in the errors of calls that time out: give it a
	// Cluster client before its first command.
	Client redis.UniversalClient
	// Prefix starts every key (default "caddy-robots").
	Prefix string
	// Site separates the state of sites sharing one Redis, e.g. the host
	// name. Keys are "{Prefix}:{Site}:{identity}:rate", ":strikes",
	// ":strikelog" and ":ban", the identity in braces so a Cluster keeps
	// one identity's keys in one slot.
	Site string
	// Timeout bounds every call (default 50ms).
	Timeout time.Duration
	// CloseClient makes [Redis.Close] close Client. Leave it false when the
	// client is shared.
	CloseClient bool
}

// Redis is the [Store] shared by several instances through Redis. It is exact:
// each decision is one atomic script on the server, so any number of
// instances enforce one budget per identity.
//
// Throttling is one Lua script doing the memory store's GCRA (see [Pace]) in
// integer microseconds, the same arithmetic as go-redis/redis_rate's script
// (see rateLimit). It reads the Redis server's clock (TIME), not the now
// passed to Throttle, so instances with skewed clocks still share one
// schedule. Strikes and bans are
// an INCR + PEXPIRE counter, a list of the last [MaxStrikeRecords] strike
// records expiring with it, and a ban key with a TTL whose value is the
// ban's [BanInfo] as JSON, all in one Lua script; the ban's end time is now
// plus the ban key's remaining TTL. A ban key holding anything else (the
// "1" of earlier versions) is a ban without info. Every key expires on its
// own, so nothing needs cleaning up.
//
// A flood of throttle keys cannot evict a ban through this code: no call
// deletes or overwrites another identity's keys, and a throttle key lives
// no longer than its identity's next slot (a Crawl-delay or so) or its
// HEAD/GET pairing window. Redis itself removes a key before its TTL only
// when it reaches maxmemory with an eviction policy, which this code
// cannot choose per key: run it with maxmemory-policy noeviction (Redis's
// default: a full server refuses writes, the store fails open through
// [NewFailover], and every ban stays) or volatile-ttl (the keys nearest
// their end go first: throttle keys long before bans). With an allkeys-*
// policy, or volatile-lru, -lfu or -random, a flood of other clients'
// keys can evict a ban.
//
// Errors are returned, wrapped, never hidden; wrap the store with
// [NewFailover] to fail open.
type Redis struct {
	client  redis.UniversalClient
	prefix  string // "{Prefix}:{Site}:"
	timeout time.Duration
	close   bool
	dials   *dialWatch // why the client's last connection attempt failed
	// callerClock makes the throttle script decide at the now passed to
	// each call instead of the server's TIME. Only this package's tests
	// set it, to run a schedule on virtual time, decision for decision,
	// whatever the machine's load; its keys then live an hour, since a
	// TTL on the server's clock means nothing on a virtual one.
	callerClock bool
}

// NewRedis returns a Redis store. It does not contact the server; see
// [Redis.Start] for a check at start.
func NewRedis(cfg RedisConfig) (*Redis, error) {
	if cfg.Client == nil {
		return nil, errors.New("state: redis store needs a client")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultRedisPrefix
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultRedisTimeout
	}
	for _, s := range []string{cfg.Prefix, cfg.Site} {
		if strings.ContainsAny(s, "{}") {
			return nil, fmt.Errorf("state: redis prefix and site must not contain braces (they would break Cluster hash tags): %q", s)
		}
	}
	return &Redis{
		client:  cfg.Client,
		prefix:  cfg.Prefix + ":" + cfg.Site + ":",
		timeout: cfg.Timeout,
		close:   cfg.CloseClient,
		dials:   watchDials(cfg.Client),
	}, nil
}

// keys returns id's key stem "{prefix}:{site}:{<id>}".
func (r *Redis) key(id Identity) string {
	return r.prefix + "{" + id.String() + "}"
}

// paceScript is GCRA in integer microseconds on the Redis server's clock,
// with the HEAD/GET pairing and the retry mark of [Memory.ThrottlePace]: the
// same decisions, kept in one hash per identity (fields tat, retry and rkey
// for the end and the fetch key of the last refusal, head, pair) that
// expires when its TAT and pairing window have passed.
// KEYS: the hash. ARGV: emission µs, tolerance µs, fetch key ("" for none),
// "1" for HEAD, pairing window µs, "1" to peek (decide, write nothing), the
// decision time in µs ("" for the server's TIME: see Redis.callerClock).
// Returns {allowed, wait µs, retry,
// paired}. A key of another type (the string redis_rate kept before) is
// replaced.
var paceScript = redis.NewScript(`
local now = tonumber(ARGV[7])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local k = KEYS[1]
local peek = ARGV[6] == '1'
if redis.call('TYPE', k).ok ~= 'hash' then
  if peek then return {1, 0, 0, 0} end
  redis.call('DEL', k)
end
local s = redis.call('HMGET', k, 'tat', 'retry', 'head', 'pair', 'rkey')
local tat = tonumber(s[1]) or 0
local fetch = ARGV[3]
local retry = 0
if fetch ~= '' and s[5] == fetch and (tonumber(s[2]) or 0) > now then retry = 1 end
if fetch ~= '' and ARGV[4] ~= '1' and s[3] == fetch and (tonumber(s[4]) or 0) >= now then
  if peek then return {1, 0, retry, 1} end
  redis.call('HDEL', k, 'head', 'pair')
  return {1, 0, retry, 1}
end
local em = tonumber(ARGV[1])
local tau = tonumber(ARGV[2])
if tat < now then tat = now end
if tat - now > tau then
  if peek then return {0, tat - tau - now, retry, 0} end
  redis.call('HSET', k, 'retry', string.format('%.0f', tat - tau), 'rkey', fetch)
  return {0, tat - tau - now, retry, 0}
end
if peek then return {1, 0, retry, 0} end
tat = tat + em
local ttl = tat - now
redis.call('HSET', k, 'tat', string.format('%.0f', tat))
if fetch ~= '' and ARGV[4] == '1' then
  local w = tonumber(ARGV[5])
  redis.call('HSET', k, 'head', fetch, 'pair', string.format('%.0f', now + w))
  if w > ttl then ttl = w end
end
if ARGV[7] ~= '' then ttl = 3600000000 end
redis.call('PEXPIRE', k, math.ceil(ttl / 1000))
return {1, 0, retry, 0}
`)

// Throttle implements [Store.Throttle]; see [Redis] for the clock it uses.
func (r *Redis) Throttle(ctx context.Context, id Identity, interval time.Duration, now time.Time) (ThrottleResult, error) {
	return r.ThrottlePace(ctx, id, Pace{Interval: interval}, now)
}

// ThrottlePace implements [Store.ThrottlePace] with one atomic script that
// makes the decisions of [Memory.ThrottlePace] in microseconds on the Redis
// server's clock (see [Redis]).
func (r *Redis) ThrottlePace(ctx context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error) {
	return r.pace(ctx, id, p, now, false)
}

// PeekPace implements [PacePeeker] with the same script, told to write
// nothing.
func (r *Redis) PeekPace(ctx context.Context, id Identity, p Pace, now time.Time) (ThrottleResult, error) {
	return r.pace(ctx, id, p, now, true)
}

// pace runs paceScript; now is used only with callerClock.
func (r *Redis) pace(ctx context.Context, id Identity, p Pace, now time.Time, peek bool) (ThrottleResult, error) {
	if p.Interval <= 0 {
		return ThrottleResult{Allowed: true}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	em, tau := p.gcra()
	fetch, head := "", "0"
	if p.Fetch.Key != 0 {
		fetch = strconv.FormatUint(p.Fetch.Key, 10)
		if p.Fetch.Head {
			head = "1"
		}
	}
	at := ""
	if r.callerClock {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	res, err := paceScript.Run(ctx, r.client, []string{r.key(id) + ":rate"},
		max(em.Microseconds(), 1), tau.Microseconds(), fetch, head, FetchPairWindow.Microseconds(), peekArg(peek), at).Int64Slice()
	if err != nil {
		return ThrottleResult{}, fmt.Errorf("state: redis throttle %s: %w", id, r.dials.explain(err))
	}
	if len(res) != 4 {
		return ThrottleResult{}, fmt.Errorf("state: redis throttle %s: script returned %d values, want 4", id, len(res))
	}
	out := ThrottleResult{Allowed: res[0] == 1, Retry: res[2] == 1, Paired: res[3] == 1}
	if !out.Allowed {
		out.RetryAfter = max(time.Duration(res[1])*time.Microsecond, 0)
	}
	return out, nil
}

func peekArg(peek bool) string {
	if peek {
		return "1"
	}
	return "0"
}

// strikeScript counts a strike, records it, and bans at the threshold,
// atomically. KEYS: strike counter, ban key, strike log. ARGV: threshold,
// window ms, ban ms, this strike's record (JSON), the ban value's head
// (banHeadJSON), MaxStrikeRecords. The log is a list of the window's last
// records, expiring with the counter; the ban's value is the head, the
// records oldest first and "]}". Returns {count, ban TTL ms (0 if not
// banned), ban value (nil if not banned)}.
var strikeScript = redis.NewScript(`
local ban = redis.call('PTTL', KEYS[2])
if ban > 0 then
  return {tonumber(redis.call('GET', KEYS[1]) or '0'), ban, redis.call('GET', KEYS[2])}
end
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('DEL', KEYS[3])
end
local w = redis.call('PTTL', KEYS[1])
if n == 1 or w < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  w = tonumber(ARGV[2])
end
redis.call('RPUSH', KEYS[3], ARGV[4])
redis.call('LTRIM', KEYS[3], -tonumber(ARGV[6]), -1)
redis.call('PEXPIRE', KEYS[3], w)
if n >= tonumber(ARGV[1]) then
  local v = ARGV[5] .. table.concat(redis.call('LRANGE', KEYS[3], 0, -1), ',') .. ']}'
  redis.call('SET', KEYS[2], v, 'PX', ARGV[3])
  redis.call('DEL', KEYS[1], KEYS[3])
  return {n, tonumber(ARGV[3]), v}
end
return {n, 0, false}
`)

// bannedScript reads the strike count, the ban TTL and the ban's value.
var bannedScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[2])
local v = false
if ttl > 0 then
  v = redis.call('GET', KEYS[2])
end
return {tonumber(redis.call('GET', KEYS[1]) or '0'), ttl, v}
`)

// strikeKeys returns the strike counter, ban and strike log keys of the
// key stem k (one hash slot).
func strikeKeys(k string) []string {
	return []string{k + ":strikes", k + ":ban", k + ":strikelog"}
}

// Strike implements [Store.Strike]: one script counts the strike, keeps its
// record in the identity's strike log (a list of at most
// [MaxStrikeRecords] records, expiring with the counter) and, at the
// threshold, sets the ban key to the ban's [BanInfo] as JSON.
func (r *Redis) Strike(ctx context.Context, id Identity, p StrikePolicy, now time.Time, info StrikeInfo) (BanResult, error) {
	if !p.Enabled() {
		return BanResult{}, nil
	}
	p = p.normalized()
	info = info.clipped()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := strikeScript.Run(ctx, r.client, strikeKeys(r.key(id)),
		p.Strikes, max(p.Window.Milliseconds(), 1), max(p.Ban.Milliseconds(), 1),
		strikeRecordJSON(info, now), banHeadJSON(info, now), MaxStrikeRecords).Slice()
	if err != nil {
		return BanResult{}, fmt.Errorf("state: redis strike %s: %w", id, r.dials.explain(err))
	}
	return banResult(res, now)
}

// Banned implements [Store.Banned]: one script reads the strike count, the
// ban's TTL and its info.
func (r *Redis) Banned(ctx context.Context, id Identity, now time.Time) (BanResult, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	res, err := bannedScript.Run(ctx, r.client, strikeKeys(r.key(id))[:2]).Slice()
	if err != nil {
		return BanResult{}, fmt.Errorf("state: redis ban check %s: %w", id, r.dials.explain(err))
	}
	return banResult(res, now)
}

// banResult reads a {count, ban TTL ms, ban value} script reply.
func banResult(res []any, now time.Time) (BanResult, error) {
	if len(res) < 2 {
		return BanResult{}, fmt.Errorf("state: redis script returned %d values, want 3", len(res))
	}
	n, ok1 := res[0].(int64)
	ttl, ok2 := res[1].(int64)
	if !ok1 || !ok2 {
		return BanResult{}, fmt.Errorf("state: redis script returned %T, %T, want integers", res[0], res[1])
	}
	b := BanResult{Strikes: int(n)}
	if ttl > 0 {
		b.Banned = true
		b.Until = now.Add(time.Duration(ttl) * time.Millisecond)
		if len(res) > 2 {
			if v, ok := res[2].(string); ok {
				b.Info = parseBanValue(v)
			}
		}
	}
	return b, nil
}

// Start checks that the server answers PING within [RedisStartTimeout]
// (or ctx's earlier deadline), which also opens the client's first
// connections. Its error is the real cause (a refused connection, an
// unknown certificate authority), not a call timeout; see
// [RedisErrorHint] for what to do about it. The store works without
// Start, and after a failed one: each call tries the server again.
func (r *Redis) Start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, RedisStartTimeout)
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("state: redis: no answer to PING at start: %w", r.dials.explain(err))
	}
	return nil
}

// Close implements [Store.Close]: it closes the client if
// [RedisConfig].CloseClient was set.
func (r *Redis) Close() error {
	if !r.close {
		return nil
	}
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("state: closing redis client: %w", err)
	}
	return nil
}
