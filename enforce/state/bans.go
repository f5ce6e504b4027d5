package state

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ban is one ban in force, as [BanLister.Bans] lists it.
type Ban struct {
	// Key is the identity's key, [Identity.String]: what
	// [BanLister.Unban] takes.
	Key string
	// Identity is the banned identity.
	Identity Identity
	// Until is when the ban ends.
	Until time.Time
	// Info says who earned the ban and why; empty for a ban recorded
	// without it. Its Strikes slice may be shared with the store: read
	// it, do not modify it.
	Info BanInfo
}

// BanLister is a store that can list the bans in force and lift them, for
// operators (the admin API). [Memory], [Redis] and [Failover] implement it.
type BanLister interface {
	// Bans lists at most limit bans in force at now (limit <= 0 or above
	// [MaxBansListed] means MaxBansListed), ordered by key.
	Bans(ctx context.Context, now time.Time, limit int) ([]Ban, error)
	// Unban lifts the ban of the identity whose key is key and forgets its
	// strikes; it reports whether a ban was in force.
	Unban(ctx context.Context, key string, now time.Time) (bool, error)
	// UnbanWhere lifts, as Unban does, every ban in force at now for which
	// match returns true (by address or network, by crawler, all), and
	// returns the bans it lifted, ordered by key. match is called once per
	// ban, without the store's locks held, and may be called concurrently
	// with other calls of the store; it must not modify the Ban. The walk
	// is bounded as Bans's is: a store that could not look at every ban
	// returns those it lifted with an error saying so.
	UnbanWhere(ctx context.Context, match func(Ban) bool, now time.Time) (lifted []Ban, err error)
}

// Pinger is a store with a backend that can be checked ([Redis], and a
// [Failover] whose primary is one).
type Pinger interface {
	// Ping checks that the backend answers within ctx's deadline.
	Ping(ctx context.Context) error
}

// MaxBansListed bounds what [BanLister.Bans] returns.
const MaxBansListed = 1000

// maxScanCalls bounds the SCAN calls of one [Redis.Bans] per node, so that
// listing never walks a huge keyspace for long: 1000 calls of COUNT 500
// look at up to half a million keys.
const maxScanCalls = 1000

func banLimit(limit int) int {
	if limit <= 0 || limit > MaxBansListed {
		return MaxBansListed
	}
	return limit
}

// ParseIdentity is the inverse of [Identity.String]: it returns the
// identity whose key is s.
func ParseIdentity(s string) (Identity, error) {
	var id Identity
	switch {
	case strings.HasPrefix(s, "v:"):
		id.Verified = true
	case strings.HasPrefix(s, "u:"):
	default:
		return Identity{}, fmt.Errorf("state: identity key %q does not start with \"v:\" or \"u:\"", s)
	}
	rest := s[2:]
	// '|' and '@' inside the site and name are percent-encoded, so the
	// first '|' ends the site and the last '@' starts the network.
	if i := strings.IndexByte(rest, '|'); i >= 0 {
		site, err := url.PathUnescape(rest[:i]) // undoes the escapes of [Identity.String]
		if err != nil {
			return Identity{}, fmt.Errorf("state: identity key %q: site: %w", s, err)
		}
		id.Site, rest = site, rest[i+1:]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		p, err := netip.ParsePrefix(rest[i+1:])
		if err != nil {
			return Identity{}, fmt.Errorf("state: identity key %q: network: %w", s, err)
		}
		id.Prefix, rest = p, rest[:i]
	}
	name, err := url.PathUnescape(rest)
	if err != nil {
		return Identity{}, fmt.Errorf("state: identity key %q: name: %w", s, err)
	}
	id.Name = name
	return id, nil
}

func sortBans(bans []Ban) {
	sort.Slice(bans, func(i, j int) bool { return bans[i].Key < bans[j].Key })
}

// Bans implements [BanLister.Bans].
func (m *Memory) Bans(_ context.Context, now time.Time, limit int) ([]Ban, error) {
	found := m.bansInForce(now, banLimit(limit), func(*entry) bool { return true })
	if len(found) == 0 {
		return nil, nil
	}
	out := make([]Ban, len(found))
	for i := range found {
		out[i] = found[i].Ban
	}
	sortBans(out)
	return out, nil
}

// bansInForce returns up to limit (<= 0: no limit) of the bans in force at
// now whose entries keep accepts, each with its entry's end: the one walk
// over the shards behind Bans and earnedBans.
func (m *Memory) bansInForce(now time.Time, limit int, keep func(*entry) bool) []earnedBan {
	if !m.MayHaveBans() {
		return nil
	}
	t := now.UnixNano()
	var out []earnedBan
	for i := range m.shards {
		out = m.shards[i].appendBans(out, now, t, limit, keep)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	for i := range out {
		out[i].Key = out[i].Identity.String()
	}
	return out
}

// Unban implements [BanLister.Unban]: the identity's ban ends and its
// strike count starts again from zero.
func (m *Memory) Unban(_ context.Context, key string, now time.Time) (bool, error) {
	id, err := ParseIdentity(key)
	if err != nil {
		return false, err
	}
	id = id.clipped()
	t := now.UnixNano()
	h := m.hash(id)
	if !m.mayBeStruck(h) {
		return false, nil
	}
	s := m.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(id, h, t, false)
	if e == nil {
		return false, nil
	}
	banned := e.banUntil > t
	e.lift()
	return banned, nil
}

// UnbanWhere implements [BanLister.UnbanWhere]. It takes each shard's bans
// under its lock, calls match with the lock released, and lifts a matching
// ban only if it is still the one match saw.
func (m *Memory) UnbanWhere(_ context.Context, match func(Ban) bool, now time.Time) ([]Ban, error) {
	if !m.MayHaveBans() {
		return nil, nil
	}
	t := now.UnixNano()
	var lifted []Ban
	var found, hits []shardBan
	for i := range m.shards {
		s := &m.shards[i]
		found = s.shardBans(found[:0], now, t)
		hits = hits[:0]
		for _, f := range found {
			f.ban.Key = f.ban.Identity.String()
			if match(f.ban) {
				hits = append(hits, f)
			}
		}
		if len(hits) > 0 {
			lifted = s.liftBans(lifted, hits)
		}
	}
	sortBans(lifted)
	return lifted, nil
}

// appendBans appends to out the bans in force at now (t in nanoseconds)
// whose entries keep accepts, each with its entry's end, until out holds
// limit (<= 0: no limit).
func (s *memShard) appendBans(out []earnedBan, now time.Time, t int64, limit int, keep func(*entry) bool) []earnedBan {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, slot := range s.idx {
		if limit > 0 && len(out) >= limit {
			break
		}
		if e := &s.entries[slot]; e.banUntil > t && keep(e) {
			out = append(out, earnedBan{Ban{Identity: e.id, Until: now.Add(time.Duration(e.banUntil - t)), Info: e.banInfo()}, e.banUntil})
		}
	}
	return out
}

// shardBan is a ban in force as a shard holds it: its entry's hash and end
// tell UnbanWhere whether the entry still holds that very ban.
type shardBan struct {
	ban   Ban
	hash  uint64
	until int64
}

// shardBans appends to found the bans in force at now (t in nanoseconds).
func (s *memShard) shardBans(found []shardBan, now time.Time, t int64) []shardBan {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, slot := range s.idx {
		e := &s.entries[slot]
		if e.banUntil > t {
			found = append(found, shardBan{Ban{Identity: e.id, Until: now.Add(time.Duration(e.banUntil - t)), Info: e.banInfo()}, e.hash, e.banUntil})
		}
	}
	return found
}

// liftBans lifts each of bans whose entry still holds it, and appends those
// it lifted to lifted.
func (s *memShard) liftBans(lifted []Ban, bans []shardBan) []Ban {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range bans {
		if slot, ok := s.idx[f.hash]; ok {
			if e := &s.entries[slot]; e.id == f.ban.Identity && e.banUntil == f.until {
				e.lift()
				lifted = append(lifted, f.ban)
			}
		}
	}
	return lifted
}

// lift ends e's ban and forgets its strikes and their records.
func (e *entry) lift() {
	e.banUntil, e.strikes, e.winEnd = 0, 0, 0
	e.log = nil
	e.flags &^= entryEarned
}

// Ping implements [Pinger]: one PING to the server, or with a Cluster
// client one to each master, in parallel. A cluster with a shard down
// still answers a PING sent to any other node, so one PING would call it
// healthy while every call on the lost shard's keys fails. The error names
// every master that did not answer, each with its own cause.
func (r *Redis) Ping(ctx context.Context) error {
	cc, ok := r.client.(*redis.ClusterClient)
	if !ok {
		if err := r.client.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("state: redis ping: %w", r.dials.explain(err))
		}
		return nil
	}
	var mu sync.Mutex
	var errs []error
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		err := m.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		addr := m.Options().Addr
		err = fmt.Errorf("master %s: %w", addr, r.dials.explainAt(addr, err))
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
		return nil
	})
	if err != nil { // no topology to ping
		errs = append(errs, r.dials.explain(err))
	}
	if len(errs) == 0 {
		return nil
	}
	// One line, in a stable order, for the status page and logs.
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	args := make([]any, len(errs))
	for i, e := range errs {
		args[i] = e
	}
	return fmt.Errorf("state: redis ping: "+strings.Repeat("; %w", len(errs))[2:], args...)
}

// globEscape escapes the glob characters of SCAN MATCH in s.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Bans implements [BanLister.Bans] with SCAN over the store's ban keys
// ("{Prefix}:{Site}:{<identity>}:ban"), on every master of a Cluster, and
// one pipeline reading their TTLs and values. The scan is bounded: it stops
// at limit bans or after 1000 SCAN calls per node, whichever comes first.
// Calls use ctx's deadline, not the store's per-request timeout.
func (r *Redis) Bans(ctx context.Context, now time.Time, limit int) ([]Ban, error) {
	bans, _, err := r.listBans(ctx, now, limit)
	return bans, err
}

// listBans is Bans, and reports whether the list is complete: every ban
// key was looked at.
func (r *Redis) listBans(ctx context.Context, now time.Time, limit int) ([]Ban, bool, error) {
	limit = banLimit(limit)
	var keys []string
	complete, err := r.scanBans(ctx, func(ks []string) (bool, error) {
		for _, k := range ks {
			if len(keys) >= limit {
				return true, nil
			}
			keys = append(keys, k)
		}
		return false, nil
	})
	if err != nil {
		return nil, false, err
	}
	bans, err := r.readBans(ctx, keys, now)
	if err != nil {
		return nil, false, err
	}
	sortBans(bans)
	return bans, complete, nil
}

// scanBans calls page with the ban keys of each SCAN reply, on every master
// of a Cluster (one page at a time), until page asks to stop or fails, or
// after maxScanCalls calls per node. It reports whether it looked at every
// key.
func (r *Redis) scanBans(ctx context.Context, page func(keys []string) (stop bool, err error)) (complete bool, err error) {
	match := globEscape(r.prefix) + "{*}:ban"
	complete = true
	stopped := false
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for range maxScanCalls {
			if stopped {
				return nil
			}
			ks, next, err := c.Scan(ctx, cursor, match, 500).Result()
			if err != nil {
				return fmt.Errorf("state: redis scan for bans: %w", err)
			}
			if len(ks) > 0 {
				stop, err := page(ks)
				if err != nil {
					return err
				}
				if stop {
					stopped, complete = true, false
					return nil
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
		complete = false // the bound, not the end
		return nil
	}
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		var mu sync.Mutex // ForEachMaster calls back concurrently
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, node)
		})
	} else {
		err = scan(ctx, r.client)
	}
	return complete && err == nil, err
}

// readBans reads the bans of the ban keys keys in one pipeline, skipping
// keys that expired meanwhile or are not ours.
func (r *Redis) readBans(ctx context.Context, keys []string, now time.Time) ([]Ban, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := r.client.Pipeline()
	ttls := make([]*redis.DurationCmd, len(keys))
	vals := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		ttls[i] = pipe.PTTL(ctx, k)
		vals[i] = pipe.Get(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("state: redis ban TTLs: %w", err)
	}
	out := make([]Ban, 0, len(keys))
	for i, k := range keys {
		ttl := ttls[i].Val()
		if ttls[i].Err() != nil || ttl <= 0 || vals[i].Err() != nil {
			continue // expired meanwhile, or not a ban we set
		}
		key, ok := strings.CutPrefix(k, r.prefix+"{")
		if !ok {
			continue
		}
		key, ok = strings.CutSuffix(key, "}:ban")
		if !ok {
			continue
		}
		id, err := ParseIdentity(key)
		if err != nil {
			continue
		}
		out = append(out, Ban{Key: key, Identity: id, Until: now.Add(ttl), Info: parseBanValue(vals[i].Val())})
	}
	return out, nil
}

// UnbanWhere implements [BanLister.UnbanWhere] with the scan of
// [Redis.Bans] (bounded the same way, but not by MaxBansListed): each page
// of ban keys is read in one pipeline, matched, and the matching
// identities' ban, strike counter and strike log keys deleted in another.
// A ban is reported lifted if its key was still there to delete. If the
// scan reached its bound before the end, the error says so.
func (r *Redis) UnbanWhere(ctx context.Context, match func(Ban) bool, now time.Time) ([]Ban, error) {
	var lifted []Ban
	complete, err := r.scanBans(ctx, func(keys []string) (bool, error) {
		bans, err := r.readBans(ctx, keys, now)
		if err != nil {
			return true, err
		}
		var hits []Ban
		for _, b := range bans {
			if match(b) {
				hits = append(hits, b)
			}
		}
		if len(hits) == 0 {
			return false, nil
		}
		pipe := r.client.Pipeline()
		dels := make([]*redis.IntCmd, len(hits))
		for i, b := range hits {
			k := r.prefix + "{" + b.Key + "}"
			dels[i] = pipe.Del(ctx, k+":ban")
			pipe.Del(ctx, k+":strikes", k+":strikelog")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return true, fmt.Errorf("state: redis unban: %w", err)
		}
		for i, b := range hits {
			if dels[i].Val() > 0 {
				lifted = append(lifted, b)
			}
		}
		return false, nil
	})
	sortBans(lifted)
	if err == nil && !complete {
		err = fmt.Errorf("state: redis unban: the scan stopped after %d calls on a node, before the end of the keyspace: some bans may be left; run it again", maxScanCalls)
	}
	return lifted, err
}

// Unban implements [BanLister.Unban]: it deletes the identity's ban, strike
// counter and strike log keys (one hash slot, so one transaction even on a
// Cluster).
func (r *Redis) Unban(ctx context.Context, key string, _ time.Time) (bool, error) {
	if _, err := ParseIdentity(key); err != nil {
		return false, err
	}
	if strings.ContainsAny(key, "{}") {
		return false, fmt.Errorf("state: identity key %q contains braces", key)
	}
	k := r.prefix + "{" + key + "}"
	pipe := r.client.TxPipeline()
	ban := pipe.Del(ctx, k+":ban")
	pipe.Del(ctx, k+":strikes", k+":strikelog")
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("state: redis unban %s: %w", key, err)
	}
	return ban.Val() > 0, nil
}

var (
	_ BanLister = (*Memory)(nil)
	_ BanLister = (*Redis)(nil)
	_ BanLister = (*Failover)(nil)
	_ Pinger    = (*Redis)(nil)
	_ Pinger    = (*Failover)(nil)
)
