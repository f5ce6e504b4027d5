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

// BanLister is a store that can list the bans in force and lift one, for
// operators (the admin API). [Memory], [Redis] and [Failover] implement it.
type BanLister interface {
	// Bans lists at most limit bans in force at now (limit <= 0 or above
	// [MaxBansListed] means MaxBansListed), ordered by key.
	Bans(ctx context.Context, now time.Time, limit int) ([]Ban, error)
	// Unban lifts the ban of the identity whose key is key and forgets its
	// strikes; it reports whether a ban was in force.
	Unban(ctx context.Context, key string, now time.Time) (bool, error)
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
	limit = banLimit(limit)
	if !m.MayHaveBans() {
		return nil, nil
	}
	t := now.UnixNano()
	var out []Ban
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for _, slot := range s.idx {
			e := &s.entries[slot]
			if e.banUntil > t && len(out) < limit {
				out = append(out, Ban{Identity: e.id, Until: now.Add(time.Duration(e.banUntil - t)), Info: e.banInfo()})
			}
		}
		s.mu.Unlock()
		if len(out) >= limit {
			break
		}
	}
	for i := range out {
		out[i].Key = out[i].Identity.String()
	}
	sortBans(out)
	return out, nil
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

// lift ends e's ban and forgets its strikes and their records.
func (e *entry) lift() {
	e.banUntil, e.strikes, e.winEnd = 0, 0, 0
	e.log = nil
	e.flags &^= entryEarned
}

// Ping implements [Pinger]: one PING to the server.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("state: redis ping: %w", err)
	}
	return nil
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
// ("{Prefix}:{Site}:{<identity>}:ban"), on every master of a Cluster. The
// scan is bounded: it stops at limit bans or after 1000 SCAN calls per
// node, whichever comes first. Calls use ctx's deadline, not the store's
// per-request timeout.
func (r *Redis) Bans(ctx context.Context, now time.Time, limit int) ([]Ban, error) {
	limit = banLimit(limit)
	match := globEscape(r.prefix) + "{*}:ban"
	var keys []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for range maxScanCalls {
			ks, next, err := c.Scan(ctx, cursor, match, 500).Result()
			if err != nil {
				return fmt.Errorf("state: redis scan for bans: %w", err)
			}
			for _, k := range ks {
				if len(keys) < limit {
					keys = append(keys, k)
				}
			}
			if next == 0 || len(keys) >= limit {
				return nil
			}
			cursor = next
		}
		return nil
	}
	var err error
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
	if err != nil {
		return nil, err
	}
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
	sortBans(out)
	return out, nil
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

// Bans implements [BanLister.Bans]: the bans of the primary and of the
// local store, merged (the later end wins). When the primary fails, the
// local store's bans are returned together with the error.
func (f *Failover) Bans(ctx context.Context, now time.Time, limit int) ([]Ban, error) {
	limit = banLimit(limit)
	merged := map[string]Ban{}
	var errs []error
	for _, s := range []Store{f.primary, f.local} {
		l, ok := s.(BanLister)
		if !ok {
			continue
		}
		bans, err := l.Bans(ctx, now, limit)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range bans {
			if old, ok := merged[b.Key]; !ok || b.Until.After(old.Until) {
				merged[b.Key] = b
			}
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
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("state: listing bans: %w", err)
	}
	return out, nil
}

// Unban implements [BanLister.Unban] on the primary and the local store
// alike; it reports whether either had the ban. The local store is
// cleared even when the primary fails.
func (f *Failover) Unban(ctx context.Context, key string, now time.Time) (bool, error) {
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

// Ping implements [Pinger]: it pings the primary, if it can be pinged.
func (f *Failover) Ping(ctx context.Context) error {
	if p, ok := f.primary.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// DecidingLocally reports whether the primary failed recently and calls
// are being decided by the local store until it answers again.
func (f *Failover) DecidingLocally() bool { return f.retryAt.Load() != 0 }

var (
	_ BanLister = (*Memory)(nil)
	_ BanLister = (*Redis)(nil)
	_ BanLister = (*Failover)(nil)
	_ Pinger    = (*Redis)(nil)
	_ Pinger    = (*Failover)(nil)
)
